package wire

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/amqpsim/amqpsim/sim"
)

// RabbitMQ 3.10's defaults for connection.tune and the handshake.
const (
	DefaultChannelMax       = 2047
	DefaultFrameMax         = 131072
	DefaultHeartbeat        = 60 * time.Second
	DefaultHandshakeTimeout = 10 * time.Second
	// DefaultHandshakeFailureDelay is RabbitMQ's delay before it drops a
	// connection whose handshake failed.
	DefaultHandshakeFailureDelay = 3 * time.Second
)

// ErrServerClosed is returned by Serve and ServeConn after Close.
var ErrServerClosed = errors.New("wire: server closed")

// Server serves AMQP 0-9-1 clients against a simulated broker. It speaks
// the protocol the way the broker's RabbitMQ release does (sim.Profile:
// handshake, capabilities, reply codes and texts, channel and connection
// close rules, heartbeats) and translates every method into a call on the
// *sim.Broker, then writes the call's reply and drains the connection's
// outbox (sim.Connection.Drain) to the socket; it holds no broker logic.
//
// Set the fields before the first ServeConn or Serve; the zero values give
// RabbitMQ's defaults. A Server is safe for concurrent use.
//
// Unlike RabbitMQ, the server:
//   - answers a method frame with a class or method id the specification does
//     not define with 503 COMMAND_INVALID, and a malformed field table with
//     502 SYNTAX_ERROR (RabbitMQ 3.10.8 drops the connection without a
//     connection.close);
//   - does not know the deprecated access class (access.request).
type Server struct {
	// Broker is the simulated broker the clients talk to. Required.
	Broker *sim.Broker
	// ChannelMax, FrameMax and Heartbeat are offered in connection.tune;
	// zero means RabbitMQ's defaults (2047, 131072, 60 s). A negative
	// Heartbeat offers 0: no heartbeats unless the client asks for them.
	ChannelMax uint16
	FrameMax   uint32
	Heartbeat  time.Duration
	// HandshakeTimeout bounds the time from accepting a connection to
	// connection.open; zero means 10 s, as RabbitMQ.
	HandshakeTimeout time.Duration
	// HandshakeFailureDelay is how long a connection whose handshake
	// failed stays open before the server drops it: after a refused login
	// (unless the client answers with connection.close-ok, which drops it
	// at once), an unknown mechanism, a malformed response or an
	// out-of-range tune-ok (whatever the client sends). Zero means
	// RabbitMQ's 3 s, negative no delay. On a synctest bubble's clock it
	// costs nothing.
	HandshakeFailureDelay time.Duration
	// CloseTimeout bounds how long the server waits for connection.close-ok
	// after sending connection.close; zero means RabbitMQ's rule: the
	// negotiated heartbeat if it is between 1 and 30 s, otherwise 30 s.
	CloseTimeout time.Duration
	// Logf, if set, receives one line per notable event: refused logins,
	// connection errors, missed heartbeats.
	Logf func(format string, args ...any)
	// OnWritten, if set, is called (from a connection's writer goroutine,
	// with no lock held) after each batch of frames the server flushed to a
	// client, and when a connection's serving ends: a test's barrier
	// re-checks Flushed then.
	OnWritten func()

	mu        sync.Mutex
	closed    bool
	quit      chan struct{} // closed by Close; ends Serve's back-off sleeps
	conns     map[*serverConn]struct{}
	listeners map[net.Listener]struct{}
	nodes     *nodeListeners // ListenNodes'
	wg        sync.WaitGroup
}

// NewServer returns a Server for b with RabbitMQ's defaults.
func NewServer(b *sim.Broker) *Server { return &Server{Broker: b} }

func (s *Server) logf(format string, args ...any) {
	if s.Logf != nil {
		s.Logf(format, args...)
	}
}

func (s *Server) channelMax() uint16 {
	if s.ChannelMax == 0 {
		return DefaultChannelMax
	}
	return s.ChannelMax
}

func (s *Server) frameMax() uint32 {
	if s.FrameMax == 0 {
		return DefaultFrameMax
	}
	return max(s.FrameMax, FrameMinSize)
}

// heartbeatSeconds is the heartbeat offered in connection.tune.
func (s *Server) heartbeatSeconds() uint16 {
	switch {
	case s.Heartbeat == 0:
		return uint16(DefaultHeartbeat / time.Second)
	case s.Heartbeat < 0:
		return 0
	}
	return uint16(min(max(s.Heartbeat/time.Second, 1), 65535))
}

// ServeConn serves one client connection in background goroutines and
// returns at once. The server owns conn from then on and closes it when the
// AMQP connection ends or the server closes. Any net.Conn works: an end of
// [Pipe], of net.Pipe, or an accepted TCP connection. It returns
// ErrServerClosed, after closing conn, once Close has been called.
func (s *Server) ServeConn(conn net.Conn) error { return s.ServeConnNode(conn, 1) }

// ServeConnNode is ServeConn for a client of node number node of a
// simulated cluster (sim.Config.Nodes): the connection is attached to
// that node (sim.ConnectOptions.Node).
func (s *Server) ServeConnNode(conn net.Conn, node int) error {
	if s.Broker == nil {
		conn.Close()
		return errors.New("wire: Server.Broker is nil")
	}
	c := newServerConn(s, conn, node)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		conn.Close()
		return ErrServerClosed
	}
	if s.conns == nil {
		s.conns = map[*serverConn]struct{}{}
	}
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		c.serve()
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		if s.OnWritten != nil {
			s.OnWritten()
		}
	}()
	return nil
}

// Serve accepts connections on l and serves each with ServeConn until l
// fails or the server closes; then it returns ErrServerClosed (after Close)
// or the accept error. Close closes l.
//
// A temporary accept error, such as running out of file descriptors
// (EMFILE, ENFILE), does not end it: it is logged and Serve accepts again
// after a pause that doubles from 5 ms to 1 s while the errors last (as
// net/http's Server.Serve does), the way RabbitMQ's acceptor (ranch_acceptor:
// loop/5) logs "out of file descriptors" and keeps accepting.
func (s *Server) Serve(l net.Listener) error { return s.ServeNode(l, 1) }

// ServeNode is Serve for the listener of node number node of a simulated
// cluster (sim.Config.Nodes): its connections are attached to that node.
func (s *Server) ServeNode(l net.Listener, node int) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		l.Close()
		return ErrServerClosed
	}
	if s.listeners == nil {
		s.listeners = map[net.Listener]struct{}{}
	}
	s.listeners[l] = struct{}{}
	quit := s.quitLocked()
	s.wg.Add(1)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, l)
		s.mu.Unlock()
		s.wg.Done()
	}()
	var delay time.Duration // the pause after a temporary accept error
	for {
		conn, err := l.Accept()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if closed {
				return ErrServerClosed
			}
			if !temporary(err) {
				return err
			}
			delay = min(max(2*delay, minAcceptDelay), maxAcceptDelay)
			s.logf("wire: accept: %v (%s); accepting again in %v", err, acceptErrorText(err), delay)
			t := time.NewTimer(delay)
			select {
			case <-t.C:
			case <-quit:
				t.Stop()
				return ErrServerClosed
			}
			continue
		}
		delay = 0
		if err := s.ServeConnNode(conn, node); err != nil {
			return err
		}
	}
}

// The pauses after temporary accept errors: net/http's.
const (
	minAcceptDelay = 5 * time.Millisecond
	maxAcceptDelay = time.Second
)

// temporary reports whether an accept error may go away by itself: a
// full descriptor table (EMFILE, ENFILE), an interrupted or aborted
// accept. net/http's test, Temporary being deprecated only as a general
// notion of net.Error.
func temporary(err error) bool {
	var t interface{ Temporary() bool }
	return errors.As(err, &t) && t.Temporary()
}

// acceptErrorText names an accept error as RabbitMQ's log does.
func acceptErrorText(err error) string {
	if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
		return "out of file descriptors"
	}
	return "temporary error"
}

// quitLocked returns the channel Close closes; caller holds s.mu.
func (s *Server) quitLocked() chan struct{} {
	if s.quit == nil {
		s.quit = make(chan struct{})
	}
	return s.quit
}

// closeGrace bounds how long Close waits for clients to answer the
// connection.close it sends them.
const closeGrace = 2 * time.Second

// Close shuts the server down: it stops every listener, sends each open
// AMQP connection connection.close (320 CONNECTION_FORCED, as a RabbitMQ
// node that shuts down), waits up to 2 s for the clients' close-ok, then
// closes every remaining connection and waits for all of the server's
// goroutines to exit. It is idempotent, and after it returns no goroutine
// of the server is left. If the wait lasts more than 5 s, it reports
// through Logf (or standard error) what it is still waiting for.
func (s *Server) Close() error {
	s.mu.Lock()
	first := !s.closed
	s.closed = true
	if first {
		close(s.quitLocked())
	}
	ls := make([]net.Listener, 0, len(s.listeners))
	for l := range s.listeners {
		ls = append(ls, l)
	}
	conns := s.connList()
	s.mu.Unlock()
	for _, l := range ls {
		l.Close()
	}
	if first {
		for _, c := range conns {
			c.shutdown("broker forced connection closure with reason 'shutdown'")
		}
		s.waitConns(closeGrace)
	}
	s.mu.Lock()
	conns = s.connList()
	s.mu.Unlock()
	for _, c := range conns {
		c.closeTransport()
	}
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	report := time.NewTimer(5 * time.Second)
	defer report.Stop()
	for {
		select {
		case <-done:
			return nil
		case <-report.C:
			s.mu.Lock()
			var names []string
			for _, c := range s.connList() {
				names = append(names, c.describe())
			}
			s.mu.Unlock()
			msg := fmt.Sprintf("wire: Server.Close has waited 5 s for %d connection(s): %s", len(names), strings.Join(names, "; "))
			if s.Logf != nil {
				s.Logf("%s", msg)
			} else {
				fmt.Fprintln(os.Stderr, msg)
			}
		}
	}
}

// waitConns polls until no connection is left or d has passed.
func (s *Server) waitConns(d time.Duration) {
	deadline := time.Now().Add(d)
	for {
		s.mu.Lock()
		n := len(s.conns)
		s.mu.Unlock()
		if n == 0 || !time.Now().Before(deadline) {
			return
		}
		time.Sleep(time.Millisecond)
		runtime.Gosched()
	}
}

// connList returns the served connections in accept order; caller holds
// s.mu.
func (s *Server) connList() []*serverConn {
	out := make([]*serverConn, 0, len(s.conns))
	for c := range s.conns {
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b *serverConn) int { return cmp.Compare(a.seq, b.seq) })
	return out
}

// ConnectionCount returns the number of client connections being served,
// handshakes and closing ones included.
func (s *Server) ConnectionCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// Transport returns the net.Conn the server reads and writes for the open
// AMQP connection named name (the oldest, if several share the name), for
// fault injection: closing it drops the connection without a close frame.
// It reports false when no such connection has completed its handshake.
func (s *Server) Transport(name string) (net.Conn, bool) {
	s.mu.Lock()
	conns := s.connList()
	s.mu.Unlock()
	for _, c := range conns {
		c.mu.Lock()
		sc := c.sc
		c.mu.Unlock()
		if sc != nil && sc.Name() == name && !c.closing.Load() && sc.Err() == nil {
			return c.nc, true
		}
	}
	return nil, false
}

// Flushed reports whether the server has written to its clients everything
// the broker pushed to them: every served connection's outbox is empty and
// its writer holds nothing queued or unflushed. The bytes may still wait in
// the transport for the client to read them.
func (s *Server) Flushed() bool {
	s.mu.Lock()
	conns := s.connList()
	s.mu.Unlock()
	for _, c := range conns {
		// callMu makes the outbox's drain into the writer's queue atomic
		// for this look.
		c.callMu.Lock()
		c.mu.Lock()
		sc, busy := c.sc, len(c.out) > 0 || c.writing
		c.mu.Unlock()
		pending := sc != nil && sc.Pending() > 0
		c.callMu.Unlock()
		if busy || pending {
			return false
		}
	}
	return true
}
