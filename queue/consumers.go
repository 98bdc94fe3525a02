package queue

import (
	"slices"

	"github.com/amqpsim/amqpsim/consumer"
	"github.com/amqpsim/amqpsim/protocol"
)

// ConsumerCount returns the number of consumers, blocked and waiting ones
// included (what queue.declare-ok reports).
func (q *Queue) ConsumerCount() int { return len(q.consumers) }

// HadConsumer reports whether the queue ever had a consumer; an auto-delete
// queue is deleted when its last consumer goes, and only then.
func (q *Queue) HadConsumer() bool { return q.hadConsumer }

// Consumers returns the consumers in registration order.
func (q *Queue) Consumers() []*consumer.Consumer { return q.consumers }

// ActiveConsumer returns the single active consumer of an
// x-single-active-consumer queue, or nil.
func (q *Queue) ActiveConsumer() *consumer.Consumer { return q.sacActive }

// AdmitConsumer checks whether a new consumer may join, with RabbitMQ's
// error when it may not: an exclusive consumer needs a queue without
// consumers, no consumer may join beside an exclusive one, and a single
// active consumer queue refuses exclusive consumers.
func (q *Queue) AdmitConsumer(exclusive bool) error {
	if q.exclusiveC || (exclusive && (len(q.consumers) > 0 || q.singleActive)) {
		return protocol.Errorf(protocol.AccessRefused, protocol.BasicConsume, "%s in exclusive use", q.Resource())
	}
	return nil
}

// AddConsumer registers a consumer; it joins the tail of its priority band.
// Call AdmitConsumer first.
func (q *Queue) AddConsumer(c *consumer.Consumer) {
	q.consumers = append(q.consumers, c)
	q.hadConsumer = true
	if c.Exclusive {
		q.exclusiveC = true
	}
	if q.singleActive && q.sacActive == nil {
		q.sacActive = c
	}
	q.rotation.Add(c)
}

// RemoveConsumer unregisters a consumer. On a single active consumer queue,
// losing the active one promotes the waiting consumer with the highest
// priority, earliest registered first.
func (q *Queue) RemoveConsumer(c *consumer.Consumer) {
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

// Credit gives credit back to consumers of this queue after settlements;
// see consumer.Rotation.Credit.
func (q *Queue) Credit(settled []*consumer.Consumer) { q.rotation.Credit(settled) }

// Resume clears the suspension of a channel's consumers of this queue.
func (q *Queue) Resume(g *consumer.Group) { q.rotation.Resume(g) }

// Dispatch hands ready messages to consumers until none is ready or no
// consumer can take one. allow is the channel-wide limiter (see
// consumer.Rotation.Pick); deliver records the delivery. fetched, if not
// nil, runs after every fetch: RabbitMQ's fetch takes the head even if it
// has expired and drops expired heads only afterwards (drop_expired_msgs),
// so nothing is dropped before the first fetch. It returns the number of
// messages delivered.
func (q *Queue) Dispatch(allow func(c *consumer.Consumer) bool, deliver func(c *consumer.Consumer, m *Message, redelivered bool), fetched func(q *Queue)) int {
	n := 0
	for q.readyCount > 0 {
		var c *consumer.Consumer
		if q.singleActive {
			if q.sacActive == nil || !q.rotation.Offer(q.sacActive, allow) {
				break
			}
			c = q.sacActive
		} else if c = q.rotation.Pick(allow); c == nil {
			break
		}
		m, redelivered := q.Fetch(!c.NoAck)
		q.rotation.Delivered(c)
		deliver(c, m, redelivered)
		if fetched != nil {
			fetched(q)
		}
		n++
	}
	return n
}
