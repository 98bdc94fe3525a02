package queue

import (
	"slices"

	"github.com/amqpsim/amqpsim/consumer"
	"github.com/amqpsim/amqpsim/protocol"
)

// ConsumerCount returns the number of consumers, blocked and waiting ones
// included (what queue.declare-ok reports).
func (q *classic[T]) ConsumerCount() int { return len(q.consumers) }

// HadConsumer reports whether the queue ever had a consumer; an auto-delete
// queue is deleted when its last consumer goes, and only then.
func (q *classic[T]) HadConsumer() bool { return q.hadConsumer }

// Consumers returns the consumers in registration order.
func (q *classic[T]) Consumers() []*consumer.Consumer[T] { return q.consumers }

// ActiveConsumer returns the single active consumer of an
// x-single-active-consumer queue, or nil.
func (q *classic[T]) ActiveConsumer() *consumer.Consumer[T] { return q.sacActive }

// AdmitConsumer checks whether a new consumer may join, with RabbitMQ's
// error when it may not: an exclusive consumer needs a queue without
// consumers, no consumer may join beside an exclusive one, and a single
// active consumer queue refuses exclusive consumers.
func (q *classic[T]) AdmitConsumer(exclusive bool) error {
	if q.exclusiveC || (exclusive && (len(q.consumers) > 0 || q.caps.SingleActive)) {
		return protocol.Errorf(protocol.AccessRefused, protocol.BasicConsume, "%s in exclusive use", q.Resource())
	}
	return nil
}

// AddConsumer registers a consumer; it joins the tail of its priority band.
// Call AdmitConsumer first.
func (q *classic[T]) AddConsumer(c *consumer.Consumer[T]) {
	q.consumers = append(q.consumers, c)
	q.hadConsumer = true
	if c.Exclusive {
		q.exclusiveC = true
	}
	if q.caps.SingleActive && q.sacActive == nil {
		q.sacActive = c
	}
	q.rotation.Add(c)
}

// RemoveConsumer unregisters a consumer. On a single active consumer queue,
// losing the active one promotes the waiting consumer with the highest
// priority, earliest registered first.
func (q *classic[T]) RemoveConsumer(c *consumer.Consumer[T]) {
	i := slices.Index(q.consumers, c)
	if i < 0 {
		return
	}
	q.consumers = slices.Delete(q.consumers, i, i+1)
	q.rotation.Remove(c)
	if c.Exclusive {
		q.exclusiveC = false
	}
	if q.sacActive == c {
		q.sacActive = nil
		for _, w := range q.consumers {
			if q.sacActive == nil || w.Priority > q.sacActive.Priority {
				q.sacActive = w
			}
		}
	}
}

// Resume clears the suspension of a channel's consumers of this queue.
func (q *classic[T]) Resume(g *consumer.Group[T]) { q.rotation.Resume(g) }

// Dispatch hands ready messages to consumers until none is ready or no
// consumer can take one, dropping the expired head messages after every
// fetch: RabbitMQ's fetch takes the head even if it has expired and drops
// expired heads only afterwards (drop_expired_msgs). It returns the number
// of messages delivered.
func (q *classic[T]) Dispatch() int {
	if q.readyCount == 0 {
		// Nothing to hand out, as after most publishes and settlements:
		// small enough to inline, this costs the broker's dispatch no
		// call of dispatch.
		return 0
	}
	return q.dispatch(true)
}

// dispatch is Dispatch; dropAfterFetch false skips drop_expired_msgs, for
// attempt_delivery of a publish.
func (q *classic[T]) dispatch(dropAfterFetch bool) int {
	n := 0
	for q.readyCount > 0 {
		var c *consumer.Consumer[T]
		if q.caps.SingleActive {
			if q.sacActive == nil || !q.rotation.Offer(q.sacActive, q.canSend) {
				break
			}
			c = q.sacActive
		} else if c = q.rotation.Pick(q.canSend); c == nil {
			break
		}
		m, redelivered := q.fetch(!c.NoAck)
		q.rotation.Delivered(c)
		q.env.Deliver(c, m, redelivered)
		if dropAfterFetch {
			q.dropExpired()
		}
		n++
	}
	return n
}
