package sim

import (
	"fmt"
	"time"

	"github.com/amqpsim/amqpsim/channel"
	"github.com/amqpsim/amqpsim/protocol"
)

// The channel's consumer-timeout tick runs exactly while the channel
// holds unacked deliveries and one of them may time out: RabbitMQ's
// channel starts its tick when it wakes and cancels it when it
// hibernates with nothing unacked, so the ticks of a busy channel are
// counted from its first unacked delivery. Measured on RabbitMQ 3.10.8:
// with a tick longer than the channel's hibernation backoff (at most
// 10 s, so the default 60 s tick) the close comes Timeout after the
// delivery; with a 1 s tick the channel never hibernates, its ticks keep
// the phase of the channel's opening and the close comes anywhere in
// (T, T+tick] after the delivery. That phase, and the tick running on
// until hibernation after the last ack, are not modelled. From 4.3 no
// queue's deliveries have the channel's timeout (queue.Caps.ConsumerTimeout),
// so the tick never starts: a 4.3 quorum queue times its deliveries out
// itself (brokerQueue.TimedOut).

// armTick starts the tick, if it is not running, for a delivery that
// entered the ledger from a queue whose deliveries have the channel's
// timeout. Caller holds the lock.
func (ch *Channel) armTick() {
	b := ch.b
	if ch.tickOff() || ch.core.Unacked() == 0 {
		b.stop(ch.tick)
		return
	}
	if ch.tick == nil {
		ch.tick = newTimer(ch.onTick)
	}
	if ch.tick.index < 0 {
		b.scheduleIn(ch.tick, b.cfg.ChannelTickInterval)
	}
}

// syncTick stops the tick once nothing can time out: the channel is
// closed, or holds no unacked delivery. Caller holds the lock.
func (ch *Channel) syncTick() {
	if t := ch.tick; t != nil && t.index >= 0 {
		// Only a running tick has anything to stop: small enough to
		// inline, this costs a settlement on a channel without one no
		// call.
		ch.stopTickIfIdle()
	}
}

// stopTickIfIdle is syncTick of a running tick.
func (ch *Channel) stopTickIfIdle() {
	if ch.tickOff() || ch.core.Unacked() == 0 {
		ch.b.stop(ch.tick)
	}
}

// tickOff reports whether the channel runs no tick at all.
func (ch *Channel) tickOff() bool {
	b := ch.b
	return b.cfg.ConsumerTimeout < 0 && !b.profile.QueueConsumerTimeout || ch.closed != nil
}

// onTick is the channel tick: if the oldest unacked delivery (basic.get ones
// included) is older than the consumer timeout, the channel is closed with
// RabbitMQ's 406, its deliveries requeued. With no delivery that may time
// out left, the tick stops.
func (ch *Channel) onTick() {
	b := ch.b
	if ch.closed != nil {
		return
	}
	d := ch.oldestTimed()
	if d == nil {
		b.stop(ch.tick)
		return
	}
	// A delivery exactly timeout old times out. RabbitMQ checks
	// DeliveredAt < Now - Timeout in milliseconds, but the tick is armed
	// when the delivery wakes the channel, before the delivery is
	// recorded, and fires late, so the tick Timeout after it always sees
	// it older: measured on RabbitMQ 3.10.8 (timeout 24 s, tick 12 s, six
	// idle channels), the close came 24.002-24.158 s after the delivery,
	// never 36 s. With the strict test the simulator closed at T+tick.
	if timeout, ok := ch.timeoutOf(d.Ref.q); ok && !d.At.After(b.now.Add(-timeout)) {
		ch.failFor(consumerTimeoutError(ch.id, max(timeout, 0).Milliseconds()), ReasonConsumerTimeout)
		return
	}
	ch.armTick()
}

// oldestTimed is the delivery the tick checks: the oldest unacked one
// from a queue whose type the channel's consumer timeout applies to
// (queue.Caps.ConsumerTimeout: every queue before 4.3; in 4.3 none, as
// classic queues and streams have no consumer timeout,
// queue.Rules.ConsumerTimeoutQuorumOnly, and a quorum queue times its
// deliveries out itself, queue.Rules.QuorumConsumerTimeout, TimedOut).
func (ch *Channel) oldestTimed() *channel.Delivery[delivery] {
	if d := ch.core.Oldest(); d == nil || d.Ref.q.caps.ConsumerTimeout {
		return d
	}
	for _, d := range ch.core.Deliveries() {
		if d.Ref.q.caps.ConsumerTimeout {
			return &d
		}
	}
	return nil
}

// timeoutOf is the consumer timeout of a delivery from q: the broker's,
// or from 3.12 the smaller of q's x-consumer-timeout argument and
// consumer-timeout policy when either is set (RS@v3.12.0
// rabbit_channel:get_queue_consumer_timeout/2 with
// rabbit_queue_type_util:args_policy_lookup/3); a value that is not an
// integer means none, as evaluate_consumer_timeout1 then never fires.
func (ch *Channel) timeoutOf(q *brokerQueue) (time.Duration, bool) {
	b := ch.b
	global := b.cfg.ConsumerTimeout
	v, found := b.vhosts[q.Vhost()]
	if !b.profile.QueueConsumerTimeout || q.deleted || !found {
		// The channel's lookup of a deleted queue fails: the broker's.
		return global, global >= 0
	}
	arg, hasArg := q.Options().Args["x-consumer-timeout"]
	pol, hasPol := v.queuePolicy(q)["consumer-timeout"]
	var val any
	switch {
	case hasArg && hasPol:
		a, aInt := protocol.Int(arg)
		p, pInt := protocol.Int(pol)
		switch {
		case aInt && pInt:
			val = min(a, p)
		case aInt: // Erlang's min/2: a number is below a binary
			val = a
		case pInt:
			val = p
		}
	case hasArg:
		val = arg
	case hasPol:
		val = pol
	default:
		return global, global >= 0
	}
	n, ok := protocol.Int(val)
	if !ok {
		return 0, false
	}
	return time.Duration(n) * time.Millisecond, true
}

// ReasonConsumerTimeout is the Reason of the EventChannelClose of a
// channel the consumer timeout closed (the timeout itself,
// ForceConsumerTimeout, or FaultConsumerTimeout), and of the basic.cancel
// push with which a 4.3 quorum queue's consumer timeout cancelled a
// consumer (brokerQueue.TimedOut).
const ReasonConsumerTimeout = "consumer timeout"

// consumerTimeoutError is RabbitMQ's close of channel id for a delivery
// that timed out after ms milliseconds (-1 when a 4.3 quorum queue timed
// it out, TimedOut).
func consumerTimeoutError(id uint16, ms int64) *Error {
	return protocol.Errorf(protocol.PreconditionFailed, protocol.Method{},
		"delivery acknowledgement on channel %d timed out. Timeout value used: %d ms. This timeout value can be configured, see consumers doc guide to learn more",
		id, ms)
}

// ForceConsumerTimeout closes the channel now as the consumer timeout
// does before 4.3 (406, its deliveries requeued), without waiting for its
// oldest unacked delivery to grow old: a fault for testing a consumer's
// handling of it. It fails if the channel is closed or holds no unacked
// delivery, as RabbitMQ's timeout then never fires. From 4.3 RabbitMQ
// closes the channel so only for a basic.get, a consumer the client
// cancelled, or a client without consumer_cancel_notify (and with "-1
// ms" in the text); otherwise a quorum queue's timeout cancels the
// consumer and keeps the channel (Advance past the timeout shows it).
func (ch *Channel) ForceConsumerTimeout() error {
	ch.b.mu.Lock()
	defer ch.b.mu.Unlock()
	if ch.closed != nil {
		return ch.closed
	}
	if ch.core.Unacked() == 0 {
		return fmt.Errorf("sim: channel %d holds no unacked delivery to time out", ch.id)
	}
	ch.failFor(consumerTimeoutError(ch.id, max(ch.b.cfg.ConsumerTimeout, 0).Milliseconds()), ReasonConsumerTimeout)
	ch.b.flush()
	return nil
}
