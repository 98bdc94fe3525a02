package sim

import (
	"fmt"
	"strconv"
	"time"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/queue"
)

// queueTimers are a queue's two clocks: the expiry of its head messages
// (x-message-ttl and per-message expiration) and its own expiry (x-expires).
type queueTimers struct {
	ttl     *timer
	expires *timer
}

func (b *Broker) timersOf(q *queue.Queue) *queueTimers {
	t := b.queueTimers[q]
	if t == nil {
		t = &queueTimers{
			ttl:     newTimer(func() { b.markDirty(q) }),
			expires: newTimer(func() { b.expireQueue(q) }),
		}
		b.queueTimers[q] = t
	}
	return t
}

// dispatch drops the queue's expired head messages, hands ready messages to
// consumers, and sets the timer for the next head to expire; caller holds
// the lock.
func (b *Broker) dispatch(q *queue.Queue) {
	q.Dispatch(b.now.UnixNano(), b.allowFn, b.deliverFn, b.expiredFn)
	if q.Deleted {
		return
	}
	next := q.NextExpiry()
	if next == 0 {
		if t := b.queueTimers[q]; t != nil {
			b.stop(t.ttl)
		}
		return
	}
	b.schedule(b.timersOf(q).ttl, time.Unix(0, next).In(b.now.Location()))
}

// expired dead-letters (or drops) a message that expired at the head.
func (b *Broker) expired(q *queue.Queue, m *queue.Message) { b.deadLetter(q, m, "expired") }

// maxlen dead-letters (or drops) a message pushed out by a length limit.
func (b *Broker) maxlen(q *queue.Queue, m *queue.Message) { b.deadLetter(q, m, "maxlen") }

// enqueue puts a routed message into q as RabbitMQ's deliver_or_enqueue
// does: reject-publish overflow refuses it (reporting false), an empty queue
// hands it straight to a waiting consumer, a message with TTL 0 that cannot
// be delivered at once is discarded when there is no dead-letter exchange,
// and drop-head overflow drops from the head afterwards. Caller holds the
// lock.
func (b *Broker) enqueue(q *queue.Queue, m *queue.Message, ttl time.Duration, hasTTL bool) bool {
	l := q.Limits()
	if l.Overflow != queue.DropHead && q.WouldOverflow(len(m.Body)) {
		b.event(nil, 0, "queue.rejected", "%s body=%q", q.Name, m.Body)
		if l.Overflow == queue.RejectPublishDLX {
			b.deadLetter(q, m, "maxlen")
		}
		return false
	}
	now := b.now.UnixNano()
	m.Expiry = q.ExpiryAt(now, ttl, hasTTL)
	wasEmpty := q.Ready() == 0
	if m.Expiry == now && !wasEmpty && !l.HasDeadLetterExchange {
		b.event(nil, 0, "queue.discarded", "%s body=%q ttl=0", q.Name, m.Body)
		return true
	}
	q.Enqueue(m)
	if wasEmpty && q.ConsumerCount() > 0 {
		b.dispatch(q)
	}
	q.DropOverLimit(b.maxlenFn)
	b.markDirty(q)
	return true
}

// touchExpires restarts a queue's x-expires timer, which runs only while the
// queue has no consumers (RabbitMQ's ensure_expiry_timer); caller holds the
// lock.
func (b *Broker) touchExpires(q *queue.Queue) {
	d := q.Limits().Expires
	if d <= 0 || q.Deleted {
		return
	}
	t := b.timersOf(q)
	if q.ConsumerCount() > 0 {
		b.stop(t.expires)
		return
	}
	b.schedule(t.expires, b.now.Add(d))
}

// expireQueue deletes a queue whose x-expires ran out without consumers.
func (b *Broker) expireQueue(q *queue.Queue) {
	if q.Deleted || q.ConsumerCount() > 0 {
		return
	}
	b.event(nil, 0, "queue.expired", "%s", q.Name)
	b.deleteQueue(q)
}

// forgetQueueTimers stops a deleted queue's timers.
func (b *Broker) forgetQueueTimers(q *queue.Queue) {
	if t := b.queueTimers[q]; t != nil {
		b.stop(t.ttl)
		b.stop(t.expires)
		delete(b.queueTimers, q)
	}
}

// maxExpiration is the largest per-message TTL RabbitMQ accepts, in ms.
const maxExpiration = 315360000000

// parseExpiration checks a message's expiration property as RabbitMQ's
// rabbit_basic:parse_expiration does, with its error texts.
func parseExpiration(s string) (time.Duration, bool, error) {
	if s == "" {
		return 0, false, nil
	}
	fail := func(reason string) error {
		return protocol.Errorf(protocol.PreconditionFailed, protocol.BasicPublish, "invalid expiration '%s': %s", s, reason)
	}
	digits := 0
	for digits < len(s) && (s[digits] >= '0' && s[digits] <= '9' || digits == 0 && (s[0] == '-' || s[0] == '+')) {
		digits++
	}
	n, err := strconv.ParseInt(s[:digits], 10, 64)
	switch {
	case err != nil:
		return 0, false, fail("no_integer")
	case digits < len(s):
		return 0, false, fail(fmt.Sprintf("{leftover_string,%q}", s[digits:]))
	case n < 0:
		return 0, false, fail(fmt.Sprintf("{value_negative,%d}", n))
	case n > maxExpiration:
		return 0, false, fail(fmt.Sprintf("{value_too_large,%d}", n))
	}
	return time.Duration(n) * time.Millisecond, true, nil
}

// syncTick keeps the channel's consumer-timeout tick running exactly while
// the channel holds unacked deliveries: RabbitMQ's channel starts its tick
// when it wakes and cancels it when it hibernates with nothing unacked, so
// the ticks of a busy channel are counted from its first unacked delivery.
// Caller holds the lock.
func (ch *Channel) syncTick() {
	b := ch.b
	if b.cfg.ConsumerTimeout < 0 || ch.closed != nil {
		b.stop(ch.tick)
		return
	}
	if ch.core.Unacked() == 0 {
		b.stop(ch.tick)
		return
	}
	if ch.tick == nil {
		ch.tick = newTimer(ch.onTick)
	}
	if ch.tick.index < 0 {
		b.schedule(ch.tick, b.now.Add(b.cfg.ChannelTickInterval))
	}
}

// onTick is the channel tick: if the oldest unacked delivery (basic.get ones
// included) is older than the consumer timeout, the channel is closed with
// RabbitMQ's 406, its deliveries requeued.
func (ch *Channel) onTick() {
	b := ch.b
	if ch.closed != nil {
		return
	}
	timeout := b.cfg.ConsumerTimeout
	if d := ch.core.Oldest(); d != nil && d.At.Before(b.now.Add(-timeout)) {
		ch.fail(protocol.Errorf(protocol.PreconditionFailed, protocol.Method{},
			"delivery acknowledgement on channel %d timed out. Timeout value used: %d ms. This timeout value can be configured, see consumers doc guide to learn more",
			ch.id, timeout.Milliseconds()))
		return
	}
	ch.syncTick()
}
