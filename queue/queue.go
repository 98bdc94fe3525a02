// Package queue models one RabbitMQ classic queue: its ready messages in
// sequence order (a requeued message returns to its original place), the count
// of messages delivered and not yet settled, its arguments, and dispatch, which
// hands the head message to the next consumer the rotation picks.
//
// A queue knows nothing of channels or delivery tags; the broker passes in the
// channel-wide limiter as a function and records deliveries itself.
package queue

import (
	"fmt"

	"github.com/amqpsim/amqpsim/consumer"
	"github.com/amqpsim/amqpsim/protocol"
)

// Message is one message in one queue. A message routed to several queues is
// one Message per queue; they share Body and Properties, which are never
// modified.
type Message struct {
	Seq        uint64 // enqueue order in this queue; a requeue keeps it
	Exchange   string
	RoutingKey string
	Properties *protocol.Properties // nil when the publisher set none
	Body       []byte
	// Delivered is set once the message has been fetched (delivered or got)
	// from this queue: the next fetch has redelivered=true.
	Delivered bool
	// Expiry is when the message expires, in virtual Unix nanoseconds; 0
	// means never. It is set at enqueue and kept across requeues.
	Expiry   int64
	priority uint8
}

// Options are the queue.declare settings that make a queue what it is.
type Options struct {
	Durable    bool
	Exclusive  bool
	AutoDelete bool
	Args       protocol.Table
}

// Queue is one classic queue.
type Queue struct {
	// ID orders queues by creation; the broker sets it.
	ID    uint64
	Vhost string
	Name  string
	Options
	// Owner identifies the connection of an exclusive queue.
	Owner any
	// Deleted is set when the queue is deleted; settlements of its old
	// deliveries are then ignored, as RabbitMQ ignores them.
	Deleted bool

	maxPriority  int // 0: not a priority queue
	singleActive bool
	limits       Limits

	levels      []readyList // one per priority 0..maxPriority
	readyCount  int
	readyBytes  int64
	unacked     int
	nextSeq     uint64
	rotation    consumer.Rotation
	consumers   []*consumer.Consumer // registration order
	sacActive   *consumer.Consumer   // single active consumer
	exclusiveC  bool                 // an exclusive consumer holds the queue
	hadConsumer bool
}

// New makes a queue after validating its arguments as RabbitMQ does.
func New(vhost, name string, opt Options) (*Queue, error) {
	q := &Queue{Vhost: vhost, Name: name, Options: opt}
	if err := q.applyArgs(); err != nil {
		return nil, err
	}
	q.levels = make([]readyList, q.maxPriority+1)
	return q, nil
}

// Resource names the queue as RabbitMQ does in error texts.
func (q *Queue) Resource() string {
	return fmt.Sprintf("queue '%s' in vhost '%s'", q.Name, q.Vhost)
}

// Ready returns the number of ready messages (what queue.declare-ok reports).
func (q *Queue) Ready() int { return q.readyCount }

// ReadyBytes returns the body bytes of the ready messages.
func (q *Queue) ReadyBytes() int64 { return q.readyBytes }

// Unacked returns the number of messages delivered and not yet settled.
func (q *Queue) Unacked() int { return q.unacked }

// SingleActive reports whether the queue has x-single-active-consumer.
func (q *Queue) SingleActive() bool { return q.singleActive }

// MaxPriority returns x-max-priority, or 0 for a queue without priorities.
func (q *Queue) MaxPriority() int { return q.maxPriority }

// Enqueue appends a message at the tail of its priority level and gives it
// the next sequence number.
func (q *Queue) Enqueue(m *Message) {
	q.nextSeq++
	m.Seq = q.nextSeq
	if q.maxPriority > 0 && m.Properties != nil {
		m.priority = min(m.Properties.Priority, uint8(q.maxPriority))
	}
	q.levels[m.priority].push(m)
	q.readyCount++
	q.readyBytes += int64(len(m.Body))
}

// Head returns the message the next fetch would take, or nil.
func (q *Queue) Head() *Message {
	for p := len(q.levels) - 1; p >= 0; p-- {
		if m := q.levels[p].head(); m != nil {
			return m
		}
	}
	return nil
}

// Fetch takes the head message. It reports whether the message was fetched
// before (the redelivered flag), and counts it as unacked when ackRequired.
func (q *Queue) Fetch(ackRequired bool) (m *Message, redelivered bool) {
	for p := len(q.levels) - 1; p >= 0; p-- {
		if q.levels[p].len() == 0 {
			continue
		}
		m = q.levels[p].pop()
		q.readyCount--
		q.readyBytes -= int64(len(m.Body))
		redelivered = m.Delivered
		m.Delivered = true
		if ackRequired {
			q.unacked++
		}
		return m, redelivered
	}
	return nil, false
}

// Requeue returns an unacked message to its original position.
func (q *Queue) Requeue(m *Message) {
	if q.Deleted {
		return
	}
	q.unacked--
	q.levels[m.priority].requeue(m)
	q.readyCount++
	q.readyBytes += int64(len(m.Body))
}

// Settle forgets an unacked message that was acked, or rejected without
// requeue.
func (q *Queue) Settle(*Message) {
	if !q.Deleted {
		q.unacked--
	}
}

// Purge removes every ready message and returns how many there were.
// Unacked messages stay.
func (q *Queue) Purge() int {
	n := q.readyCount
	for i := range q.levels {
		q.levels[i].clear()
	}
	q.readyCount, q.readyBytes = 0, 0
	return n
}

// Messages returns the ready messages in the order they would be fetched.
func (q *Queue) Messages() []*Message {
	out := make([]*Message, 0, q.readyCount)
	for p := len(q.levels) - 1; p >= 0; p-- {
		q.levels[p].each(func(m *Message) bool {
			out = append(out, m)
			return true
		})
	}
	return out
}
