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
	if q.caps.SingleActive {
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
	q.keys[c] = q.consumerKey(c)
	q.startTiming(c, nil)
	if q.caps.SingleActive {
		q.offerActive(c)
	}
	q.rotation.Add(c)
}

// offerActive makes c the single active consumer when none is, or, from
// 4.0 (rabbit_fifo:activate_next_consumer/2), when c has a higher
// priority than the active one: at once if the active one has nothing
// checked out, otherwise once it has quiesced, settling what it holds.
// (While it quiesces, every waiting consumer above it has a higher
// priority: the choice waits for maybeHandOver.)
func (q *quorum[T]) offerActive(c *consumer.Consumer[T]) {
	switch {
	case q.active == nil:
		q.active = c
	case q.opts.Rules.QuorumSACPriority && !q.quiescing && c.Priority > q.active.Priority:
		if q.held[q.active] == 0 {
			q.active = c
		} else {
			q.quiescing = true
		}
	}
}

// consumerKey is the key rabbit_fifo gives a new consumer from 4.0: the
// Raft index of its checkout, or the key of the consumer it registers
// again, a cancelled one of the same tag on the same channel that still
// holds messages (consumer_key_from_id/2 finds it by {Tag, Pid}).
func (q *quorum[T]) consumerKey(c *consumer.Consumer[T]) uint64 {
	for g := range q.gone {
		if g.Tag == c.Tag && g.Group() == c.Group() {
			return q.keys[g]
		}
	}
	q.nextKey++
	return q.nextKey
}

// maybeHandOver ends a quiescence once the active consumer holds
// nothing: rabbit_fifo:update_or_remove_con/4 puts a quiescing consumer
// with no checked-out message back among the waiting ones, and
// activate_next_consumer/2 activates the first of them, which may be it
// again if the consumer that outranked it has gone.
func (q *quorum[T]) maybeHandOver() {
	if q.quiescing && q.held[q.active] == 0 {
		q.quiescing = false
		q.active = q.nextActive()
	}
}

// nextActive is the consumer a single active consumer queue activates
// among the registered ones: in 3.10 the one registered first; with
// Rules.QuorumSACPriority the head of rabbit_fifo's waiting list as
// sort_waiting/1 orders it, highest priority first, then most credit (a
// waiting consumer's credit is its whole prefetch), then the first
// registered (the consumer key is the Raft index of its checkout). A
// consumer paused by the consumer timeout is never chosen (4.3:
// sort_waiting/1 puts the consumers that are not up last, and
// activate_next_consumer/2 activates the head only if it is up).
func (q *quorum[T]) nextActive() *consumer.Consumer[T] {
	var best *consumer.Consumer[T]
	for _, c := range q.consumers {
		switch {
		case c.Paused():
		case best == nil:
			best = c
			if !q.opts.Rules.QuorumSACPriority {
				return best
			}
		case c.Priority > best.Priority || c.Priority == best.Priority && waitingCredit(c) > waitingCredit(best):
			best = c
		}
	}
	return best
}

// waitingCredit is a waiting consumer's credit: its prefetch, 2000 for
// prefetch 0 (AddConsumer's rule, which a no-ack consumer shares here).
func waitingCredit[T any](c *consumer.Consumer[T]) int {
	if c.Prefetch == 0 {
		return quorumDefaultCredit
	}
	return c.Prefetch
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
	} else {
		delete(q.held, c)
		delete(q.keys, c)
		delete(q.timings, c)
	}
	if q.active == c {
		// 3.10 activates the waiting consumer registered first, whatever
		// its priority (quorum-single-active-consumer.txt); 4.0 orders
		// them by priority (nextActive). A cancelled quiescing consumer
		// hands over at once: rabbit_fifo:active_consumer/1 skips a
		// cancelled one.
		q.quiescing = false
		q.active = q.nextActive()
	}
}

// Resume lifts the suspension of a channel's consumers of this queue.
func (q *quorum[T]) Resume(g *consumer.Group[T]) { q.rotation.Resume(g) }
