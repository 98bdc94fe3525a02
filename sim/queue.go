package sim

import (
	"time"

	"github.com/amqpsim/amqpsim/consumer"
	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/queue"
)

// brokerQueue is the broker's record of a queue: the queue itself, of its
// type, and what only the broker knows of it: its creation order, the
// connection that owns it when it is exclusive, whether it was deleted,
// and its timers. It is the queue's Env.
type brokerQueue struct {
	queue.Queue[*Consumer]
	b  *Broker
	id uint64 // creation order
	// owner is the connection of an exclusive queue.
	owner *Connection
	// deleted is set when the queue is deleted; settlements of its old
	// deliveries are then ignored, as RabbitMQ ignores them.
	deleted bool
	timers  [4]*timer // by queue.Timer, made on first use
	// limited is the queue's ChannelLimited, read on the delivery path.
	limited bool
}

var _ queue.Env[*Consumer] = (*brokerQueue)(nil)

// newQueue makes queue name of a vhost under the broker's profile, for
// queue.declare and a definitions import alike. Caller holds the lock.
func (b *Broker) newQueue(vhost, name string, o queue.Options) (*brokerQueue, error) {
	o.Rules, o.Epoch = b.profile.Queue, b.cfg.Start
	q := &brokerQueue{b: b}
	qq, err := queue.New[*Consumer](q, vhost, name, o)
	if err != nil {
		return nil, err
	}
	q.Queue = qq
	q.limited = qq.ChannelLimited()
	return q, nil
}

// Now is the virtual time since the broker started, in nanoseconds.
func (q *brokerQueue) Now() int64 { return q.b.elapsed }

// CanSend is the channel-wide limiter's can_send for c's channel; a closed
// channel (its connection is closing) takes nothing, and a queue that is
// not ChannelLimited asks only for room in the connection's outbox.
func (q *brokerQueue) CanSend(c *consumer.Consumer[*Consumer]) bool {
	cs := c.Owner()
	if cs.ch.closed != nil || cs.ch.conn.closed != nil { // closing (a fired DeliveryFault)
		return false
	}
	if !q.limited {
		return cs.ch.conn.canSend(q)
	}
	return cs.ch.conn.canSend(q) && cs.ch.core.Allow(q, !c.NoAck)
}

// Deliver sends m to consumer c.
func (q *brokerQueue) Deliver(c *consumer.Consumer[*Consumer], m *queue.Message, redelivered bool) {
	c.Owner().deliver(m, redelivered)
}

// DeadLetter dead-letters m, which left the queue for reason.
func (q *brokerQueue) DeadLetter(m *queue.Message, reason string) { q.b.deadLetter(q, m, reason, nil) }

// ForwardDeadLetter dead-letters m at least once.
func (q *brokerQueue) ForwardDeadLetter(m *queue.Message, reason string, took map[string]bool) bool {
	return q.b.deadLetter(q, m, reason, took)
}

// Refused traces a message the queue did not take.
func (q *brokerQueue) Refused(m *queue.Message, reason string) {
	if !q.b.tracing() {
		return
	}
	kind := EventPublishRejected
	if reason == "discarded" {
		kind = EventDiscarded
	}
	q.b.record(q.event(kind, m))
}

// Crash closes the connection of c's channel with 541 INTERNAL_ERROR, as
// RabbitMQ does when a channel process crashes, behind what the queues
// pushed.
func (q *brokerQueue) Crash(c *consumer.Consumer[*Consumer]) {
	c.Owner().ch.conn.fault(&protocol.Error{Code: protocol.InternalError, Text: protocol.CodeName(protocol.InternalError), Hard: true}, true)
}

// SetTimer schedules one of the queue's timers.
func (q *brokerQueue) SetTimer(t queue.Timer, due int64) {
	if q.timers[t] == nil {
		q.timers[t] = newTimer(func() { q.timerFired(t) })
	}
	q.b.schedule(q.timers[t], q.b.cfg.Start.Add(time.Duration(due)))
}

// StopTimer cancels one of the queue's timers.
func (q *brokerQueue) StopTimer(t queue.Timer) { q.b.stop(q.timers[t]) }

// timerFired runs a queue timer: the TTL timer drops expired heads and the
// queue is dispatched; x-expires deletes a queue left without consumers.
func (q *brokerQueue) timerFired(t queue.Timer) {
	if q.deleted {
		return
	}
	if q.TimerFired(t) {
		q.b.record(q.event(EventQueueExpired, nil))
		q.b.deleteQueue(q)
		return
	}
	q.b.markDirty(q)
}

// stopTimers stops a deleted queue's timers.
func (q *brokerQueue) stopTimers() {
	for _, t := range q.timers {
		q.b.stop(t)
	}
}

// event is a broker-wide event about q and, if not nil, one of its
// messages.
func (q *brokerQueue) event(kind EventKind, m *queue.Message) Event {
	e := Event{Kind: kind, Vhost: q.Vhost(), Queue: q.Name()}
	if m != nil {
		e.MessageID, e.Body = m.ID, m.Body
	}
	return e
}
