package sim

import (
	"time"

	"github.com/amqpsim/amqpsim/channel"
	"github.com/amqpsim/amqpsim/cluster"
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
	// dirty is set while the queue waits in the broker's dirty list for
	// its dispatch (markDirty), so that marking it again is one test.
	dirty  bool
	timers [5]*timer // by queue.Timer, made on first use
	// caps are the queue's answers about its type (queue.Caps), fixed at
	// declare, read on the delivery path.
	caps queue.Caps
	// cluster is where the queue leads and what waits on its leader.
	cluster clusterQueue
	// sources are the bindings to the queue, by their source.
	sources sourceCounts
	// routeMark is the number of the last route that reached it.
	routeMark uint64
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
	q.caps = qq.Caps()
	q.cluster.Leader, q.cluster.Replicated = 1, q.caps.Replicated
	return q, nil
}

// Resource names the queue as RabbitMQ's error texts do.
func (q *brokerQueue) Resource() string { return queue.ResourceName(q.Vhost(), q.Name()) }

// Now is the virtual time since the broker started, in nanoseconds.
func (q *brokerQueue) Now() int64 { return q.b.elapsed }

// CanSend is the channel-wide limiter's can_send for c's channel; a closed
// channel (its connection is closing) takes nothing, and a queue that is
// not ChannelLimited (queue.Caps) asks only for room in the connection's outbox.
func (q *brokerQueue) CanSend(c *consumer.Consumer[*Consumer]) bool {
	cs := c.Owner()
	if cs.ch.closed != nil || cs.ch.conn.closed != nil { // closing (a fired DeliveryFault)
		return false
	}
	if q.b.clustered() && (cs.stranded || q.b.reach(q, cs.ch.conn.node) != cluster.Reachable) {
		return false // its leader is out of the consumer's reach (cluster.go), for good if stranded
	}
	if !q.caps.ChannelLimited {
		return cs.ch.conn.canSend(q)
	}
	return cs.ch.conn.canSend(q) && cs.ch.core.Allow(q, !c.NoAck)
}

// Deliver sends m to consumer c, unless the queue's member on c's node
// never started (cluster_consumers.go): a delivery tag, a ledger entry
// unless no-ack, and basic.deliver pushed to the client.
func (q *brokerQueue) Deliver(c *consumer.Consumer[*Consumer], m *queue.Message, redelivered bool) {
	cs := c.Owner()
	ch := cs.ch
	if q.cluster.Absent != 0 && q.memberAbsent(ch.conn.node) {
		cs.inTransit = append(cs.inTransit, m)
		return
	}
	tag := ch.core.NextTag()
	if !c.NoAck {
		ch.core.Record(channel.Delivery[delivery]{Tag: tag, Queue: q.id, ConsumerTag: c.Tag, At: q.b.now,
			Ref: delivery{q: q, m: m, c: c}})
		if q.caps.ConsumerTimeout {
			ch.armTick()
		}
	}
	ch.pushDelivery(cs, tag, redelivered, m, q.caps.DeliversAfterConsensus)
}

// DeadLetter dead-letters m, which left the queue for reason; during a
// settlement it waits until the queue has dispatched (settleGroup).
func (q *brokerQueue) DeadLetter(m *queue.Message, reason string) {
	if q.b.holdDeadLetters {
		q.b.deadLetters = append(q.b.deadLetters, deadLetter{q, m, reason})
		return
	}
	q.b.deadLetter(q, m, reason, nil)
}

// deadLetter is a dead letter held back until its queue has dispatched.
type deadLetter struct {
	q      *brokerQueue
	m      *queue.Message
	reason string
}

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
	c.Owner().ch.conn.fault(protocol.ChannelCrash(), true)
}

// ConsumerTimeout is consumer_timeout (Config.ConsumerTimeout), none
// when negative.
func (q *brokerQueue) ConsumerTimeout() (int64, bool) {
	d := q.b.cfg.ConsumerTimeout
	return int64(d), d >= 0
}

// TimedOut is a channel's answer to its quorum queue's consumer timeout
// (4.3, queue.Rules.QuorumConsumerTimeout; RS@v4.3.6
// rabbit_channel:handle_queue_actions/2, {released, ..., timeout}): the
// queue took back ds, which the channel still holds, so that a
// settlement of their tags is still taken. If the consumer is still on
// the channel (the client has not cancelled it) and the client announced
// consumer_cancel_notify, the channel sends basic.cancel (nowait; its
// trace event has Reason ReasonConsumerTimeout and Count len(ds)) and
// keeps the consumer, which the queue gives messages again once the
// client has settled the deliveries (measured on 4.3.6); otherwise (a
// basic.get, a consumer the client cancelled, a client without the
// capability) it closes with 406 "... Timeout value used: -1 ms ..."
// (handle_consumer_timed_out/5 with -1).
func (q *brokerQueue) TimedOut(ds []queue.Settled[*Consumer]) {
	var ch *Channel
	var cs *Consumer
	if c := ds[0].Consumer; c != nil {
		cs = c.Owner()
		ch = cs.ch
	} else {
		ch = q.b.getHolder(q, ds[0].Message)
	}
	if ch == nil || ch.closed != nil || ch.conn.closed != nil {
		return
	}
	if cs != nil && ch.consumers[cs.Tag()] != nil && !ch.conn.opts.NoCancelNotify {
		ch.pushCancel(cs.Tag(), len(ds))
		return
	}
	ch.failFor(consumerTimeoutError(ch.id, -1), ReasonConsumerTimeout)
}

// getHolder finds the open channel holding basic.get delivery m from q.
func (b *Broker) getHolder(q *brokerQueue, m *queue.Message) *Channel {
	for _, c := range b.conns {
		for _, ch := range c.channels {
			if ch.closed != nil {
				continue
			}
			for _, d := range ch.core.Deliveries() {
				if d.Ref.q == q && d.Ref.m == m && d.Ref.c == nil {
					return ch
				}
			}
		}
	}
	return nil
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
	if q.deleted || q.cluster.Down != NodeRunning {
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
