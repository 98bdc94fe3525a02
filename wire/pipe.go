package wire

import (
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"
)

// Pipe returns the two ends of a full-duplex, in-memory connection whose
// client writes never block: the client-to-server direction is an
// unbounded buffer. The server-to-client direction holds at most
// ServerWriteBuffer bytes, like a socket's buffers: a client that stops
// reading stops the server's writer, and so the broker's deliveries,
// without the client ever waiting. It is the transport amqptest uses, and
// the one to use inside a testing/synctest bubble.
//
// Unlike [net.Pipe], a writer never waits for the reader. amqp091-go holds
// mutexes while it writes, and a goroutine waiting on a mutex is not durably
// blocked, so a synchronous pipe can freeze a synctest bubble when the peer
// is slow to read; an unbounded buffer cannot. Blocking reads wait on a
// sync.Cond, and deadlines are armed with time.AfterFunc, so both follow
// the bubble's fake clock.
//
// Both ends implement net.Conn, CloseWrite (the peer reads io.EOF once
// it has drained what was written) and Reset (the peer reads a "connection
// reset by peer" error instead). Close on one end makes its own reads
// and writes fail with io.ErrClosedPipe, the peer's reads return io.EOF after
// the buffered bytes, and the peer's writes fail with io.ErrClosedPipe.
func Pipe() (client, server net.Conn) {
	a, b := newHalf(), newHalf()
	a.limit = ServerWriteBuffer
	return &pipeConn{rx: a, tx: b, local: pipeAddr("client"), remote: pipeAddr("server")},
		&pipeConn{rx: b, tx: a, local: pipeAddr("server"), remote: pipeAddr("client")}
}

// pipeAddr is the address of an in-memory pipe end.
type pipeAddr string

// Network returns "amqpsim".
func (a pipeAddr) Network() string { return "amqpsim" }

// String returns "client" or "server".
func (a pipeAddr) String() string { return string(a) }

// half is one direction of a pipe: bytes written by one end, waiting for
// the other to read them.
type half struct {
	mu   sync.Mutex
	cond sync.Cond
	buf  []byte
	off  int // buf[off:] is unread
	// limit, when set, makes a write wait while this many bytes are
	// unread (a write into an empty buffer always goes through).
	limit int
	// wclosed: the writing end closed or half-closed; reads return io.EOF
	// once the buffer is drained, or errPipeReset when reset is set.
	wclosed bool
	reset   bool
	// rclosed: the reading end closed; reads and writes fail.
	rclosed bool
	rd      deadline // read deadline of the reading end
	// idle: the reading end waits in Read with the buffer empty, so it
	// has read everything written so far. onWait, if set, is called (with
	// no lock held) each time a Read starts such a wait.
	idle   bool
	onWait func()
	// waiting and blocked count the readers waiting on cond for bytes and
	// the writers waiting on it for room: a write wakes the ones, a read
	// the others.
	waiting, blocked int
}

// pipeKeep is the most room a drained pipe keeps for the next writes: a
// client that wrote a large message while the server did not read (an
// alarm) leaves no buffer of that size behind.
const pipeKeep = 256 << 10

// ServerWriteBuffer is how many bytes the server side of a Pipe may have
// written that the client has not read, like the socket buffers of a TCP
// connection on loopback.
const ServerWriteBuffer = 4 << 20

func newHalf() *half {
	h := &half{}
	h.cond.L = &h.mu
	return h
}

// deadline is a read or write deadline. The timer only wakes waiters; the
// deadline is checked against time.Now, so it follows a synctest bubble's
// clock.
//
// Setting a deadline only records it: amqp091-go moves its read deadline
// after every frame it reads, and a timer made or reset each time cost
// more than the frame. The one timer is armed when a reader waits
// (arm), and left alone while it would fire no later than the deadline:
// a wake before it makes the reader look again and re-arm.
type deadline struct {
	at    time.Time
	timer *time.Timer
	armed time.Time // when the timer fires; zero when it is not pending
}

// arm makes sure the timer wakes a waiting reader by the deadline; wake
// is called (without the lock) when it fires. Caller holds the lock.
func (d *deadline) arm(wake func()) {
	if d.at.IsZero() || !d.armed.IsZero() && !d.armed.After(d.at) {
		return
	}
	dur := max(time.Until(d.at), 0)
	if d.timer == nil {
		d.timer = time.AfterFunc(dur, wake)
	} else {
		d.timer.Reset(dur)
	}
	d.armed = d.at
}

// stop stops the timer. Caller holds the lock.
func (d *deadline) stop() {
	if d.timer != nil {
		d.timer.Stop()
	}
	d.at, d.armed = time.Time{}, time.Time{}
}

// exceeded reports whether the deadline is set and has passed.
func (d *deadline) exceeded() bool { return !d.at.IsZero() && !time.Now().Before(d.at) }

func (h *half) read(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	defer func() { h.idle = false }()
	for {
		switch {
		case h.rclosed:
			return 0, io.ErrClosedPipe
		case h.rd.exceeded():
			return 0, os.ErrDeadlineExceeded
		case h.off < len(h.buf):
			if len(p) == 0 {
				return 0, nil
			}
			n := copy(p, h.buf[h.off:])
			h.off += n
			if h.off == len(h.buf) {
				h.buf, h.off = h.buf[:0], 0
				if cap(h.buf) > pipeKeep {
					h.buf = nil // a burst's room goes once read
				}
			}
			if h.blocked > 0 {
				h.cond.Broadcast() // a writer waits for the room this read made
			}
			return n, nil
		case h.wclosed && h.reset:
			return 0, errPipeReset
		case h.wclosed:
			return 0, io.EOF
		}
		if !h.idle {
			h.idle = true
			if f := h.onWait; f != nil {
				h.mu.Unlock()
				f()
				h.mu.Lock()
				continue // the world may have moved while unlocked
			}
		}
		h.rd.arm(h.timeout)
		h.waiting++
		h.cond.Wait()
		h.waiting--
	}
}

func (h *half) write(p []byte, wd *deadline) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.wclosed || h.rclosed:
		return 0, io.ErrClosedPipe
	case wd.exceeded():
		return 0, os.ErrDeadlineExceeded
	}
	for h.limit > 0 && len(h.buf) > h.off && len(h.buf)-h.off+len(p) > h.limit {
		h.blocked++
		h.cond.Wait() // woken by reads and closes
		h.blocked--
		// A close empties the buffer, which ends the loop: a write that
		// waited must not then succeed into the closed pipe.
		if h.wclosed || h.rclosed {
			return 0, io.ErrClosedPipe
		}
	}
	if h.off > 0 && h.off >= len(h.buf)/2 {
		// Compact before growing, so a buffer read as fast as it is filled
		// does not grow without bound.
		h.buf = h.buf[:copy(h.buf, h.buf[h.off:])]
		h.off = 0
	}
	h.buf = append(h.buf, p...)
	if h.waiting > 0 {
		h.cond.Broadcast()
	}
	return len(p), nil
}

// closeWrite marks the writing end closed; reset makes the reader's
// end read errPipeReset instead of io.EOF.
func (h *half) closeWrite(reset bool) {
	h.mu.Lock()
	h.wclosed = true
	h.reset = h.reset || reset
	h.cond.Broadcast()
	h.mu.Unlock()
}

// closeRead marks the reading end closed and drops the buffer.
func (h *half) closeRead() {
	h.mu.Lock()
	h.rclosed = true
	h.buf, h.off = nil, 0
	h.rd.stop()
	h.cond.Broadcast()
	h.mu.Unlock()
}

// timeout is the read deadline's timer firing: it wakes the readers,
// which look at the deadline again.
func (h *half) timeout() {
	h.mu.Lock()
	h.rd.armed = time.Time{}
	h.cond.Broadcast()
	h.mu.Unlock()
}

// pipeConn is one end of a Pipe.
type pipeConn struct {
	rx, tx        *half
	local, remote net.Addr

	wmu sync.Mutex
	wd  deadline // write deadline; writes never wait, so it has no timer
}

// Read reads what the peer wrote, waiting for data, io.EOF or the deadline.
func (c *pipeConn) Read(p []byte) (int, error) { return c.rx.read(p) }

// Write buffers p for the peer; it never waits.
func (c *pipeConn) Write(p []byte) (int, error) {
	c.wmu.Lock()
	wd := c.wd
	c.wmu.Unlock()
	return c.tx.write(p, &wd)
}

// Close closes both directions of this end.
func (c *pipeConn) Close() error {
	c.rx.closeRead()
	c.tx.closeWrite(false)
	return nil
}

// Reset closes both directions of this end as a TCP reset does: the peer
// reads, after the bytes already written, an error that wraps
// syscall.ECONNRESET ("connection reset by peer") instead of io.EOF.
func (c *pipeConn) Reset() error {
	c.rx.closeRead()
	c.tx.closeWrite(true)
	return nil
}

// errPipeReset is what the peer of a Reset end reads, worded as a TCP
// connection's reset.
var errPipeReset = &net.OpError{Op: "read", Net: "amqpsim", Err: os.NewSyscallError("read", syscall.ECONNRESET)}

// CloseWrite half-closes the connection: the peer reads io.EOF after the
// bytes already written, and this end can still read.
func (c *pipeConn) CloseWrite() error {
	c.tx.closeWrite(false)
	return nil
}

// Buffered returns the number of bytes the peer wrote that this end has
// not read yet.
func (c *pipeConn) Buffered() int {
	h := c.rx
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.buf) - h.off
}

// ReadIdle reports whether this end has read everything the peer wrote
// and is waiting in Read for more, or is closed. A reader that reads only
// once it has handled what it read before (as the wire server's does) has
// then handled every byte the peer wrote: it is the barrier from a client
// to the server (amqptest.Server.WaitApplied).
func (c *pipeConn) ReadIdle() bool {
	h := c.rx
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.rclosed || h.idle && h.off == len(h.buf)
}

// OnReadIdle sets f, called (from the reading goroutine, with no lock
// held) each time a Read on this end starts to wait on an empty buffer,
// so that a barrier on ReadIdle is woken instead of polling.
func (c *pipeConn) OnReadIdle(f func()) {
	h := c.rx
	h.mu.Lock()
	h.onWait = f
	h.mu.Unlock()
}

// LocalAddr returns this end's name.
func (c *pipeConn) LocalAddr() net.Addr { return c.local }

// RemoteAddr returns the peer's name.
func (c *pipeConn) RemoteAddr() net.Addr { return c.remote }

// SetDeadline sets both deadlines.
func (c *pipeConn) SetDeadline(t time.Time) error {
	c.SetReadDeadline(t)
	return c.SetWriteDeadline(t)
}

// SetReadDeadline makes a waiting or later Read fail with
// os.ErrDeadlineExceeded once t has passed; zero clears it.
func (c *pipeConn) SetReadDeadline(t time.Time) error {
	h := c.rx
	h.mu.Lock()
	h.rd.at = t
	if h.waiting > 0 {
		// A waiting reader needs the timer for a deadline earlier than
		// it is armed for, and a wake for one already passed.
		if !t.IsZero() && !time.Now().Before(t) {
			h.cond.Broadcast()
		} else {
			h.rd.arm(h.timeout)
		}
	}
	h.mu.Unlock()
	return nil
}

// SetWriteDeadline makes Write fail with os.ErrDeadlineExceeded once t has
// passed; zero clears it.
func (c *pipeConn) SetWriteDeadline(t time.Time) error {
	c.wmu.Lock()
	c.wd.at = t
	c.wmu.Unlock()
	return nil
}
