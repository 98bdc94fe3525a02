package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/amqpsim/amqpsim/sim"
	"github.com/amqpsim/amqpsim/wire"
)

// target is a broker to measure: amqpsim served in this process, or a
// RabbitMQ broker.
type target struct {
	name string
	open func() (*session, error)
	// metadataMax, when set, is the most metadata items (kind.metadata)
	// to make on the target.
	metadataMax int
}

// takes reports whether t measures n items of kind k.
func (t target) takes(k kind, n int) bool {
	return !k.metadata || t.metadataMax == 0 || n <= t.metadataMax
}

// session is one measurement's connections to a target: setup makes the
// topology (everything exclusive to it or auto-deleted with it), probe
// publishes with confirms.
type session struct {
	setup, probe *amqp.Connection
	sch, pch     *amqp.Channel
	prefix       string
	memory       func() (uint64, error)
	stop         func()

	// What the kind's setup made, for its measure.
	exchange string
	queue    string
	key      func(i int) string
}

// timeout bounds every wait on a broker's answer.
const timeout = 2 * time.Minute

func (s *session) close() {
	if s.setup != nil {
		s.setup.Close()
	}
	if s.probe != nil {
		s.probe.Close()
	}
	if s.stop != nil {
		s.stop()
	}
}

// dial opens a session's connections to url.
func dial(url string, memory func() (uint64, error), stop func()) (*session, error) {
	s := &session{memory: memory, stop: stop, prefix: fmt.Sprintf("amqpsim-scale-%d-%d-", os.Getpid(), time.Now().UnixNano())}
	var err error
	cfg := amqp.Config{Heartbeat: 0, Locale: "en_US"}
	if s.setup, err = amqp.DialConfig(url, cfg); err == nil {
		s.probe, err = amqp.DialConfig(url, cfg)
	}
	if err == nil {
		s.sch, err = s.setup.Channel()
	}
	if err == nil {
		s.pch, err = s.probe.Channel()
	}
	if err == nil {
		err = s.pch.Confirm(false)
	}
	if err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// simTarget serves a fresh amqpsim broker per session on loopback, as
// amqpsim serve does, the trace off.
func simTarget() target {
	return target{name: "amqpsim", open: func() (*session, error) {
		b := sim.New(sim.Config{NoTrace: true})
		ws := wire.NewServer(b)
		ws.Logf = func(format string, args ...any) { fmt.Fprintf(os.Stderr, "amqpsim: "+format+"\n", args...) }
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		go func() { _ = ws.Serve(ln) }()
		url := "amqp://guest:guest@" + ln.Addr().String() + "/"
		return dial(url, goHeap, func() { ws.Close() })
	}}
}

// goHeap is the Go heap's live bytes, collected.
func goHeap() (uint64, error) {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc, nil
}

// rabbitTarget is the RabbitMQ broker at url; ctl, if set, is the command
// line of its rabbitmqctl, which reads its memory.
func rabbitTarget(url, ctl string, metadataMax int) (target, error) {
	conn, err := amqp.Dial(url)
	if err != nil {
		return target{}, err
	}
	version, _ := conn.Properties["version"].(string)
	conn.Close()
	memory := func() (uint64, error) { return 0, nil }
	if ctl != "" {
		memory = func() (uint64, error) { return erlangMemory(ctl) }
	}
	return target{name: "RabbitMQ " + version, metadataMax: metadataMax, open: func() (*session, error) {
		return dial(url, memory, nil)
	}}, nil
}

// erlangMemory runs rabbitmqctl eval: the node's erlang:memory(total)
// once every process has collected its garbage.
func erlangMemory(ctl string) (uint64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	words := strings.Fields(ctl)
	words = append(words, "-q", "eval", "[erlang:garbage_collect(P) || P <- processes()], erlang:memory(total).")
	out, err := exec.CommandContext(ctx, words[0], words[1:]...).Output()
	if err != nil {
		return 0, fmt.Errorf("%s: %w", ctl, err)
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(out)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: erlang:memory(total) is %q", ctl, out)
	}
	return n, nil
}

// machine describes where the run happened.
func machine() string {
	load := "?"
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 0 {
			load = f[0]
		}
	}
	return fmt.Sprintf("%s/%s, %d CPUs, Go %s, load average %s at the start", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), strings.TrimPrefix(runtime.Version(), "go"), load)
}

// wait waits for a deferred confirm, at most timeout.
func wait(dc *amqp.DeferredConfirmation) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	ok, err := dc.WaitContext(ctx)
	switch {
	case err != nil:
		return err
	case !ok:
		return errors.New("a publish was nacked")
	}
	return nil
}
