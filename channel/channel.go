// Package channel models one AMQP channel's delivery bookkeeping as RabbitMQ
// 3.10 keeps it: delivery tags, the ledger of unacked deliveries in tag order,
// the prefetch new consumers will get (basic.qos global=false), the
// channel-wide limiter (basic.qos global=true), which deliveries an ack,
// nack, reject or recover settles, with RabbitMQ's errors, and the groups in
// which RabbitMQ's channel hands settlements to its queues.
//
// The channel decides what is settled; the broker applies the settlement to
// queues and consumers. Q names a queue (the limiter remembers the queues it
// refused); R is the broker's reference to a delivery.
package channel

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/amqpsim/amqpsim/protocol"
)

// Delivery is one unacked delivery in a channel's ledger.
type Delivery[R any] struct {
	Tag uint64
	// Queue is the creation number of the queue the delivery came from;
	// settlement groups are in this order.
	Queue uint64
	// ConsumerTag is the consumer's tag, "" for basic.get.
	ConsumerTag string
	At          time.Time // virtual time of the delivery
	Ref         R         // the broker's reference
}

// Channel is one channel's delivery state.
type Channel[Q comparable, R any] struct {
	// prefetch is the per-consumer window that consumers created from now
	// on get (the last basic.qos with global=false); 0 means unlimited.
	prefetch int
	limiter  limiter[Q]
	lastTag  uint64
	ledger   ledger[R]
}

// New returns a channel with no deliveries and no limits.
func New[Q comparable, R any]() *Channel[Q, R] { return &Channel[Q, R]{} }

// Prefetch returns the prefetch consumers created from now on get; 0 is
// unlimited.
func (c *Channel[Q, R]) Prefetch() int { return c.prefetch }

// GlobalLimit returns the channel-wide limit (0: none) and RabbitMQ's
// limiter volume.
func (c *Channel[Q, R]) GlobalLimit() (limit, volume int) { return c.limiter.limit, c.limiter.volume }

// NextTag allocates the next delivery tag. Tags start at 1 and grow by one
// for every basic.deliver and basic.get-ok, no-ack ones included.
func (c *Channel[Q, R]) NextTag() uint64 {
	c.lastTag++
	return c.lastTag
}

// LastTag returns the last delivery tag allocated, 0 before the first.
func (c *Channel[Q, R]) LastTag() uint64 { return c.lastTag }

// Record adds an ack-mode delivery to the ledger.
func (c *Channel[Q, R]) Record(d Delivery[R]) { c.ledger.push(d) }

// Unacked returns the number of unacked deliveries on the channel.
func (c *Channel[Q, R]) Unacked() int { return c.ledger.len() }

// Oldest returns the oldest unacked delivery, or nil.
func (c *Channel[Q, R]) Oldest() *Delivery[R] { return c.ledger.oldest() }

// Deliveries returns the unacked deliveries in tag order.
func (c *Channel[Q, R]) Deliveries() []Delivery[R] { return c.ledger.all() }

// Qos applies basic.qos as RabbitMQ does. prefetch_size must be 0 (otherwise
// 540 NOT_IMPLEMENTED, a connection error). global=false sets the prefetch
// of future consumers and removes the channel-wide limit; global=true sets the
// channel-wide limit, which applies at once. It returns the queues to resume
// because the limit was raised or removed.
func (c *Channel[Q, R]) Qos(prefetchCount uint16, prefetchSize uint32, global bool) ([]Q, error) {
	if prefetchSize != 0 {
		return nil, protocol.Errorf(protocol.NotImplemented, protocol.BasicQos, "prefetch_size!=0 (%d)", prefetchSize)
	}
	if !global {
		c.prefetch = int(prefetchCount)
		return c.limiter.set(0, 0), nil
	}
	return c.limiter.set(int(prefetchCount), c.ledger.len()), nil
}

// Allow is the channel-wide limiter's can_send for a delivery from queue
// q: it refuses while the limit is reached, remembering q to resume when
// there is room again, and otherwise counts an ack-mode delivery.
func (c *Channel[Q, R]) Allow(q Q, ackRequired bool) bool { return c.limiter.allow(q, ackRequired) }

// Forget drops a queue the limiter would resume (it was deleted, or the
// channel's last consumer of it left).
func (c *Channel[Q, R]) Forget(q Q) { c.limiter.forget(q) }

// Settle removes the deliveries an ack, nack or reject names from the ledger
// and returns them, oldest first. multiple settles every delivery up to and
// including tag, which must itself be unacked; tag 0 with multiple settles
// all. An unknown tag is RabbitMQ's 406 "unknown delivery tag", and then
// nothing is settled. The deliveries are appended to buf.
func (c *Channel[Q, R]) Settle(m protocol.Method, tag uint64, multiple bool, buf []Delivery[R]) ([]Delivery[R], error) {
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
	return c.ledger.take(i, buf), nil
}

// Restore puts settled deliveries back in the ledger, in tag order, as
// RabbitMQ's tx.rollback returns a transaction's acks to the unacked
// deliveries.
func (c *Channel[Q, R]) Restore(ds []Delivery[R]) {
	if len(ds) == 0 {
		return
	}
	all := append(c.ledger.takeAll(), ds...)
	slices.SortFunc(all, func(x, y Delivery[R]) int { return cmp.Compare(x.Tag, y.Tag) })
	for _, d := range all {
		c.ledger.push(d)
	}
}

// TakeAll empties the ledger (basic.recover, channel close) and returns its
// deliveries oldest first.
func (c *Channel[Q, R]) TakeAll() []Delivery[R] { return c.ledger.takeAll() }

// Released tells the limiter that deliveries were settled. Only consumer
// deliveries count (RabbitMQ's notify_limiter skips basic.get ones). It
// returns the queues to resume.
func (c *Channel[Q, R]) Released(ds []Delivery[R]) []Q {
	if c.limiter.limit == 0 {
		// No channel-wide limit, the common case: small enough to
		// inline, this costs a settlement no call.
		return nil
	}
	return c.released(ds)
}

// released is Released under a channel-wide limit.
func (c *Channel[Q, R]) released(ds []Delivery[R]) []Q {
	n := 0
	for _, d := range ds {
		if d.ConsumerTag != "" {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	return c.limiter.ack(n)
}

// Groups calls settle for each of RabbitMQ's settlement groups of ds, in
// order. RabbitMQ's channel hands a settlement to its queues as one message
// per (queue, consumer tag): queues in creation order, each basic.get
// delivery alone in tag order (a get's pending ack is keyed by its delivery
// tag), then consumer tags in ascending order. Each queue settles and
// dispatches its group before the next one is sent, so the redeliveries of
// one group precede the requeue of the next (measured on RabbitMQ 3.10.8
// with basic.recover and nack multiple; get m1, get m2, nack m1 with
// requeue, get m1, then nack all with requeue gives a prefetch-1 consumer
// m2, not m1). ds, oldest first, is sorted in place.
func Groups[R any](ds []Delivery[R], settle func(group []Delivery[R])) {
	if len(ds) > 1 {
		slices.SortStableFunc(ds, func(x, y Delivery[R]) int {
			if c := cmp.Compare(x.Queue, y.Queue); c != 0 {
				return c
			}
			return strings.Compare(x.ConsumerTag, y.ConsumerTag)
		})
	}
	for i := 0; i < len(ds); {
		j := groupEnd(ds, i)
		settle(ds[i:j])
		i = j
	}
}

// groupEnd returns the end of the settlement group that starts at ds[i].
func groupEnd[R any](ds []Delivery[R], i int) int {
	q, tag := ds[i].Queue, ds[i].ConsumerTag
	j := i + 1
	if tag == "" {
		return j
	}
	for j < len(ds) && ds[j].Queue == q && ds[j].ConsumerTag == tag {
		j++
	}
	return j
}
