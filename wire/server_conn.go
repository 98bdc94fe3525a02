package wire

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

var connSeq atomic.Uint64

// serverConn is one client connection. Its reader goroutine (serve) reads
// and applies frames in order and never stops draining the client; a writer
// goroutine sends what the reader and the broker queue for the client; a
// heartbeat goroutine runs when heartbeats were negotiated.
type serverConn struct {
	// node is the cluster node the client connected to (ServeConnNode).
	node int
	s    *Server
	nc   net.Conn
	seq  uint64
	br   *bufio.Reader
	bw   *bufio.Writer
	fw   *FrameWriter
	buf  []byte // frame payload, reused

	// Set by the reader during the handshake, read-only afterwards.
	frameMax   uint32
	channelMax uint16
	heartbeat  time.Duration
	authClose  bool // client announced authentication_failure_close
	// maxBody is the broker's max message size (sim.Broker.MaxMessageSize):
	// a larger body is not kept, and the broker refuses its publish.
	maxBody uint64
	// strictSize is the release's sim.Profile.StrictContentSize.
	strictSize bool

	// Reader-only state, but chans changes only under callMu, which the
	// writer holds to read it.
	clientClosed bool // client sent connection.close
	chans        map[uint16]*chanState

	// closing: the server sent connection.close and waits for close-ok.
	closing   atomic.Bool
	recvBytes atomic.Uint64 // bytes received, for the heartbeat monitor
	sent      atomic.Uint64 // non-heartbeat batches written

	// callMu serialises broker calls with their replies and the drains
	// of the outbox, so that a reply precedes what its call pushed; inCall
	// is set while the reader makes a call, before its drain (notify).
	callMu sync.Mutex
	inCall atomic.Bool
	// Writer-only: a frame failed to encode; the writer sends nothing
	// more but the connection's close.
	unsendable bool
	// Writer scratch for the per-message pushes.
	deliver BasicDeliver
	confirm BasicAck
	nack    BasicNack

	mu         sync.Mutex
	sc         *sim.Connection // nil until connection.open
	out        []outItem       // waiting for the writer
	pushes     []sim.Push      // the pushes of out's push items
	writing    bool            // the writer holds a batch not yet flushed
	closeTimer *time.Timer
	// lingerTimer closes a connection the client keeps open after close-ok.
	lingerTimer *time.Timer
	wake        chan struct{}

	done chan struct{}  // closed when the reader is finishing
	wg   sync.WaitGroup // the writer and heartbeat goroutines
	// gone is cancelled when the server closes the transport
	// (closeTransport), which ends a blocked reader's wait (waitUnblocked).
	gone       context.Context
	cancelGone context.CancelFunc
	// paused: the reader is blocked by an alarm; the heartbeat monitor
	// does not count its silence.
	paused atomic.Bool
	// crashed: the connection's cluster node crashed, so its transport
	// is reset, not closed (closeTransport).
	crashed atomic.Bool
}

// closeTransport closes the socket, or resets it once the connection's
// node crashed: the reader, the writer and the close timer may close it
// before the call that saw the crash does, and the client must still
// read a reset, not an end of file.
func (c *serverConn) closeTransport() {
	if c.crashed.Load() {
		c.resetTransport()
		return
	}
	c.cancelGone()
	c.nc.Close()
}

// resetTransport closes the socket with a TCP reset, as the kernel closes
// a crashed RabbitMQ node's sockets: its listeners set {linger, {true,
// 0}} (rabbit's default tcp_listen_options), and amqp091-go then reports
// "connection reset by peer" (measured on a 4.3.6 cluster:
// kill-node-resets-connections.txt). A transport that cannot reset (TLS
// over a pipe) is closed.
func (c *serverConn) resetTransport() {
	c.cancelGone()
	nc := c.nc
	if t, ok := nc.(interface{ NetConn() net.Conn }); ok { // *tls.Conn
		nc = t.NetConn()
	}
	switch t := nc.(type) {
	case *net.TCPConn:
		t.SetLinger(0)
	case interface{ Reset() error }:
		t.Reset()
		return
	}
	nc.Close()
}

// chanState is the server's view of one channel, from channel.open to the
// close-ok that ends it: the broker's channel and the assembly of content
// frames, which goes on while the broker drops a closing channel's
// methods.
type chanState struct {
	id  uint16
	sim *sim.Channel

	scratch methodScratch // the per-message methods, decoded without allocating
	// Content assembly (reader only).
	expect  frameExpect
	pending Method // content method awaiting its header and body
	props   protocol.Properties
	size    uint64 // declared body size
	got     uint64 // body bytes received
	body    []byte // kept only when size is within the broker's max message size, and only until the content is complete
	// content is the complete body during the content method's call: the
	// body frame's own payload when it came whole in one, else body.
	content []byte

	// gone is set once the channel is closed: the reader then forgets it.
	gone atomic.Bool
}

type frameExpect uint8

const (
	expectMethod frameExpect = iota
	expectHeader
	expectBody
)

func newServerConn(s *Server, nc net.Conn, node int) *serverConn {
	c := &serverConn{
		s:          s,
		node:       node,
		nc:         nc,
		seq:        connSeq.Add(1),
		br:         nil, // below: it reads in batches
		bw:         bufio.NewWriterSize(nc, 32<<10),
		frameMax:   s.Broker.Profile().FrameMinSize,
		maxBody:    s.Broker.MaxMessageSize(),
		strictSize: s.Broker.Profile().StrictContentSize,
		chans:      map[uint16]*chanState{},
		wake:       make(chan struct{}, 1),
		done:       make(chan struct{}),
	}
	c.gone, c.cancelGone = context.WithCancel(context.Background())
	c.br = bufio.NewReaderSize(batchReader{c}, 32<<10)
	c.fw = NewFrameWriter(c.bw)
	return c
}

// describe names the connection for logs.
func (c *serverConn) describe() string {
	state := "running"
	c.mu.Lock()
	if c.sc == nil {
		state = "handshake"
	}
	c.mu.Unlock()
	if c.closing.Load() {
		state = "closing"
	}
	return fmt.Sprintf("%s from %s (%s)", c.displayName(), c.nc.RemoteAddr(), state)
}

func (c *serverConn) displayName() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sc != nil {
		return c.sc.Name()
	}
	return fmt.Sprintf("connection #%d", c.seq)
}

// serve is the reader goroutine.
func (c *serverConn) serve() {
	defer c.finish()
	// A hung node accepts the TCP connection (its kernel does) and then
	// says nothing, not even the handshake's first frame.
	if c.node > 0 && nodeHung(c.s.Broker, c.node) {
		_ = c.s.Broker.WaitFor(c.gone, func(b *sim.Broker) bool { return !nodeHung(b, c.node) })
	}
	if !c.handshake() {
		return
	}
	c.wg.Add(1)
	go c.writeLoop()
	for {
		f, err := c.readFrame()
		if err != nil {
			var fe *frameError
			if errors.As(err, &fe) && !c.closing.Load() && !c.clientClosed {
				c.connError(fe.err)
				c.dropAfter(frameErrorCloseDelay)
				// Skip an oversized frame's payload, then read on for
				// close-ok until the socket is dropped.
				if _, err := c.br.Discard(fe.skip); err != nil {
					return
				}
				continue
			}
			return
		}
		switch {
		case c.clientClosed:
			// connection.close-ok is on its way; ignore the rest.
		case c.closing.Load():
			if c.whileClosing(f) {
				return
			}
		default:
			c.handleFrame(f)
		}
	}
}

// finish runs when the reader stops: the broker forgets the connection (an
// abrupt disconnect closes it as connection.close would), the transport is
// closed and the helper goroutines are waited for.
func (c *serverConn) finish() {
	c.mu.Lock()
	sc := c.sc
	c.mu.Unlock()
	if sc != nil {
		_ = sc.Close()
	}
	c.closeTransport()
	close(c.done)
	c.wg.Wait()
	c.mu.Lock()
	for _, t := range []*time.Timer{c.closeTimer, c.lingerTimer} {
		if t != nil {
			t.Stop()
		}
	}
	c.mu.Unlock()
}

// shutdown closes the connection from the broker's side, with 320
// CONNECTION_FORCED and reason once it is open, at once during the
// handshake.
func (c *serverConn) shutdown(reason string) {
	c.mu.Lock()
	sc := c.sc
	c.mu.Unlock()
	if sc == nil || c.closing.Load() {
		c.closeTransport()
		return
	}
	if !sc.CloseWithError(sim.Forced(reason)) {
		c.closeTransport() // the broker had already closed it
	}
}

// frameErrorCloseDelay is how long RabbitMQ 3.10.8's reader keeps a
// socket after a frame error's connection.close (rabbit_reader's
// SILENT_CLOSE_DELAY; measured: 3 s, whether or not close-ok comes).
const frameErrorCloseDelay = 3 * time.Second

// dropAfter closes the socket d from now, instead of after the close
// timeout.
func (c *serverConn) dropAfter(d time.Duration) {
	c.mu.Lock()
	if c.closeTimer != nil {
		c.closeTimer.Stop()
	}
	c.closeTimer = time.AfterFunc(d, c.closeTransport)
	c.mu.Unlock()
}

// frameError is a frame-level protocol error; skip is the number of bytes
// of the offending frame still unread.
type frameError struct {
	err  *protocol.Error
	skip int
}

func (e *frameError) Error() string { return e.err.Error() }

// readFrame reads one frame, checking it the way RabbitMQ's reader does
// (size against frame_max with RabbitMQ's 8-byte allowance, frame-end
// octet, known frame type and minimum payload), with RabbitMQ's error texts.
func (c *serverConn) readFrame() (Frame, error) {
	h, err := c.br.Peek(7)
	if err != nil {
		if len(h) > 0 && err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return Frame{}, err
	}
	typ := FrameType(h[0])
	ch := binary.BigEndian.Uint16(h[1:])
	size := binary.BigEndian.Uint32(h[3:])
	if c.frameMax != 0 && uint64(size) > uint64(c.frameMax) {
		return Frame{}, &frameError{skip: 7 + int(min(uint64(size)+1, 1<<40)), err: protocol.Errorf(protocol.FrameError, protocol.Method{},
			"type %d, all octets = <<>>: {frame_too_large,%d,%d}", typ, size, c.frameMax-FrameOverhead)}
	}
	_, _ = c.br.Discard(7)
	if int(size) > cap(c.buf) {
		c.buf = make([]byte, size)
	}
	payload := c.buf[:size]
	if _, err := io.ReadFull(c.br, payload); err != nil {
		return Frame{}, noEOF(err)
	}
	end, err := c.br.ReadByte()
	if err != nil {
		return Frame{}, noEOF(err)
	}
	if end != FrameEnd {
		return Frame{}, &frameError{err: protocol.Errorf(protocol.FrameError, protocol.Method{},
			"type %d, %s: {invalid_frame_end_marker,%d}", typ, snippet(payload), end)}
	}
	ok := false
	switch typ {
	case FrameMethod:
		ok = size >= 4
	case FrameHeader:
		ok = size >= 14
	case FrameBody:
		ok = true
	case FrameHeartbeat:
		ok = size == 0
	}
	if !ok {
		return Frame{}, &frameError{err: protocol.Errorf(protocol.FrameError, protocol.Method{},
			"type %d, %s: unknown_frame", typ, snippet(payload))}
	}
	return Frame{Type: typ, Channel: ch, Payload: payload}, nil
}

// connError closes the connection with a hard error the server detected
// itself. The broker pushes the connection.close, like for its own errors.
func (c *serverConn) connError(err *protocol.Error) {
	c.s.logf("wire: %s: connection error: %s", c.displayName(), err.Text)
	c.mu.Lock()
	sc := c.sc
	c.mu.Unlock()
	if sc == nil || !sc.CloseWithError(err) {
		if !c.closing.Load() {
			c.closeTransport()
		}
	}
}

// decodeError turns a method decoding error into RabbitMQ's connection
// error.
func decodeError(payload []byte, err error) *protocol.Error {
	var we *Error
	if !errors.As(err, &we) {
		return protocol.Errorf(protocol.InternalError, protocol.Method{}, "%v", err)
	}
	switch {
	case errors.Is(err, ErrTruncated), errors.Is(err, ErrTrailingBytes):
		// rabbit_misc:frame_error: "cannot decode ~w" of the arguments.
		return protocol.Errorf(protocol.FrameError, we.Method, "cannot decode %s", erlangBinary(payload[4:], false))
	case errors.Is(err, ErrUnknownMethod):
		return protocol.Errorf(protocol.CommandInvalid, we.Method, "unknown method: class %d, method %d", we.Method.Class, we.Method.ID)
	}
	return we.AMQP()
}

// handleFrame applies one frame of a running connection.
func (c *serverConn) handleFrame(f Frame) {
	if f.Channel == 0 {
		switch f.Type {
		case FrameHeartbeat:
		case FrameMethod:
			c.method0(f.Payload)
		default:
			c.connError(protocol.Errorf(protocol.UnexpectedFrame, protocol.Method{}, "type %d, %s", f.Type, snippet(f.Payload)))
		}
		return
	}
	if f.Type == FrameHeartbeat {
		c.connError(protocol.Errorf(protocol.UnexpectedFrame, protocol.Method{}, "type %d, %s", f.Type, snippet(f.Payload)))
		return
	}
	cs := c.chans[f.Channel]
	if cs != nil && cs.gone.Load() {
		// Closed, as a drain found, which the writer may have made (a
		// close-ok the broker pushed late): the map changes only under
		// callMu.
		c.callMu.Lock()
		delete(c.chans, f.Channel)
		c.callMu.Unlock()
		cs = nil
	}
	if cs == nil {
		c.newChannelFrame(f)
		return
	}
	c.channelFrame(cs, f)
}

// newChannelFrame handles a frame for a channel that is not open, which
// must be channel.open.
func (c *serverConn) newChannelFrame(f Frame) {
	if f.Type != FrameMethod {
		c.connError(protocol.Errorf(protocol.UnexpectedFrame, protocol.Method{}, "expected method frame, got non method frame instead"))
		return
	}
	m, err := DecodeMethod(f.Payload)
	if err != nil {
		c.connError(decodeError(f.Payload, err))
		return
	}
	if _, ok := m.(*ChannelOpen); !ok {
		c.connError(protocol.Errorf(protocol.ChannelError, m.ID(), "expected 'channel.open'"))
		return
	}
	c.call(func() (outItem, bool) {
		ch, err := c.sc.OpenChannel(f.Channel)
		if err != nil {
			return outItem{}, false
		}
		c.chans[f.Channel] = &chanState{id: f.Channel, sim: ch}
		return methodItem(f.Channel, &ChannelOpenOk{}), true
	})
}

// channelFrame assembles content and applies methods on an open channel,
// with the errors of RabbitMQ's command assembler.
func (c *serverConn) channelFrame(cs *chanState, f Frame) {
	switch cs.expect {
	case expectMethod:
		if f.Type != FrameMethod {
			c.connError(protocol.Errorf(protocol.UnexpectedFrame, protocol.Method{}, "expected method frame, got non method frame instead"))
			return
		}
		m, err := cs.scratch.decode(f.Payload)
		if err != nil {
			c.connError(decodeError(f.Payload, err))
			return
		}
		if m.HasContent() {
			cs.pending, cs.expect = m, expectHeader
			return
		}
		c.channelMethod(cs, m)
	case expectHeader:
		id := cs.pending.ID()
		if f.Type != FrameHeader || binary.BigEndian.Uint16(f.Payload[2:]) != 0 {
			c.connError(protocol.Errorf(protocol.UnexpectedFrame, id, "expected content header for class %d, got non content header frame instead", id.Class))
			return
		}
		if class := binary.BigEndian.Uint16(f.Payload); class != id.Class {
			c.connError(protocol.Errorf(protocol.UnexpectedFrame, id, "expected content header for class %d, got one for class %d instead", id.Class, class))
			return
		}
		if size := binary.BigEndian.Uint64(f.Payload[4:]); c.strictSize && size > sim.MaxMessageSizeCap {
			c.connError(protocol.Errorf(protocol.FrameError, id, "content body size %d exceeds maximum allowed size %d", size, uint64(sim.MaxMessageSizeCap)))
			return
		}
		h, err := DecodeHeader(f.Payload)
		if err != nil {
			perr := decodeError(append([]byte{0, 0, 0, 0}, f.Payload...), err)
			perr.Method = id
			c.connError(perr)
			return
		}
		cs.props, cs.size, cs.got, cs.body = h.Properties, h.BodySize, 0, nil
		// Like rabbit_reader, stop reading after a publish's header while
		// an alarm is raised: an empty body completes it first.
		_, publish := cs.pending.(*BasicPublish)
		blocked := publish && c.sc.BlockOnPublish()
		if cs.size == 0 {
			c.contentDone(cs, nil)
		} else {
			cs.expect = expectBody
		}
		if blocked {
			c.waitUnblocked()
		}
	case expectBody:
		if f.Type != FrameBody {
			c.connError(protocol.Errorf(protocol.UnexpectedFrame, cs.pending.ID(), "expected content body, got non content body frame instead"))
			return
		}
		before := cs.got
		if c.strictSize && uint64(len(f.Payload)) > cs.size-before {
			c.connError(protocol.Errorf(protocol.FrameError, cs.pending.ID(), "content body frame exceeds remaining content size"))
			return
		}
		// Until 4.3, a body longer than announced never completes.
		cs.got += uint64(len(f.Payload))
		if before == 0 && cs.got == cs.size {
			// Whole in one frame: the broker copies it from the frame.
			c.contentDone(cs, f.Payload)
			break
		}
		if cs.size <= c.maxBody && cs.got <= cs.size {
			cs.body = append(cs.body, f.Payload...)
		}
		if before < cs.size && cs.got == cs.size {
			c.contentDone(cs, cs.body)
			// The broker copied the body: the channel keeps nothing of
			// it (an idle channel holding its last large message kept
			// the memory alarm up).
			cs.body = nil
		}
	}
}

// waitUnblocked holds the reader while an alarm blocks the connection
// (sim.Broker.SetAlarm), as RabbitMQ's reader stops reading a blocked
// connection's socket and pauses its heartbeat monitor; it returns when
// the alarms clear, the broker closes the connection, or the server
// closes the transport.
func (c *serverConn) waitUnblocked() {
	// What the frames read so far owe the client (their confirms) goes
	// out now: RabbitMQ's channels run on while its reader is blocked.
	c.call(func() (outItem, bool) { c.sc.Idle(); return outItem{}, false })
	c.paused.Store(true)
	defer c.paused.Store(false)
	_ = c.s.Broker.WaitFor(c.gone, func(*sim.Broker) bool { return !c.sc.Blocked() })
}

// waitHung holds the reader while the connection's cluster node is hung
// (sim.Broker.PauseNode): a hung RabbitMQ node reads nothing from its
// sockets, and its heartbeat monitor stands still. It returns when the
// node runs again, or the server closes the transport.
func (c *serverConn) waitHung(sc *sim.Connection) {
	c.paused.Store(true)
	defer c.paused.Store(false)
	_ = c.s.Broker.WaitFor(c.gone, func(*sim.Broker) bool { return !sc.Hung() })
}

// nodeHung reports whether node n of b's cluster is hung (0: no node).
func nodeHung(b *sim.Broker, n int) bool {
	nodes := b.Nodes()
	return n >= 1 && n <= len(nodes) && nodes[n-1].Hung
}

// hung reports whether the connection's cluster node is hung.
func (c *serverConn) hung() bool {
	c.mu.Lock()
	sc := c.sc
	c.mu.Unlock()
	return sc != nil && sc.Hung()
}

// contentDone applies a content method whose body is complete.
func (c *serverConn) contentDone(cs *chanState, body []byte) {
	m := cs.pending
	cs.expect, cs.pending, cs.content = expectMethod, nil, body
	c.channelMethod(cs, m)
	cs.content = nil
}

// whileClosing handles a frame after the server sent connection.close: only
// connection.close and connection.close-ok count. It reports whether the
// connection is done.
func (c *serverConn) whileClosing(f Frame) bool {
	if f.Channel != 0 || f.Type != FrameMethod {
		return false
	}
	m, err := DecodeMethod(f.Payload)
	if err != nil {
		return false
	}
	switch m.(type) {
	case *ConnectionClose:
		c.enqueue(methodItem(0, &ConnectionCloseOk{}))
	case *ConnectionCloseOk:
		return true
	}
	return false
}

// method0 handles a method on channel 0 of a running connection.
func (c *serverConn) method0(payload []byte) {
	m, err := DecodeMethod(payload)
	if err != nil {
		c.connError(decodeError(payload, err))
		return
	}
	switch m.(type) {
	case *ConnectionClose:
		c.clientClosed = true
		c.call(func() (outItem, bool) {
			_ = c.sc.Close()
			it := methodItem(0, &ConnectionCloseOk{})
			it.final = true
			return it, true
		})
	case *ConnectionUpdateSecret:
		c.enqueue(methodItem(0, &ConnectionUpdateSecretOk{}))
	default:
		c.connError(protocol.Errorf(protocol.ChannelError, m.ID(), "unexpected method in connection state running"))
	}
}
