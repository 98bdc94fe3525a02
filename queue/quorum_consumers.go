package queue

import (
	"slices"

	"github.com/amqpsim/amqpsim/consumer"
)

// ConsumerCount is what queue.declare-ok reports for a quorum queue:
// rabbit_fifo:query_stat/1 counts its consumers map, which keeps a
// cancelled consumer until it has settled what it holds
// (quorum-errors.txt: 2 after one of two consumers was cancelled holding
// two messages).
func (q *quorum[T]) ConsumerCount() int { return len(q.consumers) + len(q.gone) }

// HadConsumer reports whether the queue ever had a consumer.
func (q *quorum[T]) HadConsumer() bool { return q.hadConsumer }

// Consumers returns the consumers that are not cancelled, in registration
// order.
func (q *quorum[T]) Consumers() []*consumer.Consumer[T] { return q.consumers }

// ActiveConsumer returns nil: x-single-active-consumer is not simulated on
// quorum queues yet.
func (q *quorum[T]) ActiveConsumer() *consumer.Consumer[T] { return nil }

// SingleActive reports false (see ActiveConsumer).
func (q *quorum[T]) SingleActive() bool { return false }

// AdmitConsumer admits every consumer: a quorum queue ignores
// basic.consume's exclusive flag (quorum-errors.txt: a second consumer
// joins an exclusive one).
func (q *quorum[T]) AdmitConsumer(bool) error { return nil }

// AddConsumer registers a consumer at the tail of its priority. Its credit
// is its prefetch, or 2000 for prefetch 0 (rabbit_quorum_queue:consume/3
// gives {simple_prefetch, 2000}); a no-ack consumer settles on receipt, so
// its credit never runs out.
func (q *quorum[T]) AddConsumer(c *consumer.Consumer[T]) {
	if !c.NoAck && c.Prefetch == 0 {
		c.Prefetch = quorumDefaultCredit
	}
	q.consumers = append(q.consumers, c)
	q.hadConsumer = true
	q.rotation.Add(c)
}

// RemoveConsumer unregisters a consumer (basic.cancel, channel close). Its
// checked-out messages stay with it until settled or returned
// (rabbit_fifo cancel_consumer/4 marks it cancelled).
func (q *quorum[T]) RemoveConsumer(c *consumer.Consumer[T]) {
	i := slices.Index(q.consumers, c)
	if i < 0 {
		return
	}
	q.consumers = slices.Delete(q.consumers, i, i+1)
	q.rotation.Remove(c)
	if q.held[c] > 0 {
		q.gone[c] = true
	}
}

// Resume lifts the suspension of a channel's consumers of this queue.
func (q *quorum[T]) Resume(g *consumer.Group[T]) { q.rotation.Resume(g) }
