// Command serve-flood floods an `amqpsim serve` it starts on loopback with
// messages that nobody consumes, and reports the server's resident memory
// (peak and per ready message) and whether connection.blocked arrived.
//
//	go run ./scripts/serve-flood -n 1000000 -size 1024 -watermark 100GB
//	go run ./scripts/serve-flood -n 1000000 -watermark 256MiB
//
// It builds amqpsim (go build ./cmd/amqpsim) unless -amqpsim names a
// binary, serves on 127.0.0.1 only, and stops at -n messages, at the first
// connection.blocked (unless -through), or after -timeout, whichever comes
// first; then it kills the server. Linux only: it reads the server's
// /proc/PID/status (VmRSS, VmHWM).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

func main() {
	n := flag.Int("n", 100000, "messages to publish (at most 10,000,000)")
	size := flag.Int("size", 1024, "body size in bytes (at most 1 MiB)")
	watermark := flag.String("watermark", "0.4", "serve's --memory-high-watermark")
	timeout := flag.Duration("timeout", 5*time.Minute, "give up after this long")
	through := flag.Bool("through", false, "keep publishing after connection.blocked (the publish then waits)")
	bin := flag.String("amqpsim", "", "amqpsim binary (default: go build ./cmd/amqpsim)")
	flag.Parse()
	if *n <= 0 || *n > 10_000_000 || *size < 0 || *size > 1<<20 {
		fmt.Fprintln(os.Stderr, "serve-flood: -n must be 1..10000000 and -size 0..1048576")
		os.Exit(2)
	}
	if err := run(*n, *size, *watermark, *timeout, *through, *bin); err != nil {
		fmt.Fprintln(os.Stderr, "serve-flood:", err)
		os.Exit(1)
	}
}

func run(n, size int, watermark string, timeout time.Duration, through bool, bin string) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if bin == "" {
		dir, err := os.MkdirTemp("", "serve-flood")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		bin = filepath.Join(dir, "amqpsim")
		build := exec.Command("go", "build", "-o", bin, "./cmd/amqpsim")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("go build ./cmd/amqpsim (run from the repository's root): %w", err)
		}
	}
	srv := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--http", "127.0.0.1:0", "--clock", "manual",
		"--memory-high-watermark", watermark)
	out, err := srv.StdoutPipe()
	if err != nil {
		return err
	}
	srv.Stderr = os.Stderr
	if err := srv.Start(); err != nil {
		return err
	}
	defer func() {
		_ = srv.Process.Kill()
		_ = srv.Wait()
	}()
	amqpURL, apiURL, err := addresses(out)
	if err != nil {
		return err
	}
	pid := srv.Process.Pid
	base, _, err := rss(pid)
	if err != nil {
		return err
	}

	conn, err := amqp.Dial(amqpURL)
	if err != nil {
		return err
	}
	defer conn.Close()
	blocks := conn.NotifyBlocked(make(chan amqp.Blocking, 16))
	ch, err := conn.Channel()
	if err != nil {
		return err
	}
	if _, err := ch.QueueDeclare("flood", false, false, false, false, nil); err != nil {
		return err
	}
	body := make([]byte, size)
	var published atomic.Int64
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		for i := 0; i < n; i++ {
			if err := ch.PublishWithContext(ctx, "", "flood", false, false, amqp.Publishing{Body: body}); err != nil {
				done <- err
				return
			}
			published.Add(1)
		}
		done <- nil
	}()
	var blockedAt int64 = -1
	var reason string
	var peak uint64
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
wait:
	for {
		select {
		case err := <-done:
			if err != nil && !errors.Is(err, context.DeadlineExceeded) {
				return err
			}
			break wait
		case b := <-blocks:
			if b.Active && blockedAt < 0 {
				blockedAt, reason = published.Load(), b.Reason
				fmt.Printf("connection.blocked (%q) after %d messages, %v\n", b.Reason, blockedAt, time.Since(start).Round(time.Millisecond))
				if !through {
					break wait
				}
			}
		case <-tick.C:
			if _, hwm, err := rss(pid); err == nil {
				peak = max(peak, hwm)
			}
		case <-ctx.Done():
			fmt.Println("timeout")
			break wait
		}
	}
	elapsed := time.Since(start)
	sent := published.Load()
	// The server has read what it acknowledged; wait for it to count all
	// it was sent, unless it is blocked.
	ready := readyCount(ctx, apiURL, sent, blockedAt >= 0)
	now, hwm, err := rss(pid)
	if err != nil {
		return err
	}
	peak = max(peak, hwm)
	fmt.Printf("published %d messages of %d bytes in %v (%.0f/s)\n", sent, size, elapsed.Round(time.Millisecond), float64(sent)/elapsed.Seconds())
	fmt.Printf("ready in the queue: %d\n", ready)
	fmt.Printf("connection.blocked: %s\n", map[bool]string{true: fmt.Sprintf("yes, after %d messages (%q)", blockedAt, reason), false: "no"}[blockedAt >= 0])
	fmt.Printf("server RSS: %s before, %s now, %s peak\n", mib(base), mib(now), mib(peak))
	if ready > 0 {
		fmt.Printf("RSS per ready message: %.0f bytes (now less before, over %d)\n", float64(now-base)/float64(ready), ready)
	}
	return nil
}

// addresses reads serve's start-up lines for its AMQP URL (with the
// password guest) and its HTTP API's base URL.
func addresses(r io.Reader) (amqpURL, apiURL string, err error) {
	sc := bufio.NewScanner(r)
	for (amqpURL == "" || apiURL == "") && sc.Scan() {
		l := sc.Text()
		fmt.Println(l)
		if _, rest, ok := strings.Cut(l, "serving AMQP 0-9-1 on "); ok {
			amqpURL, _, _ = strings.Cut(rest, " ")
			amqpURL = strings.Replace(amqpURL, "amqp://guest@", "amqp://guest:guest@", 1)
		}
		if _, rest, ok := strings.Cut(l, "HTTP API on "); ok {
			apiURL, _, _ = strings.Cut(rest, "/api/ ")
		}
	}
	if amqpURL == "" || apiURL == "" {
		return "", "", errors.New("serve did not print its addresses")
	}
	go func() { // the watermark's and the monitor's lines
		for sc.Scan() {
			fmt.Println(sc.Text())
		}
	}()
	return amqpURL, apiURL, nil
}

// readyCount asks the management API for the queue's ready messages until
// they reach want (or, blocked, stop changing), or ctx ends.
func readyCount(ctx context.Context, api string, want int64, blocked bool) int64 {
	var last int64 = -1
	for {
		req, _ := http.NewRequestWithContext(ctx, "GET", api+"/api/queues/%2F/flood", nil)
		req.SetBasicAuth("guest", "guest")
		var q struct {
			Ready int64 `json:"messages_ready"`
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return last
		}
		_ = json.NewDecoder(resp.Body).Decode(&q)
		resp.Body.Close()
		if q.Ready >= want || (blocked && q.Ready == last) {
			return q.Ready
		}
		last = q.Ready
		select {
		case <-ctx.Done():
			return last
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// rss reads a process's resident set and its peak (VmRSS, VmHWM).
func rss(pid int) (now, peak uint64, err error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for _, l := range strings.Split(string(data), "\n") {
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			continue
		}
		kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		switch k {
		case "VmRSS":
			now = kb << 10
		case "VmHWM":
			peak = kb << 10
		}
	}
	return now, peak, nil
}

func mib(n uint64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
