package queue

import "time"

// Dead-letter strategy at-least-once of a RabbitMQ 3.10 quorum queue
// (rabbit_fifo_dlx with rabbit_fifo_dlx_worker): a dead letter stays in the
// source queue, counted against its length limits, until every queue the
// dead-letter exchange routes it to has confirmed it.

// dlxRetry is how long rabbit_fifo_dlx_worker waits before it forwards
// again what was not confirmed: its settle timeout, RabbitMQ 3.10.8's
// dead_letter_worker_publisher_confirm_timeout (180000 ms in the rabbit
// application's environment, rabbitmqctl environment). The worker's timer
// runs from its first pending dead letter and forwards again, at each
// firing, what never went out or waited a whole period; amqpsim forwards
// every pending one at each firing. The worker takes 32 dead letters at a
// time (dead_letter_worker_consumer_prefetch); amqpsim takes them all.
const dlxRetry = 180 * time.Second

// pendingDL is a dead letter not yet confirmed by all its targets.
type pendingDL struct {
	m      *Message
	reason string
	took   map[string]bool // the target queues that confirmed it
}

// atLeastOnce reports whether dead letters go at least once: the
// x-dead-letter-strategy argument says so, and the queue has a dead-letter
// exchange and x-overflow reject-publish; otherwise rabbit_quorum_queue
// falls back to at-most-once (dlh/5; quorum-dead-letter-at-least-once.txt).
func (q *quorum[T]) atLeastOnce() bool {
	s, _ := q.opts.Args["x-dead-letter-strategy"].(string)
	return s == "at-least-once" && q.limits.HasDeadLetterExchange && q.limits.Overflow == RejectPublish
}

// deadLetter dead-letters m (the publisher's copy) for reason, at most or
// at least once as the queue's strategy says. From 4.0 the dead letter
// carries the message's delivery_count header as its delivery-count
// annotation (Message.Failures; Rules.QuorumReadsDeliveryCount): in 4.3
// its failed deliveries, the count it came with included; before, the
// count it came with and its closed channels' returns (kept in Failures),
// and one for a #discard{} (reason rejected).
func (q *quorum[T]) deadLetter(m *Message, reason string) {
	if r := q.opts.Rules; r.QuorumReadsDeliveryCount {
		failures := m.Failures
		if r.SplitDeliveryCount {
			failures = m.deliveryCount
		} else if reason == "rejected" {
			failures++
		}
		if failures != m.Failures {
			c := *m
			c.Failures = failures
			m = &c
		}
	}
	if !q.atLeastOnce() {
		q.env.DeadLetter(m, reason)
		return
	}
	p := &pendingDL{m: m, reason: reason, took: map[string]bool{}}
	if q.env.ForwardDeadLetter(m, reason, p.took) {
		return
	}
	q.dlx = append(q.dlx, p)
	q.dlxBytes += int64(m.size)
	if !q.dlxTimer {
		q.dlxTimer = true
		q.env.SetTimer(DeadLetterTimer, q.env.Now()+int64(dlxRetry))
	}
}

// retryDeadLetters forwards the unconfirmed dead letters again, to the
// targets that did not confirm them, and keeps the timer going while some
// are left (rabbit_fifo_dlx_worker:redeliver_and_ack/1). A queue that is
// no longer at-least-once (a policy changed it) forwards them once more,
// at most once.
func (q *quorum[T]) retryDeadLetters() {
	q.dlxTimer = false
	kept := q.dlx[:0]
	alo := q.atLeastOnce()
	for _, p := range q.dlx {
		if !alo {
			q.env.DeadLetter(p.m, p.reason)
		} else if !q.env.ForwardDeadLetter(p.m, p.reason, p.took) {
			kept = append(kept, p)
			continue
		}
		q.dlxBytes -= int64(p.m.size)
	}
	clear(q.dlx[len(kept):])
	q.dlx = kept
	if len(q.dlx) > 0 {
		q.dlxTimer = true
		q.env.SetTimer(DeadLetterTimer, q.env.Now()+int64(dlxRetry))
	}
	q.evaluateLimit()
}
