package sim

import (
	"github.com/amqpsim/amqpsim/consumer"
	"github.com/amqpsim/amqpsim/queue"
)

// Consumer is a consumer created by Channel.Consume. The deliveries the
// broker pushes to it wait in its connection's outbox, in order, to be read
// with Next or Deliveries (or taken with the rest by Connection.Drain);
// nothing runs in the background.
type Consumer struct {
	ch   *Channel
	q    *brokerQueue                  // nil for the reply consumer
	core *consumer.Consumer[*Consumer] // nil for the reply consumer
	// tag and queue are its consumer tag and its queue's name (ReplyTo
	// for the reply consumer), which never change.
	tag, queue string
	// lane indexes its deliveries in the outbox, for Next.
	lane lane
	// followsClock is set when the broker follows a clock (Config.Clock),
	// whose due timers fire when a caller takes the lock: Next must lock
	// even when its lane is empty. A copy of the configuration's, to keep
	// Next small enough to inline.
	followsClock bool
	cancelled    bool
	// suspected: its node crashed, and its queue keeps it, with its
	// deliveries, until the node is back (cluster_consumers.go).
	suspected bool
	// stranded: its node was cut off from its queue's leader, which the
	// queue does not survive there (cluster_streams.go); it reads nothing
	// more.
	stranded bool
	// inTransit are messages its queue checked out to it that never
	// reached it: its node has no member of the queue to deliver them.
	inTransit []*queue.Message
	// args are basic.consume's arguments, for inspection.
	args Table
}

// Tag returns the consumer tag.
func (c *Consumer) Tag() string { return c.tag }

// Queue returns the name of the queue it consumes from.
func (c *Consumer) Queue() string { return c.queue }

// Next takes the oldest delivery to the consumer not yet taken, if any.
func (c *Consumer) Next() (d Delivery, ok bool) {
	// Small enough to inline: a reader that polls its consumers pays no
	// call for one with nothing. Without a followed clock nothing arrives
	// but by a call, which would have counted it: no need to lock.
	if c.lane.waiting.Load() != 0 || c.followsClock {
		ok = c.take(&d)
	}
	return
}

// take is Next when the lane may hold a delivery: it fills d, which is
// zero, in place (a Delivery is large).
func (c *Consumer) take(d *Delivery) bool {
	b := c.ch.b
	b.mu.Lock()
	if c.ch.conn.hung() {
		b.mu.unlockView() // its node sends nothing (cluster_pause.go)
		return false
	}
	var it outItem
	if !c.ch.conn.out.next(&c.lane, &it) {
		b.mu.unlockView() // nothing changed
		return false
	}
	c.ch.conn.taken()
	d.set(c.tag, it.tag, it.redelivered, c.queue, it.msg)
	b.mu.Unlock()
	return true
}

// Deliveries returns every delivery not yet read, oldest first, and marks
// them read.
func (c *Consumer) Deliveries() []Delivery {
	var out []Delivery
	for {
		d, ok := c.Next()
		if !ok {
			return out
		}
		out = append(out, d)
	}
}

// Cancelled reports whether the consumer is gone: cancelled by the client,
// by the broker (its queue was deleted), or with its channel. A 4.3
// quorum queue's consumer timeout sends basic.cancel but leaves the
// consumer registered, as RabbitMQ 4.3.6 does: it is not cancelled, and
// takes messages again once the client has settled the timed-out
// deliveries (ConsumerStats.TimedOut).
func (c *Consumer) Cancelled() bool {
	c.ch.b.mu.Lock()
	defer c.ch.b.mu.unlockView()
	return c.cancelled
}

// Stats returns the consumer's credit window.
func (c *Consumer) Stats() ConsumerStats {
	c.ch.b.mu.Lock()
	defer c.ch.b.mu.unlockView()
	return c.stats()
}

func (c *Consumer) stats() ConsumerStats {
	if c.core == nil {
		return ConsumerStats{Tag: c.tag, Queue: ReplyTo, Channel: c.ch.id, NoAck: true, Active: !c.cancelled}
	}
	cc := c.core
	prefetch := cc.Prefetch
	if cc.NoAck {
		prefetch = 0
	}
	active := !c.q.caps.SingleActive || c.q.ActiveConsumer() == cc
	return ConsumerStats{
		Tag: cc.Tag, Queue: c.q.Name(), Channel: c.ch.id, Prefetch: prefetch, Outstanding: cc.Outstanding(),
		NoAck: cc.NoAck, Priority: cc.Priority, Blocked: cc.Blocked(), TimedOut: cc.Paused(), Active: active && !c.cancelled,
		Exclusive: cc.Exclusive, Args: c.args,
	}
}

// makeDelivery is the client's view of a message delivered with tag.
func makeDelivery(ctag string, tag uint64, redelivered bool, queueName string, m *queue.Message) Delivery {
	var d Delivery
	d.set(ctag, tag, redelivered, queueName, m)
	return d
}

// set makes d, which is zero, makeDelivery's delivery.
func (d *Delivery) set(ctag string, tag uint64, redelivered bool, queueName string, m *queue.Message) {
	d.ConsumerTag, d.DeliveryTag, d.Redelivered, d.Exchange, d.RoutingKey = ctag, tag, redelivered, m.Exchange, m.RoutingKey
	d.Queue, d.MessageID, d.Body = queueName, m.ID, m.Body
	if m.Properties != nil {
		d.Properties = *m.Properties
	}
}
