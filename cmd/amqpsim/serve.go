package main

import (
	"context"
	crand "crypto/rand"
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/amqpsim/amqpsim/amqptest"
	"github.com/amqpsim/amqpsim/definitions"
	"github.com/amqpsim/amqpsim/internal/memwatch"
	"github.com/amqpsim/amqpsim/mgmt"
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
	tlsCert, tlsKey               string
	definitions                   string
	vhosts                        stringList
	consumerTimeout               time.Duration
	consumerMax                   int
	seed                          uint64
	seeded                        bool // --seed given: salts come from it too
	memory                        memwatch.Watermark
	version                       sim.Version
	permit                        []string
	nodes                         int
}

// passEnv is the environment variable serve reads --user's password from
// when neither --pass nor --pass-file gives it.
const passEnv = "AMQPSIM_PASS"

func parseServe(args []string, stderr io.Writer) (serveOptions, error) {
	var o serveOptions
	fs := flag.NewFlagSet("amqpsim serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.addr, "addr", "127.0.0.1:5672", "TCP address to serve AMQP 0-9-1 on (port 0 picks a free one); 127.0.0.1:5671 by default with TLS")
	fs.StringVar(&o.tlsCert, "tls-cert", "", "PEM certificate (chain) file: serve amqps (AMQP over TLS) instead of amqp; needs --tls-key")
	fs.StringVar(&o.tlsKey, "tls-key", "", "PEM private key file of --tls-cert")
	fs.StringVar(&o.clock, "clock", "wall", "broker clock: wall (starts at the real time and follows it) or manual (starts at sim.Epoch, 2024-01-01, and moves only by POST /api/sim/advance)")
	fs.StringVar(&o.user, "user", "guest", "user name clients log in with")
	fs.StringVar(&o.pass, "pass", "", "password of --user (default guest); every user of the machine can read a command line: prefer --pass-file or $"+passEnv)
	passFile := fs.String("pass-file", "", "file whose content (less a final newline) is the password of --user")
	fs.StringVar(&o.definitions, "definitions", "", "RabbitMQ definitions file (JSON, as rabbitmqctl export_definitions writes it) to import at start")
	fs.Var(&o.vhosts, "vhost", "extra virtual host besides \"/\" (repeatable)")
	fs.DurationVar(&o.consumerTimeout, "consumer-timeout", 0, "RabbitMQ's consumer_timeout (default 30m; negative disables)")
	fs.IntVar(&o.consumerMax, "consumer-max-per-channel", 0, "RabbitMQ's consumer_max_per_channel, 4.0+ (default 0: no limit)")
	fs.StringVar(&o.http, "http", "", "address for RabbitMQ's management HTTP API and the simulator's controls (GET /api/sim lists them: POST /api/sim/advance?by=30m, ...), with basic auth; empty: none")
	fs.Uint64Var(&o.seed, "seed", 0, "seed of the broker's random choices (generated names); given, it also makes the password salts, so that every run hashes a password alike (without it they come from crypto/rand)")
	fs.Var(&o.version, "rabbitmq", "the RabbitMQ release to simulate: 3.10, 3.12, 3.13, 4.0, 4.1, 4.2 or 4.3 (default)")
	memory := fs.String("memory-high-watermark", "0.4", "RabbitMQ's vm_memory_high_watermark: when the Go heap in use exceeds this fraction of the memory available to the process (its cgroup's limit, or the machine's) or this size (1GB, 512MiB), the memory alarm blocks publishers until it falls back")
	permit := permitFlag(fs)
	fs.IntVar(&o.nodes, "nodes", 1, "simulate a cluster of this many nodes (RabbitMQ 4.3 as measured on a real cluster: docs/cluster.md); node N listens on --addr's port + N - 1 "+
		"(each on a free port when it is 0), and POST /api/sim/stop-node?node=N, kill-node, start-node, partition and heal (--http) act on them")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: amqpsim serve [flags]\n\nServes the simulated RabbitMQ broker (4.3 unless --rabbitmq says) over TCP until SIGINT or SIGTERM.\n\nflags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	if (o.tlsCert == "") != (o.tlsKey == "") {
		return o, usageError{"--tls-cert and --tls-key go together"}
	}
	if o.tlsCert != "" && !isSet(fs, "addr") {
		o.addr = "127.0.0.1:5671" // the amqps port, as RabbitMQ's ssl_listeners
	}
	o.permit = *permit
	o.seeded = isSet(fs, "seed")
	var err error
	if o.memory, err = memwatch.Parse(*memory); err != nil {
		return o, usageError{"--memory-high-watermark: " + err.Error()}
	}
	if err := o.password(isSet(fs, "pass"), *passFile); err != nil {
		return o, err
	}
	if o.nodes < 1 {
		return o, usageError{fmt.Sprintf("--nodes must be 1 or more, not %d", o.nodes)}
	}
	if o.clock != "wall" && o.clock != "manual" {
		return o, usageError{fmt.Sprintf("--clock must be wall or manual, not %q", o.clock)}
	}
	return o, nil
}

// password settles --user's password: --pass, else --pass-file's
// content, else $AMQPSIM_PASS, else "guest". A blank one is refused, as
// RabbitMQ refuses to log in with one.
func (o *serveOptions) password(passSet bool, file string) error {
	switch {
	case passSet && file != "":
		return usageError{"--pass and --pass-file go apart"}
	case passSet:
	case file != "":
		data, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		o.pass = strings.TrimSuffix(strings.TrimSuffix(string(data), "\n"), "\r")
	default:
		v, set := os.LookupEnv(passEnv)
		if !set {
			o.pass = "guest"
			return nil
		}
		o.pass = v
	}
	if o.pass == "" {
		return usageError{"a blank password: RabbitMQ never lets a user log in with one"}
	}
	return nil
}

// memoryMonitor is the monitor of the memory watermark, nil when the
// memory available cannot be read for a relative one.
func memoryMonitor(w memwatch.Watermark, stdout, stderr io.Writer) *memwatch.Monitor {
	logf := func(format string, args ...any) { fmt.Fprintf(stderr, "amqpsim: "+format+"\n", args...) }
	if w.Bytes > 0 {
		fmt.Fprintf(stdout, "amqpsim: memory high watermark %s of Go heap\n", memwatch.Size(w.Bytes))
		return &memwatch.Monitor{Limit: w.Bytes, Logf: logf}
	}
	avail, err := memwatch.Available()
	if err != nil {
		logf("no memory high watermark: the memory available is unknown (%v); give --memory-high-watermark a size", err)
		return nil
	}
	limit := w.Limit(avail)
	fmt.Fprintf(stdout, "amqpsim: memory high watermark %s of Go heap (%s of %s available)\n", memwatch.Size(limit), w, memwatch.Size(avail))
	return &memwatch.Monitor{Limit: limit, Logf: logf}
}

// serve runs the server until ctx is done.
func serve(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseServe(args, stderr)
	if err != nil {
		return err
	}
	cfg := sim.Config{Seed: o.seed, ConsumerTimeout: o.consumerTimeout, ConsumerMaxPerChannel: o.consumerMax, NoTrace: true, Version: o.version, Permit: o.permit, DefaultUser: o.user, DefaultPass: o.pass,
		Nodes: o.nodes}
	if !o.seeded {
		// Salts nobody can predict, as RabbitMQ's (rabbit_password:
		// generate_salt/0, crypto:strong_rand_bytes/1): a broker others
		// reach must not hash a password alike on every run.
		cfg.Salts = crand.Reader
	}
	if o.clock == "wall" {
		// The virtual clock is the real one (so that what clients read of
		// it, a stream's x-stream-offset timestamps, the management API's
		// idle_since, is today's), as sim.Config{Clock: time.Now} under
		// amqptest does.
		cfg.Clock = time.Now
	}
	if o.definitions != "" {
		data, err := os.ReadFile(o.definitions)
		if err != nil {
			return err
		}
		if cfg.Definitions, err = definitions.Parse(data); err != nil {
			return fmt.Errorf("%s: %w", o.definitions, err)
		}
	}
	b, err := sim.Open(cfg)
	if err != nil {
		if o.definitions != "" {
			return fmt.Errorf("%s: %w", o.definitions, err)
		}
		return err
	}
	for _, v := range o.vhosts {
		b.AddVhost(v)
		if err := b.SetPermissions(v, o.user, sim.FullPermissions); err != nil {
			return err
		}
	}
	ws := wire.NewServer(b)
	ws.Logf = func(format string, args ...any) { fmt.Fprintf(stderr, "amqpsim: "+format+"\n", args...) }

	var tlsConfig *tls.Config
	if o.tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(o.tlsCert, o.tlsKey)
		if err != nil {
			return fmt.Errorf("TLS: %w", err)
		}
		tlsConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	addrs, err := nodeAddrs(o.addr, o.nodes)
	if err != nil {
		return err
	}
	scheme := "amqp"
	if tlsConfig != nil {
		scheme = "amqps"
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	// A port per node, closed while the node is down.
	if err := ws.ListenNodes(addrs, tlsConfig); err != nil {
		return err
	}
	defer ws.Close()
	// The start-up lines name the user, never the password: they end up
	// in CI logs.
	for _, n := range b.Nodes() {
		u := url.URL{Scheme: scheme, User: url.User(o.user), Host: ws.NodeAddr(n.Number), Path: "/"}
		var node string
		if o.nodes > 1 {
			node = fmt.Sprintf("; node %d of %d, %s", n.Number, o.nodes, n.Name)
		}
		fmt.Fprintf(stdout, "amqpsim: serving AMQP 0-9-1 on %s (RabbitMQ %s, clock %s%s)\n", u.String(), b.Profile().ServerVersion, o.clock, node)
	}

	if o.http != "" {
		hl, err := net.Listen("tcp", o.http)
		if err != nil {
			return err
		}
		// RabbitMQ's listener limits: 5 s for a request's headers, 60 s
		// idle, each body read and response write bounded, bodies over
		// the release's limit refused (mgmt.NewServer).
		hs := mgmt.NewServer(mgmt.NewHandler(b))
		hs.Handler = nodeControls{hs.Handler, ws}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = hs.Serve(hl)
		}()
		defer hs.Close()
		fmt.Fprintf(stdout, "amqpsim: management HTTP API on http://%s/api/ (basic auth as %s)\n", hl.Addr(), o.user)
	}

	if o.clock == "wall" {
		wg.Add(1)
		go func() {
			defer wg.Done()
			amqptest.FollowClock(ctx, b)
		}()
	}
	if m := memoryMonitor(o.memory, stdout, stderr); m != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m.Run(ctx, b)
		}()
	}
	<-ctx.Done()
	fmt.Fprintln(stdout, "amqpsim: shutting down")
	return nil
}
