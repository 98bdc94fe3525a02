package sim

import (
	"math/big"
	"strconv"
	"strings"
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
			ttl:     newTimer(func() { b.ttlFired(q) }),
			expires: newTimer(func() { b.expireQueue(q) }),
		}
		b.queueTimers[q] = t
	}
	return t
}

// dispatch hands ready messages to consumers, dropping the expired head
// messages after every fetch; caller holds the lock.
//
// Expired messages are dropped, and the TTL timer set, only where RabbitMQ
// 3.10.8's rabbit_amqqueue_process runs drop_expired_msgs: after a fetch
// (delivery or basic.get), after a requeue, after a publish that leaves one
// message queued (or drops from the head), and when the TTL timer fires. So
// in a priority queue a short-lived higher-priority message published
// behind a long-lived one waits for the timer set for the first (measured:
// see TestTTLPriorityHeadWaitsForTimer).
func (b *Broker) dispatch(q *queue.Queue) {
	q.Dispatch(b.allowFn, b.deliverFn, b.dropExpiredFn)
}

// dropExpired is RabbitMQ's drop_expired_msgs: on a queue with ready
// messages it drops the expired head messages, then ensures the TTL timer
// for the new head's expiry. Caller holds the lock.
func (b *Broker) dropExpired(q *queue.Queue) {
	if q.Deleted || q.Ready() == 0 {
		return
	}
	q.DropExpired(b.now.UnixNano(), b.expiredFn)
	if !q.Deleted {
		b.ensureTTLTimer(q, q.NextExpiry())
	}
}

// ensureTTLTimer is RabbitMQ's ensure_ttl_timer: with no timer set it sets
// one for expiry; a set timer moves only earlier, and only when expiry is
// more than 1 ms before it; it never moves later, and it is left set when
// the queue empties (firing then drops nothing). expiry 0 is none.
func (b *Broker) ensureTTLTimer(q *queue.Queue, expiry int64) {
	if expiry == 0 {
		return
	}
	due := time.Unix(0, expiry).In(b.now.Location())
	t := b.timersOf(q).ttl
	if t.index < 0 || due.Add(time.Millisecond).Before(t.due) {
		b.schedule(t, due)
	}
}

// ttlFired is the TTL timer going off (handle_info drop_expired): the timer
// is cleared and drop_expired_msgs runs.
func (b *Broker) ttlFired(q *queue.Queue) {
	b.dropExpired(q)
	b.markDirty(q)
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
	// Only the queue's x-message-ttl 0 discards (deliver_or_enqueue
	// matches #q{ttl = 0, dlx = undefined}); a message whose own
	// expiration is "0" is enqueued and expires only at the head
	// (measured on RabbitMQ 3.10.8: behind another message it is counted,
	// and dropped when the message before it is fetched).
	if l.HasMessageTTL && l.MessageTTL == 0 && !wasEmpty && !l.HasDeadLetterExchange {
		b.event(nil, 0, "queue.discarded", "%s body=%q ttl=0", q.Name, m.Body)
		return true
	}
	q.Enqueue(m)
	if wasEmpty && q.ConsumerCount() > 0 {
		// Hand the message straight to a waiting consumer even when
		// it is already expired (TTL 0), as attempt_delivery does before
		// any expiry check (measured on RabbitMQ 3.10.8: a queue with
		// x-message-ttl 0 delivers to a consumer with room). No fetch, so
		// nothing is dropped here.
		q.Dispatch(b.allowFn, b.deliverFn, nil)
		if q.Ready() == 0 {
			b.markDirty(q)
			return true
		}
	}
	dropped := q.DropOverLimit(b.maxlenFn)
	// deliver_or_enqueue runs drop_expired_msgs only when the new message
	// may have become the head: the queue holds one message, or drop-head
	// dropped some (unless then one message without expiry is left). In a
	// priority queue a new higher-priority head is not checked.
	if one := q.Ready() == 1; dropped || one {
		if !(dropped && one && m.Expiry == 0) {
			b.dropExpired(q)
		}
	}
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
// rabbit_basic:parse_expiration does, with its error texts: Erlang's
// string:to_integer (optional sign, then digits, any length: a 20-digit
// value is value_too_large, not no_integer), the reason printed with
// Erlang's ~p (a list of bytes when not printable, "\e" for ESC, raw
// Latin-1 bytes, ~p's line break); measured on RabbitMQ 3.10.8.
func parseExpiration(s string) (time.Duration, bool, error) {
	if s == "" {
		return 0, false, nil
	}
	fail := func(tag, value string) error {
		return protocol.Errorf(protocol.PreconditionFailed, protocol.BasicPublish, "%s", expirationError(s, tag, value))
	}
	sign := 0
	if s[0] == '-' || s[0] == '+' {
		sign = 1
	}
	end := sign
	for end < len(s) && s[end] >= '0' && s[end] <= '9' {
		end++
	}
	if end == sign {
		return 0, false, fail("", "")
	}
	if end < len(s) {
		return 0, false, fail("leftover_string", erlangString(s[end:]))
	}
	n, _ := new(big.Int).SetString(strings.TrimPrefix(s, "+"), 10)
	switch {
	case n.Sign() < 0:
		return 0, false, fail("value_negative", n.String())
	case n.Cmp(big.NewInt(maxExpiration)) > 0:
		return 0, false, fail("value_too_large", n.String())
	}
	return time.Duration(n.Int64()) * time.Millisecond, true, nil
}

// expirationError formats "invalid expiration '<s>': ~p" of no_integer (tag
// "") or {tag,value}. Erlang's ~p breaks a tuple that would pass column 78
// after its first element and indents the rest one past the brace
// (measured: {value_too_large,9999999999999999999} at column 42 is broken).
// Lists too long for one line are broken further by Erlang; not modelled.
func expirationError(s, tag, value string) string {
	prefix := "invalid expiration '" + s + "': "
	if tag == "" {
		return prefix + "no_integer"
	}
	col := len(prefix) // Erlang counts Latin-1 characters: one per byte
	if term := "{" + tag + "," + value + "}"; col+len(term) <= 78 {
		return prefix + term
	}
	return prefix + "{" + tag + ",\n" + strings.Repeat(" ", col+1) + value + "}"
}

// erlangString prints a byte string as Erlang's ~p prints a list of Latin-1
// characters: quoted with escapes when every character is printable,
// otherwise as a list of integers.
func erlangString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		if e, ok := erlangEscapes[c]; ok {
			b.WriteString(e)
			continue
		}
		if c < 32 || c >= 127 && c < 160 {
			ints := make([]string, len(s))
			for j := range len(s) {
				ints[j] = strconv.Itoa(int(s[j]))
			}
			return "[" + strings.Join(ints, ",") + "]"
		}
		b.WriteByte(c)
	}
	b.WriteByte('"')
	return b.String()
}

var erlangEscapes = map[byte]string{'\n': `\n`, '\r': `\r`, '\t': `\t`, '\v': `\v`, '\b': `\b`, '\f': `\f`, 0x1b: `\e`, '"': `\"`, '\\': `\\`}

// syncTick keeps the channel's consumer-timeout tick running exactly while
// the channel holds unacked deliveries: RabbitMQ's channel starts its tick
// when it wakes and cancels it when it hibernates with nothing unacked, so
// the ticks of a busy channel are counted from its first unacked delivery.
// Measured on RabbitMQ 3.10.8: with a tick longer than the channel's
// hibernation backoff (at most 10 s, so the default 60 s tick) the close
// comes Timeout after the delivery; with a 1 s tick the channel never
// hibernates, its ticks keep the phase of the channel's opening and the
// close comes anywhere in (T, T+tick] after the delivery. That phase, and
// the tick running on until hibernation after the last ack, are not
// modelled. Caller holds the lock.
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
	// A delivery exactly timeout old times out. RabbitMQ checks
	// DeliveredAt < Now - Timeout in milliseconds, but the tick is armed
	// when the delivery wakes the channel, before the delivery is
	// recorded, and fires late, so the tick Timeout after it always sees
	// it older: measured on RabbitMQ 3.10.8 (timeout 24 s, tick 12 s, six
	// idle channels), the close came 24.002-24.158 s after the delivery,
	// never 36 s. With the strict test the simulator closed at T+tick.
	if d := ch.core.Oldest(); d != nil && !d.At.After(b.now.Add(-timeout)) {
		ch.fail(protocol.Errorf(protocol.PreconditionFailed, protocol.Method{},
			"delivery acknowledgement on channel %d timed out. Timeout value used: %d ms. This timeout value can be configured, see consumers doc guide to learn more",
			ch.id, timeout.Milliseconds()))
		return
	}
	ch.syncTick()
}
