package sim

import (
	"slices"

	"github.com/amqpsim/amqpsim/protocol"
)

// confirms are a confirm-mode channel's publish tags ready to be
// confirmed: RabbitMQ's channel collects them and sends them when its
// mailbox runs empty (noreply_coalesce), coalesced.
type confirms struct {
	acked, nacked []uint64
}

// confirm records a publish: acked, or nacked when a queue refused it.
func (c *confirms) confirm(tag uint64, nack bool) {
	if nack {
		c.nacked = append(c.nacked, tag)
	} else {
		c.acked = append(c.acked, tag)
	}
}

// send pushes what is ready as rabbit_channel:send_confirms_and_nacks does:
// one basic.ack without multiple for a lone tag; otherwise the tags below
// the first nacked one in one basic.ack with multiple, the others one by
// one; then the nacks the same way, the acked tags cutting them (no
// publish stays unconfirmed in the simulator, so nothing else does).
func (c *confirms) send(ch *Channel) {
	switch len(c.acked) {
	case 0:
	case 1:
		ch.push(Push{Method: protocol.BasicAck, Delivery: Delivery{DeliveryTag: c.acked[0]}})
	default:
		coalesce(ch, protocol.BasicAck, c.acked, c.nacked)
	}
	if len(c.nacked) > 0 {
		coalesce(ch, protocol.BasicNack, c.nacked, c.acked)
	}
	c.acked, c.nacked = c.acked[:0], c.nacked[:0]
}

// coalesce is rabbit_channel:coalesce_and_send with nothing unconfirmed.
func coalesce(ch *Channel, m protocol.Method, tags, negative []uint64) {
	slices.Sort(tags)
	cutoff := tags[len(tags)-1] + 1
	for _, n := range negative {
		cutoff = min(cutoff, n)
	}
	i := 0
	for i < len(tags) && tags[i] < cutoff {
		i++
	}
	if i > 0 {
		ch.push(Push{Method: m, Multiple: true, Delivery: Delivery{DeliveryTag: tags[i-1]}})
	}
	for _, t := range tags[i:] {
		ch.push(Push{Method: m, Delivery: Delivery{DeliveryTag: t}})
	}
}

// Idle tells the broker that the client's frames received so far have all
// been applied: its channels' mailboxes ran empty. They send the publisher
// confirms they hold, and then what their queues pushed in reaction to
// those frames. A shell that sets ConnectOptions.Batched calls it whenever
// its reader has nothing more buffered, so that the publishes of one read
// are confirmed together, and a delivery that an ack released reaches the
// client after the channel's replies to the frames read with that ack, as
// RabbitMQ sends them; without Batched every call ends idle.
func (c *Connection) Idle() {
	c.b.mu.Lock()
	defer c.b.mu.Unlock()
	c.idle()
}

// endCall ends a client's method call: unless the connection is batched,
// it is idle.
func (c *Connection) endCall() {
	if !c.opts.Batched {
		c.idle()
	}
}

func (c *Connection) idle() {
	if c.pendingConfirms > 0 {
		c.sendConfirms()
	}
	c.out.endCall()
}

// sendConfirms sends every channel's ready publisher confirms.
func (c *Connection) sendConfirms() {
	c.pendingConfirms = 0
	open := c.confirmingOrder[:0]
	for _, ch := range c.confirmingOrder {
		if ch.closed != nil { // a closing channel sends no confirms
			continue
		}
		open = append(open, ch)
		if len(ch.ready.acked)+len(ch.ready.nacked) > 0 {
			ch.ready.send(ch)
		}
	}
	clear(c.confirmingOrder[len(open):])
	c.confirmingOrder = open
}
