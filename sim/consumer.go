package sim

import (
	"github.com/amqpsim/amqpsim/consumer"
	"github.com/amqpsim/amqpsim/queue"
)

// Consumer is a consumer created by Channel.Consume. When its connection has
// no sink, the deliveries the broker pushes to it wait here, in order, to be
// read with Next; nothing runs in the background.
type Consumer struct {
	ch        *Channel
	q         *queue.Queue
	core      consumer.Consumer
	inbox     []Delivery // pushed deliveries; inbox[read:] are unread
	read      int
	cancelled bool
}

// Tag returns the consumer tag.
func (c *Consumer) Tag() string { return c.core.Tag }

// Queue returns the name of the queue it consumes from.
func (c *Consumer) Queue() string { return c.q.Name }

// push appends a delivery to the inbox, reusing the space of read ones so a
// consumer that is read while it is fed keeps one buffer.
func (c *Consumer) push(d Delivery) {
	if len(c.inbox) == cap(c.inbox) && c.read > 0 {
		n := copy(c.inbox, c.inbox[c.read:])
		clear(c.inbox[n:])
		c.inbox, c.read = c.inbox[:n], 0
	}
	c.inbox = append(c.inbox, d)
}

// Next returns the oldest delivery not yet read, if any.
func (c *Consumer) Next() (Delivery, bool) {
	c.ch.b.mu.Lock()
	defer c.ch.b.mu.Unlock()
	if c.read == len(c.inbox) {
		return Delivery{}, false
	}
	d := c.inbox[c.read]
	c.inbox[c.read] = Delivery{}
	c.read++
	if c.read == len(c.inbox) {
		// Everything is read: start again at the front of the array, so a
		// consumer read as fast as it is fed reuses one buffer.
		c.inbox, c.read = c.inbox[:0], 0
	}
	return d, true
}

// Deliveries returns every delivery not yet read, oldest first, and marks
// them read.
func (c *Consumer) Deliveries() []Delivery {
	c.ch.b.mu.Lock()
	defer c.ch.b.mu.Unlock()
	out := append([]Delivery(nil), c.inbox[c.read:]...)
	clear(c.inbox)
	c.inbox, c.read = c.inbox[:0], 0
	return out
}

// Cancelled reports whether the consumer is gone: cancelled by the client,
// by the broker (its queue was deleted), or with its channel.
func (c *Consumer) Cancelled() bool {
	c.ch.b.mu.Lock()
	defer c.ch.b.mu.Unlock()
	return c.cancelled
}

// Stats returns the consumer's credit window.
func (c *Consumer) Stats() ConsumerStats {
	c.ch.b.mu.Lock()
	defer c.ch.b.mu.Unlock()
	return c.stats()
}

func (c *Consumer) stats() ConsumerStats {
	cc := &c.core
	prefetch := cc.Prefetch
	if cc.NoAck {
		prefetch = 0
	}
	active := !c.q.SingleActive() || c.q.ActiveConsumer() == cc
	return ConsumerStats{
		Tag: cc.Tag, Queue: c.q.Name, Channel: c.ch.id, Prefetch: prefetch, Outstanding: cc.Outstanding,
		NoAck: cc.NoAck, Priority: cc.Priority, Blocked: cc.Blocked(), Active: active && !c.cancelled,
	}
}
