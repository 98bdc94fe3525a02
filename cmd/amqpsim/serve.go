package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/amqpsim/amqpsim/sim"
	"github.com/amqpsim/amqpsim/wire"
)

// runServe is "amqpsim serve": the simulator over TCP until SIGINT or
// SIGTERM.
func runServe(args []string, stdout, stderr io.Writer) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return serve(ctx, args, stdout, stderr)
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

// serveOptions are serve's flags.
type serveOptions struct {
	addr, clock, user, pass, http string
	definitions                   string
	vhosts                        stringList
	consumerTimeout               time.Duration
	seed                          uint64
}

func parseServe(args []string, stderr io.Writer) (serveOptions, error) {
	var o serveOptions
	fs := flag.NewFlagSet("amqpsim serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.addr, "addr", "127.0.0.1:5672", "TCP address to serve AMQP 0-9-1 on (port 0 picks a free one)")
	fs.StringVar(&o.clock, "clock", "wall", "broker clock: wall (follows real time) or manual (moves only by POST /api/sim/advance)")
	fs.StringVar(&o.user, "user", "guest", "user name clients log in with")
	fs.StringVar(&o.pass, "pass", "guest", "password of --user")
	fs.StringVar(&o.definitions, "definitions", "", "RabbitMQ definitions file (JSON, as rabbitmqctl export_definitions writes it) to import at start")
	fs.Var(&o.vhosts, "vhost", "extra virtual host besides \"/\" (repeatable)")
	fs.DurationVar(&o.consumerTimeout, "consumer-timeout", 0, "RabbitMQ's consumer_timeout (default 30m; negative disables)")
	fs.StringVar(&o.http, "http", "", "address for the HTTP API (GET /api/queues, POST /api/sim/advance?by=30m); empty: none")
	fs.Uint64Var(&o.seed, "seed", 0, "seed of the broker's random choices (generated names)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: amqpsim serve [flags]\n\nServes the simulated RabbitMQ 3.10 broker over TCP until SIGINT or SIGTERM.\n\nflags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	if o.clock != "wall" && o.clock != "manual" {
		return o, usageError{fmt.Sprintf("--clock must be wall or manual, not %q", o.clock)}
	}
	return o, nil
}

// serve runs the server until ctx is done.
func serve(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseServe(args, stderr)
	if err != nil {
		return err
	}
	cfg := sim.Config{Seed: o.seed, ConsumerTimeout: o.consumerTimeout, NoTrace: true, DefaultUser: o.user, DefaultPass: o.pass}
	if o.definitions != "" {
		data, err := os.ReadFile(o.definitions)
		if err != nil {
			return err
		}
		if cfg.Definitions, err = sim.ParseDefinitions(data); err != nil {
			return fmt.Errorf("%s: %w", o.definitions, err)
		}
	}
	b, err := sim.Open(cfg)
	if err != nil {
		return fmt.Errorf("%s: %w", o.definitions, err)
	}
	for _, v := range o.vhosts {
		b.AddVhost(v)
		if err := b.SetPermissions(v, o.user, sim.FullPermissions); err != nil {
			return err
		}
	}
	ws := wire.NewServer(b)
	ws.Logf = func(format string, args ...any) { fmt.Fprintf(stderr, "amqpsim: "+format+"\n", args...) }

	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := ws.Serve(ln); err != nil && !errors.Is(err, wire.ErrServerClosed) {
			fmt.Fprintf(stderr, "amqpsim: %v\n", err)
		}
	}()
	defer ws.Close()
	// The start-up line names the user, never the password: it ends up
	// in CI logs.
	u := url.URL{Scheme: "amqp", User: url.User(o.user), Host: ln.Addr().String(), Path: "/"}
	fmt.Fprintf(stdout, "amqpsim: serving AMQP 0-9-1 on %s (clock %s)\n", u.String(), o.clock)

	if o.http != "" {
		hl, err := net.Listen("tcp", o.http)
		if err != nil {
			return err
		}
		hs := &http.Server{Handler: apiHandler(b, o.clock == "manual"), ReadHeaderTimeout: 10 * time.Second}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = hs.Serve(hl)
		}()
		defer hs.Close()
		fmt.Fprintf(stdout, "amqpsim: HTTP API on http://%s/api/queues\n", hl.Addr())
	}

	if o.clock == "wall" {
		wg.Add(1)
		go func() {
			defer wg.Done()
			followWallClock(ctx, b)
		}()
	}
	<-ctx.Done()
	fmt.Fprintln(stdout, "amqpsim: shutting down")
	return nil
}

// followWallClock advances the broker's virtual clock with real time, in
// steps of 100 ms, until ctx is done.
func followWallClock(ctx context.Context, b *sim.Broker) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			_ = b.Advance(now.Sub(last)) // fails only after sim.MaxClock
			last = now
		}
	}
}

// queueJSON is a queue as RabbitMQ's management API shows it (the fields
// amqpsim knows).
type queueJSON struct {
	Name                   string `json:"name"`
	Vhost                  string `json:"vhost"`
	Messages               int    `json:"messages"`
	MessagesReady          int    `json:"messages_ready"`
	MessagesUnacknowledged int    `json:"messages_unacknowledged"`
	MessageBytesReady      int64  `json:"message_bytes_ready"`
	Consumers              int    `json:"consumers"`
}

func toJSON(s sim.QueueStats) queueJSON {
	return queueJSON{Name: s.Name, Vhost: s.Vhost, Messages: s.Ready + s.Unacked, MessagesReady: s.Ready,
		MessagesUnacknowledged: s.Unacked, MessageBytesReady: s.Bytes, Consumers: s.Consumers}
}

// apiHandler serves a small part of RabbitMQ's management API, and the
// simulator's clock control.
func apiHandler(b *sim.Broker, manual bool) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/queues", func(w http.ResponseWriter, r *http.Request) {
		out := []queueJSON{}
		for _, s := range b.Queues() {
			out = append(out, toJSON(s))
		}
		writeJSON(w, http.StatusOK, out)
	})
	// ServeMux patterns cannot match the escaped "/" of vhost "/" (%2F), so
	// the segments are split from the escaped path by hand.
	mux.HandleFunc("GET /api/queues/", func(w http.ResponseWriter, r *http.Request) {
		var segs []string
		for _, s := range strings.Split(strings.TrimPrefix(r.URL.EscapedPath(), "/api/queues/"), "/") {
			u, err := url.PathUnescape(s)
			if err != nil {
				segs = nil
				break
			}
			segs = append(segs, u)
		}
		switch len(segs) {
		case 1:
			out := []queueJSON{}
			for _, s := range b.Queues() {
				if s.Vhost == segs[0] {
					out = append(out, toJSON(s))
				}
			}
			writeJSON(w, http.StatusOK, out)
		case 2:
			if s, err := b.QueueStats(segs[0], segs[1]); err == nil {
				writeJSON(w, http.StatusOK, toJSON(s))
				return
			}
			fallthrough
		default:
			writeJSON(w, http.StatusNotFound, map[string]string{"error": "Object Not Found", "reason": "Not Found"})
		}
	})
	mux.HandleFunc("GET /api/sim/now", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"now": b.Now().Format(time.RFC3339Nano)})
	})
	mux.HandleFunc("POST /api/sim/advance", func(w http.ResponseWriter, r *http.Request) {
		if !manual {
			writeJSON(w, http.StatusConflict, map[string]string{"error": "the clock follows the wall clock; start with --clock manual to advance it"})
			return
		}
		d, err := time.ParseDuration(r.URL.Query().Get("by"))
		if err != nil || d < 0 {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "by must be a non-negative duration such as 30m"})
			return
		}
		if err := b.Advance(d); err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"now": b.Now().Format(time.RFC3339Nano)})
	})
	// Faults, for clients in any language (amqptest has the same for Go).
	mux.HandleFunc("POST /api/sim/restart", func(w http.ResponseWriter, r *http.Request) {
		b.Restart()
		writeJSON(w, http.StatusOK, map[string]string{"restarted": "true"})
	})
	mux.HandleFunc("POST /api/sim/close-connections", func(w http.ResponseWriter, r *http.Request) {
		reason := r.URL.Query().Get("reason")
		if reason == "" {
			// The management API's default (rabbit_mgmt_wm_connection's
			// force_close_connection, without an X-Reason header).
			reason = "Closed via management plugin"
		}
		n := 0
		for _, c := range b.Connections() {
			if c.CloseWithError(sim.Forced(reason)) {
				n++
			}
		}
		writeJSON(w, http.StatusOK, map[string]int{"closed": n})
	})
	mux.HandleFunc("POST /api/sim/alarm", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		alarms := map[string]sim.Alarm{"memory": sim.AlarmMemory, "disk": sim.AlarmDisk}
		a, okA := alarms[q.Get("resource")]
		on, err := strconv.ParseBool(q.Get("on"))
		if !okA || err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "want resource=memory or disk and on=true or false"})
			return
		}
		b.SetAlarm(a, on)
		writeJSON(w, http.StatusOK, map[string]bool{"memory": b.Alarms()&sim.AlarmMemory != 0, "disk": b.Alarms()&sim.AlarmDisk != 0})
	})
	mux.HandleFunc("POST /api/sim/nack-publishes", func(w http.ResponseWriter, r *http.Request) {
		n, err := strconv.Atoi(r.URL.Query().Get("n"))
		if err != nil || n < 0 {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "n must be a non-negative integer"})
			return
		}
		b.NackPublishes(n)
		writeJSON(w, http.StatusOK, map[string]int{"nack": n})
	})
	return mux
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
