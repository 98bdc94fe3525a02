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
// A single active consumer queue counts only the active one of the
// consumers still registered (quorum-single-active-consumer.txt), and
// every unsettled basic.get counts as one.
func (q *quorum[T]) ConsumerCount() int {
	n := len(q.consumers)
	if q.singleActive {
		n = 0
		if q.active != nil {
			n = 1
		}
	}
	return n + len(q.gone) + q.gets
}

// HadConsumer reports whether the queue ever had a consumer.
func (q *quorum[T]) HadConsumer() bool { return q.hadConsumer }

// Consumers returns the consumers that are not cancelled, in registration
// order.
func (q *quorum[T]) Consumers() []*consumer.Consumer[T] { return q.consumers }

// ActiveConsumer returns the single active consumer of an
// x-single-active-consumer queue, or nil.
func (q *quorum[T]) ActiveConsumer() *consumer.Consumer[T] { return q.active }

// SingleActive reports x-single-active-consumer.
func (q *quorum[T]) SingleActive() bool { return q.singleActive }

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
	if q.singleActive && q.active == nil {
		q.active = c
	}
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
	q.lastActive = q.env.Now()
	if q.held[c] > 0 {
		q.gone[c] = true
	}
	if q.active == c {
		// 3.10 activates the waiting consumer registered first, whatever
		// its priority (quorum-single-active-consumer.txt); 4.0 orders
		// them by priority.
		q.active = nil
		if len(q.consumers) > 0 {
			q.active = q.consumers[0]
		}
	}
}

// Resume lifts the suspension of a channel's consumers of this queue.
func (q *quorum[T]) Resume(g *consumer.Group[T]) { q.rotation.Resume(g) }
