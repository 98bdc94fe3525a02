// Package channel models one AMQP channel's delivery bookkeeping as RabbitMQ
// 3.10 keeps it: delivery tags, the ledger of unacked deliveries in tag order,
// the prefetch new consumers will get (basic.qos global=false), the
// channel-wide limiter (basic.qos global=true), and which deliveries an ack,
// nack, reject or recover settles, with RabbitMQ's errors.
//
// The channel decides what is settled; the broker applies the settlement to
// queues and consumers.
package channel

import (
	"time"

	"github.com/amqpsim/amqpsim/consumer"
	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/queue"
)

// Delivery is one unacked delivery in a channel's ledger.
type Delivery struct {
	Tag      uint64
	Queue    *queue.Queue
	Message  *queue.Message
	Consumer *consumer.Consumer // nil for basic.get
	At       time.Time          // virtual time of the delivery
}

// Channel is one channel's delivery state.
type Channel struct {
	ID uint16
	// Prefetch is the per-consumer window that consumers created from now on
	// get (the last basic.qos with global=false); 0 means unlimited.
	Prefetch int
	// Limiter is the channel-wide limit (basic.qos global=true).
	Limiter Limiter

	lastTag uint64
	ledger  ledger
}

// New returns a channel with the given number.
func New(id uint16) *Channel { return &Channel{ID: id} }

// NextTag allocates the next delivery tag. Tags start at 1 and grow by one
// for every basic.deliver and basic.get-ok, no-ack ones included.
func (c *Channel) NextTag() uint64 {
	c.lastTag++
	return c.lastTag
}

// LastTag returns the last delivery tag allocated, 0 before the first.
func (c *Channel) LastTag() uint64 { return c.lastTag }

// Record adds an ack-mode delivery to the ledger.
func (c *Channel) Record(d Delivery) { c.ledger.push(d) }

// Unacked returns the number of unacked deliveries on the channel.
func (c *Channel) Unacked() int { return c.ledger.len() }

// Oldest returns the oldest unacked delivery, or nil.
func (c *Channel) Oldest() *Delivery { return c.ledger.oldest() }

// Deliveries returns the unacked deliveries in tag order.
func (c *Channel) Deliveries() []Delivery { return c.ledger.all() }

// Qos applies basic.qos as RabbitMQ does. prefetch_size must be 0 (otherwise
// 540 NOT_IMPLEMENTED, a connection error). global=false sets the prefetch
// of future consumers and removes the channel-wide limit; global=true sets the
// channel-wide limit, which applies at once. It returns the consumer groups
// to resume because the limit was raised or removed.
func (c *Channel) Qos(prefetchSize uint32, prefetchCount uint16, global bool) ([]*consumer.Group, error) {
	if prefetchSize != 0 {
		return nil, protocol.Errorf(protocol.NotImplemented, protocol.BasicQos, "prefetch_size!=0 (%d)", prefetchSize)
	}
	if !global {
		c.Prefetch = int(prefetchCount)
		return c.Limiter.set(0, 0), nil
	}
	return c.Limiter.set(int(prefetchCount), c.ledger.len()), nil
}

// Settle removes the deliveries an ack, nack or reject names from the ledger
// and returns them, oldest first. multiple settles every delivery up to and
// including tag, which must itself be unacked; tag 0 with multiple settles
// all. An unknown tag is RabbitMQ's 406 "unknown delivery tag", and then
// nothing is settled. The deliveries are appended to buf.
func (c *Channel) Settle(m protocol.Method, tag uint64, multiple bool, buf []Delivery) ([]Delivery, error) {
	if multiple && tag == 0 {
		return append(buf, c.ledger.takeAll()...), nil
	}
	i, ok := c.ledger.find(tag)
	if !ok {
		return buf, protocol.Errorf(protocol.PreconditionFailed, m, "unknown delivery tag %d", tag)
	}
	if multiple {
		return c.ledger.takeThrough(i, buf), nil
	}
	return append(buf, c.ledger.take(i)), nil
}

// TakeAll empties the ledger (basic.recover, channel close) and returns its
// deliveries oldest first.
func (c *Channel) TakeAll() []Delivery { return c.ledger.takeAll() }

// Released tells the limiter that deliveries were settled. Only consumer
// deliveries count (RabbitMQ's notify_limiter skips basic.get ones). It
// returns the groups to resume.
func (c *Channel) Released(ds []Delivery) []*consumer.Group {
	if !c.Limiter.Active() {
		return nil
	}
	n := 0
	for _, d := range ds {
		if d.Consumer != nil {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	return c.Limiter.ack(n)
}
