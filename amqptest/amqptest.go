// Package amqptest runs an in-process RabbitMQ simulator that the real
// github.com/rabbitmq/amqp091-go client (or any AMQP 0-9-1 client) connects
// to, in the style of net/http/httptest.
//
// # Usage
//
// Start a server in a test and dial it through Config.Dial; that is the
// only change from code that talks to a real broker:
//
//	srv := amqptest.NewServer(t) // closed by t.Cleanup
//	conn, err := amqp.DialConfig(srv.URL(), amqp.Config{Dial: srv.Dial})
//
// The connection runs over an in-memory transport whose writes never block
// ([wire.Pipe]), so it also works inside a testing/synctest bubble, where
// the client's heartbeats, timeouts and time.Sleep run on the bubble's fake
// clock. The broker behind it is a [sim.Broker]: Broker() gives it to the
// test, to inspect queues (Broker().QueueStats) or to move its virtual clock
// (Broker().Advance), which drives consumer timeouts, TTLs and the like.
//
// # Configuration
//
// The broker is configured by sim.Config, through WithConfig: the
// RabbitMQ release simulated (Version), the default user, whose
// credentials URL() carries (DefaultUser, DefaultPass), definitions
// imported at boot (Definitions), the consumer timeout, the seed, the
// clock. The options of this package are for what only the server has:
// its transport (WithTCP, WithTLS, WithHeartbeat), extra vhosts
// (WithVhosts), logs, waits and failure reports.
//
//	srv := amqptest.NewServer(t, amqptest.WithConfig(sim.Config{Version: sim.V3_10}))
//
// # Time
//
// The broker has one clock. By default it moves only when the test calls
// Broker().Advance. With sim.Config{Clock: time.Now} it follows the time
// package's clock: inside a synctest bubble that is the bubble's fake
// clock, so a time.Sleep in the code under test fires the consumer
// timeout, TTLs and x-expires on the way, and a server goroutine wakes
// the broker at each of its timers (FollowClock). Heartbeats are a
// transport matter and always use the time package: in real time outside
// a synctest bubble, in the bubble's fake time inside one. The heartbeat
// is the smaller of the client's and the server's when both are set,
// else whichever is set: amqp.DialConfig asks for 10 s unless the URL
// says "?heartbeat=N" (amqp.Config.Heartbeat 0 means that default, not
// none), so by default both sides send heartbeats every 5 s, harmlessly.
// The server cannot turn heartbeats off for a client that asks for them.
// For none at all, the server offers none (WithHeartbeat(-1)) and the
// client asks for none ("?heartbeat=0" in amqp091-go's URL, or
// Config.Heartbeat 0 with amqp.Open, which reads no URL): a client that
// asks for none takes the server's offer, so "?heartbeat=0" alone gets
// RabbitMQ's 60 s (TestHeartbeatAmqp091Negotiates).
//
// # Waiting
//
// Wait, WaitQueue, WaitConsumers, WaitUnacked, WaitCounts,
// WaitConnections and WaitClosed block until the broker reaches a state, woken by the broker's
// own changes (sim.Broker.WaitFor), and fail the test with what they
// waited for after WithWaitTimeout (10 s by default). Inside a synctest
// bubble, synctest.Wait is the exact barrier: when it returns, everything
// the broker pushed has been written, read by the client and handed to the
// code under test, since every goroutine is blocked. Outside a bubble the
// two directions have a barrier each: WaitApplied returns once the broker
// has applied every frame the clients wrote (amqp091-go's Publish without
// confirms, Ack, Nack and Reject return before that; call it before
// Broker().Advance or a fault that must come after them), WaitFlushed
// once everything the broker pushed has been written by the server and
// read from the transport by the clients.
//
// # Faults
//
// Each fault shows the client what RabbitMQ would:
//   - Restart: a node restart; connection.close 320 CONNECTION_FORCED -
//     broker forced connection closure with reason 'shutdown', durable
//     queues, exchanges and persistent messages kept, transient ones lost,
//     and dials refused for the downtime;
//   - RefuseDials: an outage; Dial fails with "connection refused";
//   - DropConnection: the transport closes without a close frame (the
//     client reads EOF);
//   - StallConnection: no bytes either way until released (heartbeats, if
//     any, then end the connection on both sides);
//   - CloseClientConnections: "rabbitmqctl close_connection" (320);
//   - CloseChannel: one channel closed with an error of the test's choosing;
//   - ForceConsumerTimeout: the consumer timeout's 406 (RabbitMQ's before
//     4.3; a 4.3 quorum queue cancels the consumer instead), now;
//   - Broker().SetAlarm (or SetAlarmFor, with an end): a memory or disk
//     alarm; publishers get connection.blocked and their frames wait
//     until it clears;
//   - Broker().NackPublishes: the next publishes in confirm mode nacked.
//
// A fault at a point of the delivery stream is a Schedule: StartSchedule
// injects each of its faults once the broker has pushed so many
// deliveries, the closes (of the channel or connection of that delivery,
// by error or by consumer timeout, or of every connection) exactly right
// behind it (sim.Broker.CloseAtDelivery, which also counts from now or
// only a queue's deliveries, is the broker's own spelling).
//
// # Property tests
//
// CheckUnderFaults property-tests a consumer in one call: it runs it
// against fault schedules drawn with rapid (Schedules), each run in its
// own synctest bubble, checks every run's trace (package check: no
// message lost, the prefetch window held, a bound on redeliveries, Lint),
// re-runs a failing schedule until it fails again so that rapid shrinks
// it reliably, and prints the smallest (see the examples/worker
// package). CheckQueue, CheckCounts and CheckMessages assert the broker's
// state now with a diff; WaitCounts waits for counts that follow the
// client's asynchronous frames.
//
// # Management API
//
// Management is RabbitMQ's management HTTP API for the broker (package
// mgmt) as an http.Handler, and ManagementURL serves it on loopback, for
// code and tools that list queues or connections, declare through HTTP or
// close connections by name (DELETE /api/connections/NAME, 320
// CONNECTION_FORCED with the X-Reason text), authenticated as the URL's
// user.
//
// # TLS and failure reports
//
// WithTLS serves amqps with a certificate generated in memory, and
// TLSConfig gives the client the tls.Config that trusts it, so code that
// dials amqps:// runs unchanged. WithFailureReport (or $AMQPSIM_REPORT)
// writes a failing test's run as a scenario file and its SVG sequence
// diagram, so the test's author sees the conversation that failed.
//
// The broker's own errors (406 PRECONDITION_FAILED for an unknown delivery
// tag, ...) reach the client exactly as the simulated RabbitMQ release
// (4.3 unless sim.Config.Version says) sends them.
package amqptest

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/amqpsim/amqpsim/internal/memwatch"
	"github.com/amqpsim/amqpsim/mgmt"
	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/scenarios"
	"github.com/amqpsim/amqpsim/sim"
	"github.com/amqpsim/amqpsim/wire"
)

// Option configures a Server.
type Option func(*config)

type config struct {
	broker    *sim.Broker
	simConfig sim.Config
	configSet bool // WithConfig was given
	vhosts    []string
	heartbeat time.Duration
	tcp       bool
	tls       bool
	logf      func(string, ...any)
	// waitTimeout bounds the Wait helpers (wait.go).
	waitTimeout time.Duration
	// reportDir is WithFailureReport's directory (report.go).
	reportDir string
	// memoryLimit is WithMemoryWatermark's, in bytes; 0: no monitor.
	memoryLimit uint64
}

// WithBroker serves an existing broker instead of a new one, configured
// as it was opened; Start refuses it with WithConfig. A broker whose
// clock follows sim.Config.Clock is woken at its timers while the server
// runs, as a new one is.
func WithBroker(b *sim.Broker) Option { return func(c *config) { c.broker = b } }

// WithConfig configures the new broker (see sim.Config): the release
// simulated (Version; 4.3 by default), the default user whose
// credentials URL() carries (DefaultUser and DefaultPass; guest/guest by
// default), definitions to import at boot (Definitions; Start fails if
// they do not import), a clock to follow (Clock: time.Now, in a synctest
// bubble the bubble's clock; the server then wakes the broker at its
// timers), the consumer timeout, the seed.
func WithConfig(cfg sim.Config) Option {
	return func(c *config) { c.simConfig, c.configSet = cfg, true }
}

// WithVhosts adds virtual hosts next to "/", in which the URL's user (the
// broker's default user) gets full permissions.
func WithVhosts(names ...string) Option {
	return func(c *config) { c.vhosts = append(c.vhosts, names...) }
}

// WithHeartbeat sets the heartbeat the server offers in connection.tune
// (RabbitMQ's 60 s by default); negative offers none. A client that asks
// for a heartbeat gets the smaller of the two, or its own if the server
// offers none (amqp.DialConfig asks for 10 s by default); one that asks
// for none ("?heartbeat=0") gets the offer. See # Time.
func WithHeartbeat(d time.Duration) Option { return func(c *config) { c.heartbeat = d } }

// WithTCP serves on a TCP listener on 127.0.0.1 instead of the in-memory
// transport: URL() then names that address, and Dial dials it. TCP cannot
// be used inside a synctest bubble.
func WithTCP() Option { return func(c *config) { c.tcp = true } }

// WithMemoryWatermark raises the broker's memory alarm while the
// process's Go heap in use is above limit bytes, and clears it when the
// heap falls back, as `amqpsim serve --memory-high-watermark` does
// (RabbitMQ's vm_memory_high_watermark; publishers get connection.blocked
// "low on memory"). The heap is the whole test process's, not the
// broker's alone: it suits a soak test that runs one server, not tests in
// parallel. Over the in-memory transport, which never blocks a client's
// write, what a publisher wrote and the blocked broker has not read stays
// in the heap too, so that a client publishing without waiting for
// confirms can keep the alarm up; over TCP (WithTCP) it waits in the
// kernel's buffers, as with RabbitMQ. The broker's trace keeps every
// message's body: turn it off (sim.Config.NoTrace, through WithConfig),
// or the heap never falls back below a watermark it passed. The monitor looks every 250 ms on
// the wall clock (in a testing/synctest bubble, the bubble's); Close
// stops it.
//
// sim.Config has no such setting: the broker cannot measure memory
// without the runtime, and a core that reads it would not replay alike.
func WithMemoryWatermark(limit uint64) Option {
	return func(c *config) { c.memoryLimit = limit }
}

// WithLogf sends the server's log lines (refused logins, connection errors,
// missed heartbeats) to logf, for example t.Logf.
func WithLogf(logf func(format string, args ...any)) Option {
	return func(c *config) { c.logf = logf }
}

// Server is a running simulator serving AMQP 0-9-1.
type Server struct {
	cfg    config
	broker *sim.Broker
	// user and pass are the broker's default user's, URL()'s credentials.
	user, pass string
	wire       *wire.Server
	// tcp is set WithTCP: the wire server listens for every node
	// (wire.Server.ListenNodes).
	tcp bool
	// tlsServer and tlsClient are WithTLS's configurations (tls.go).
	tlsServer, tlsClient *tls.Config
	// stopClock ends FollowClock, clockDone says it has.
	stopClock context.CancelFunc
	clockDone chan struct{}
	// stopMemory ends WithMemoryWatermark's monitor, memoryDone closes
	// when it has.
	stopMemory context.CancelFunc
	memoryDone chan struct{}

	// io wakes WaitFlushed (flush.go).
	io ioEvents
	// faultMu guards refuseUntil, the end of a RefuseDials outage,
	// transports, the server's ends of the in-memory connections, and
	// marks and alarms, the faults injected, for a failure report
	// (marks.go).
	faultMu     sync.Mutex
	refuseUntil time.Time
	transports  []*faultConn
	marks       []scenarios.TraceFault
	alarms      []alarmMark

	// dialsBlocked makes Dial wait until dialRelease closes: the spin
	// watchdog's stop for a reconnect loop without a back-off (spin.go).
	dialsBlocked atomic.Bool
	dialRelease  chan struct{}
	releaseOnce  sync.Once

	// mgmt is the management API's handler; httpOnce starts httpSrv, its
	// loopback listener, at the first ManagementURL.
	mgmt     *mgmt.Handler
	httpOnce sync.Once
	httpSrv  *httptest.Server

	closeOnce sync.Once
}

// NewServer starts a server and registers its Close with t.Cleanup. It
// calls t.Fatalf if the server cannot start (only possible WithTCP).
func NewServer(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s, err := Start(opts...)
	if err != nil {
		t.Fatalf("amqptest: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	s.reportOnFailure(t)
	return s
}

// Start starts a server outside a test; the caller must Close it.
func Start(opts ...Option) (*Server, error) {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	return start(cfg)
}

// start is Start with its options applied.
func start(cfg config) (*Server, error) {
	b := cfg.broker
	if b == nil {
		var err error
		if b, err = sim.Open(cfg.simConfig); err != nil {
			return nil, err
		}
	} else if cfg.configSet {
		return nil, errors.New("amqptest: WithConfig configures a new broker, and WithBroker serves one already configured: give one of them")
	}
	bc := b.Config()
	for _, v := range cfg.vhosts {
		b.AddVhost(v)
		if err := b.SetPermissions(v, bc.DefaultUser, sim.FullPermissions); err != nil {
			return nil, err
		}
	}
	ws := wire.NewServer(b)
	ws.Heartbeat = cfg.heartbeat
	ws.Logf = cfg.logf
	s := &Server{cfg: cfg, broker: b, user: bc.DefaultUser, pass: bc.DefaultPass, wire: ws, mgmt: mgmt.NewHandler(b),
		dialRelease: make(chan struct{})}
	if cfg.tls {
		var err error
		if s.tlsServer, s.tlsClient, err = newTLS(); err != nil {
			return nil, fmt.Errorf("amqptest: TLS certificate: %w", err)
		}
	}
	s.io.init()
	ws.OnWritten = s.io.signal
	if bc.Clock != nil {
		ctx, cancel := context.WithCancel(context.Background())
		s.stopClock, s.clockDone = cancel, make(chan struct{})
		go func() {
			defer close(s.clockDone)
			FollowClock(ctx, b)
		}()
	}
	if cfg.memoryLimit > 0 {
		ctx, cancel := context.WithCancel(context.Background())
		s.stopMemory, s.memoryDone = cancel, make(chan struct{})
		m := &memwatch.Monitor{Limit: cfg.memoryLimit, Logf: cfg.logf}
		go func() {
			defer close(s.memoryDone)
			m.Run(ctx, b)
		}()
	}
	if cfg.tcp {
		s.tcp = true
		addrs := make([]string, len(b.Nodes()))
		for i := range addrs {
			addrs[i] = "127.0.0.1:0"
		}
		if err := ws.ListenNodes(addrs, s.tlsServer); err != nil {
			ws.Close()
			return nil, err
		}
	}
	return s, nil
}

// URL returns the URL to give amqp.DialConfig with Dial: the broker's
// default user's credentials (sim.Config.DefaultUser and DefaultPass,
// guest/guest unless configured) and the host "amqpsim" (or 127.0.0.1:port WithTCP), with no trailing slash,
// which amqp091-go reads as vhost "/"; its scheme is amqps WithTLS. Use
// VhostURL for another vhost.
func (s *Server) URL() string { return s.NodeURL(1) }

// VhostURL returns URL() for vhost, escaped ("/" is "%2F").
func (s *Server) VhostURL(vhost string) string {
	return s.URL() + "/" + url.PathEscape(vhost)
}

// Dial connects a new client: an in-memory connection served by the
// simulator (network and addr are ignored), or a TCP connection WithTCP.
// It has the signature of amqp.Config.Dial.
func (s *Server) Dial(network, addr string) (net.Conn, error) {
	if s.dialsBlocked.Load() {
		<-s.dialRelease
		return nil, errors.New("amqptest: no more dials: the run spun (see its failure)")
	}
	node := s.nodeOf(addr)
	if err := s.refused(addr, node); err != nil {
		return nil, err
	}
	if s.tcp {
		s.wire.WaitNodes() // a node the test started listens again
		return net.Dial("tcp", s.wire.NodeAddr(node))
	}
	client, server := wire.Pipe()
	ri := server.(readIdler)
	ri.OnReadIdle(s.io.signal) // before the server's reader starts
	fc := newFaultConn(server)
	s.faultMu.Lock()
	s.transports = append(s.transports, fc)
	s.faultMu.Unlock()
	var nc net.Conn = fc
	if s.tlsServer != nil {
		nc = tls.Server(fc, s.tlsServer)
	}
	if err := s.wire.ServeConnNode(nc, node); err != nil {
		client.Close()
		return nil, err
	}
	cc := &clientConn{Conn: client, io: &s.io, server: ri, fault: fc}
	s.io.add(cc)
	return cc, nil
}

// Management returns the broker's management HTTP API (package mgmt):
// RabbitMQ's /api/... resources, with basic authentication as the URL's
// user (or any broker user with a management tag). Serve it yourself, or
// call it in process with httptest.NewRecorder, which also works inside
// a synctest bubble.
func (s *Server) Management() http.Handler { return s.mgmt }

// ManagementURL serves Management on a loopback TCP listener, started at
// the first call and closed by Close, and returns its base URL
// ("http://127.0.0.1:PORT", no trailing slash, no credentials), the
// address of RabbitMQ's port 15672. Outside a synctest bubble only.
func (s *Server) ManagementURL() string {
	s.httpOnce.Do(func() { s.httpSrv = httptest.NewServer(s.mgmt) })
	if s.httpSrv == nil {
		panic("amqptest: ManagementURL after Close")
	}
	return s.httpSrv.URL
}

// Broker returns the simulated broker, to inspect and drive directly.
func (s *Server) Broker() *sim.Broker { return s.broker }

// Wire returns the protocol server, for its settings and ServeConn.
func (s *Server) Wire() *wire.Server { return s.wire }

// Close closes every client connection (with 320 CONNECTION_FORCED, as a
// RabbitMQ node shutting down; a stalled one is dropped without a close
// frame, which could not pass), stops the server and waits for its
// goroutines. It is idempotent.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		s.releaseDials()
		s.dropStalled()
		s.httpOnce.Do(func() {}) // no listener from now on
		if s.httpSrv != nil {
			s.httpSrv.Close()
		}
		s.wire.Close()
		if s.stopClock != nil {
			s.stopClock()
			<-s.clockDone
		}
		if s.stopMemory != nil {
			s.stopMemory()
			<-s.memoryDone
		}
	})
}

// CloseClientConnections closes every open client connection from the
// broker's side with 320 CONNECTION_FORCED and reason, as "rabbitmqctl
// close_connection" does. The clients get connection.close.
func (s *Server) CloseClientConnections(reason string) {
	for _, c := range s.broker.Connections() {
		s.markClose(c.Name(), 0, protocol.ConnectionForced, reason)
		c.CloseWithError(sim.Forced(reason))
	}
}

// CloseChannel closes channel id of the named connection from the broker's
// side with a RabbitMQ error, as if a method had failed with it: code and
// text become channel.close (or connection.close, for a hard error code).
// The text gets RabbitMQ's "NAME - " prefix.
func (s *Server) CloseChannel(connName string, id uint16, code int, text string) error {
	ch, err := s.channel(connName, id)
	if err != nil {
		return err
	}
	s.markClose(connName, id, code, text)
	ch.CloseWithError(protocol.Errorf(code, protocol.Method{}, "%s", text))
	return nil
}

// ForceConsumerTimeout closes channel id of the named connection now as
// RabbitMQ's consumer timeout does before 4.3 (406 PRECONDITION_FAILED -
// delivery acknowledgement on channel N timed out...), its deliveries
// requeued (sim.Channel.ForceConsumerTimeout, which says what 4.3 does).
// The channel must hold an unacked delivery.
func (s *Server) ForceConsumerTimeout(connName string, id uint16) error {
	ch, err := s.channel(connName, id)
	if err != nil {
		return err
	}
	s.mark(scenarios.TraceFault{Op: scenarios.Fault{Kind: scenarios.FaultConsumerTimeout}, Conn: connName, Channel: id})
	return ch.ForceConsumerTimeout()
}

// channel finds open channel id of the connection named connName.
func (s *Server) channel(connName string, id uint16) (*sim.Channel, error) {
	for _, c := range s.broker.Connections() {
		if c.Name() != connName {
			continue
		}
		for _, ch := range c.Channels() {
			if ch.ID() == id {
				return ch, nil
			}
		}
		return nil, fmt.Errorf("amqptest: connection %q has no open channel %d", connName, id)
	}
	return nil, fmt.Errorf("amqptest: no open connection %q", connName)
}
