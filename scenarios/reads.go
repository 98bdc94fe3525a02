package scenarios

import (
	"encoding/binary"
	"math/rand/v2"
	"net"
	"sync"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/wire"
)

// Reads says how the server's socket reads cut what a client writes, over
// the in-memory wire (ReplayWireWith). RabbitMQ parses frames out of
// whatever each read brings: its answers do not depend on where the reads
// end, and a simulator's must not either.
type Reads int

const (
	// ReadsAsWritten gives the server what the client wrote as it comes:
	// amqp091-go writes each method with its content in one write.
	ReadsAsWritten Reads = iota
	// ReadsSplit ends the server's reads at random places, inside frames
	// too: no read brings more than 64 bytes.
	ReadsSplit
	// ReadsCoalesced holds a client's asynchronous methods (publishes,
	// settlements, close-oks) until it sends a method that waits for an
	// answer or the step ends, so that they reach the server in one read,
	// as a client that writes in batches sends them.
	ReadsCoalesced
)

// String returns "as written", "split" or "coalesced".
func (r Reads) String() string {
	switch r {
	case ReadsSplit:
		return "split"
	case ReadsCoalesced:
		return "coalesced"
	}
	return "as written"
}

// splitConn is a server's end of the wire whose reads bring at most a
// random 1 to 64 bytes.
type splitConn struct {
	net.Conn
	mu sync.Mutex
	r  *rand.Rand
}

func (c *splitConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	n := 1 + c.r.IntN(64)
	c.mu.Unlock()
	return c.Conn.Read(p[:min(len(p), n)])
}

// coalescingConn is a client's end of the wire that holds its
// asynchronous methods back (ReadsCoalesced). It keeps whole frames:
// what a write brings past the last complete frame waits for the next.
type coalescingConn struct {
	net.Conn
	mu      sync.Mutex
	partial []byte // bytes not yet a whole frame
	held    []byte // whole frames held back
	header  bool   // the protocol header was passed on
}

// asyncMethods are the client methods no answer follows.
var asyncMethods = map[protocol.Method]bool{
	protocol.BasicPublish: true, protocol.BasicAck: true, protocol.BasicNack: true, protocol.BasicReject: true,
	protocol.ChannelCloseOk: true, protocol.ConnectionCloseOk: true, protocol.ChannelFlowOk: true,
}

func (c *coalescingConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.header {
		// The protocol header and the handshake go as they come.
		c.header = true
		return c.Conn.Write(p)
	}
	c.partial = append(c.partial, p...)
	for len(c.partial) >= 7 {
		size := int(binary.BigEndian.Uint32(c.partial[3:7]))
		end := 7 + size + 1
		if len(c.partial) < end {
			break
		}
		frame := c.partial[:end]
		c.held = append(c.held, frame...)
		c.partial = c.partial[end:]
		if frame[0] == byte(wire.FrameMethod) && size >= 4 {
			m := protocol.Method{Class: binary.BigEndian.Uint16(frame[7:9]), ID: binary.BigEndian.Uint16(frame[9:11])}
			if !asyncMethods[m] {
				if err := c.flushLocked(); err != nil {
					return 0, err
				}
			}
		}
	}
	return len(p), nil
}

// flush passes on the frames held back, in one write.
func (c *coalescingConn) flush() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.flushLocked()
}

// pending reports whether frames are held back.
func (c *coalescingConn) pending() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.held) > 0
}

func (c *coalescingConn) flushLocked() error {
	if len(c.held) == 0 {
		return nil
	}
	_, err := c.Conn.Write(c.held)
	c.held = c.held[:0]
	return err
}

func (c *coalescingConn) Close() error {
	_ = c.flush()
	return c.Conn.Close()
}
