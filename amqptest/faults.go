package amqptest

import (
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/amqpsim/amqpsim/scenarios"
)

// Restart restarts the broker as a RabbitMQ node restart does
// (sim.Broker.Restart): every client gets connection.close with 320
// CONNECTION_FORCED - broker forced connection closure with reason
// 'shutdown'; durable queues and exchanges and persistent messages stay,
// transient ones go. Dials are refused for downtime first (see
// RefuseDials), as while a node boots; 0 means the broker is back at once.
func (s *Server) Restart(downtime time.Duration) {
	if downtime > 0 {
		s.RefuseDials(downtime)
	}
	s.broker.Restart()
}

// RefuseDials makes Dial fail with "connection refused" (an error that
// errors.Is matches with syscall.ECONNREFUSED, as a TCP dial to a stopped
// broker fails) until the broker's clock has moved d past its current
// time: with the manual clock, until the test Advances it; with a
// followed clock (sim.Config.Clock), once d has passed (in a synctest
// bubble, fake time). Open
// connections are not touched. WithTCP it governs Dial only, not clients
// that dial the address themselves.
func (s *Server) RefuseDials(d time.Duration) {
	until := s.broker.Now().Add(d)
	s.faultMu.Lock()
	s.refuseUntil = until
	s.faultMu.Unlock()
}

// refused returns the error of a refused dial to node, or nil: during a
// RefuseDials outage, or while the node is down (sim.Broker.StopNode,
// KillNode; the wire server answers for its nodes).
func (s *Server) refused(addr string, node int) error {
	if err := s.wire.Refused(node, addr); err != nil {
		return err
	}
	s.faultMu.Lock()
	until := s.refuseUntil
	s.faultMu.Unlock()
	if until.IsZero() || !s.broker.Now().Before(until) {
		return nil
	}
	return &net.OpError{Op: "dial", Net: "tcp", Addr: pipeAddr(addr),
		Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
}

// pipeAddr names the server in a refused dial's error.
type pipeAddr string

func (a pipeAddr) Network() string { return "tcp" }
func (a pipeAddr) String() string  { return string(a) }

// DropConnection closes the transport of the connection named connName
// without a close frame, as a network failure or a killed broker process
// does: the client reads EOF (amqp091-go's NotifyClose gets 501 "EOF"),
// and the broker closes the connection as if the client had vanished
// (unacked deliveries requeued, exclusive queues deleted).
func (s *Server) DropConnection(connName string) error {
	nc, ok := s.wire.Transport(connName)
	if !ok {
		return fmt.Errorf("amqptest: no open connection %q", connName)
	}
	s.mark(scenarios.TraceFault{Comment: "connection " + connName + " dropped here (a fault), which the broker takes as its client's close"})
	if fc, ok := plain(nc).(*faultConn); ok {
		return fc.drop() // under TLS too: no close_notify, as a cut cable
	}
	return nc.Close()
}

// StallConnection stops every byte of the connection named connName, both
// ways, until release is called, as a network partition does: the
// client's writes are buffered (they never block), and the server reads
// and writes nothing. Heartbeats then do what they do over a partition:
// the server's monitor gives up after two silent intervals and closes its
// side (the broker forgets the connection; the client learns nothing, its
// bytes stay stalled), and the client's own deadline (three intervals in
// amqp091-go) closes it with 501 "i/o timeout". Without heartbeats the
// connection resumes on release as if nothing happened. The in-memory
// transport without TLS only: it fails WithTCP and WithTLS.
func (s *Server) StallConnection(connName string) (release func(), err error) {
	nc, ok := s.wire.Transport(connName)
	if !ok {
		return nil, fmt.Errorf("amqptest: no open connection %q", connName)
	}
	fc, ok := nc.(*faultConn)
	if !ok {
		return nil, fmt.Errorf("amqptest: connection %q is not on the in-memory transport", connName)
	}
	fc.setStalled(true)
	var once sync.Once
	return func() { once.Do(func() { fc.setStalled(false) }) }, nil
}

// dropStalled drops the connections still stalled, so that Close need not
// wait out its grace period for close-oks that cannot come.
func (s *Server) dropStalled() {
	s.faultMu.Lock()
	fcs := s.transports
	s.transports = nil
	s.faultMu.Unlock()
	for _, fc := range fcs {
		fc.mu.Lock()
		stalled := fc.stalled
		fc.mu.Unlock()
		if stalled {
			fc.drop()
		}
	}
}

// faultConn is the server's end of an in-memory connection, with the
// transport faults on it. Its waits use a sync.Cond, which a synctest
// bubble counts as durably blocked.
type faultConn struct {
	net.Conn
	mu      sync.Mutex
	cond    sync.Cond
	stalled bool
	// closed: the server closed its end. While stalled the close is a byte
	// like any other: the peer sees it on release.
	closed       bool
	closePending bool
}

func newFaultConn(c net.Conn) *faultConn {
	fc := &faultConn{Conn: c}
	fc.cond.L = &fc.mu
	return fc
}

// gate waits while the connection is stalled; it reports false once the
// server's end is closed.
func (fc *faultConn) gate() bool {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	for fc.stalled && !fc.closed {
		fc.cond.Wait()
	}
	return !fc.closed
}

// Read reads through the gate twice: bytes that a read already waiting
// when the stall began receives are held until the release, like bytes
// still on the wire.
func (fc *faultConn) Read(p []byte) (int, error) {
	if !fc.gate() {
		return 0, io.ErrClosedPipe
	}
	n, err := fc.Conn.Read(p)
	if !fc.gate() {
		return 0, io.ErrClosedPipe
	}
	return n, err
}

func (fc *faultConn) Write(p []byte) (int, error) {
	if !fc.gate() {
		return 0, io.ErrClosedPipe
	}
	return fc.Conn.Write(p)
}

// Close closes the server's end; while stalled the peer learns of it only
// on release.
func (fc *faultConn) Close() error {
	fc.mu.Lock()
	fc.closed = true
	stalled := fc.stalled
	if stalled {
		fc.closePending = true
	}
	fc.cond.Broadcast()
	fc.mu.Unlock()
	if stalled {
		// Unblock a read waiting in the pipe without telling the peer: a
		// read deadline is this end's alone.
		return fc.Conn.SetReadDeadline(time.Unix(1, 0))
	}
	return fc.Conn.Close()
}

// drop closes the transport at once, stalled or not.
func (fc *faultConn) drop() error {
	fc.mu.Lock()
	fc.closed, fc.stalled, fc.closePending = true, false, false
	fc.cond.Broadcast()
	fc.mu.Unlock()
	return fc.Conn.Close()
}

// Reset resets the transport at once, stalled or not, as a crashed
// node's socket is reset (wire's resetTransport): the peer reads
// "connection reset by peer".
func (fc *faultConn) Reset() error {
	fc.mu.Lock()
	fc.closed, fc.stalled, fc.closePending = true, false, false
	fc.cond.Broadcast()
	fc.mu.Unlock()
	if r, ok := fc.Conn.(interface{ Reset() error }); ok {
		return r.Reset()
	}
	return fc.Conn.Close()
}

func (fc *faultConn) setStalled(on bool) {
	fc.mu.Lock()
	fc.stalled = on
	pending := !on && fc.closePending
	fc.closePending = false
	fc.cond.Broadcast()
	fc.mu.Unlock()
	if pending {
		fc.Conn.Close()
	}
}

// faultText is the explanation of the errors amqptest's faults close with,
// which a failure report's fault steps close with too.
const faultText = scenarios.FaultText
