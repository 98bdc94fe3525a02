package queue

// Message TTL and length limits of a quorum queue, as RabbitMQ 3.10.8's
// rabbit_fifo applies them.

import (
	"cmp"
	"slices"
	"time"
)

// quorumLowLimit is rabbit_fifo's ?LOW_LIMIT: a queue refusing publishes
// under reject-publish takes them again once it is down to this share of
// its limits (is_below_soft_limit/1).
const quorumLowLimit = 0.8

// expiryAt returns the expiry of a message enqueued now: the smaller of
// x-message-ttl and the message's own expiration, when either is set
// (rabbit_fifo stores it in the message header at enqueue). A TTL of 0
// expires one millisecond later, so a consumer waiting on an empty queue
// still gets the message (rabbit_fifo:update_expiry_header/3 adds 1 for
// TTL 0; quorum-ttl-zero.txt).
func (q *quorum[T]) expiryAt(ttl int64, hasTTL bool) (int64, bool) {
	l := &q.limits
	d, ok := int64(l.MessageTTL), l.HasMessageTTL
	if hasTTL && (!ok || ttl < d) {
		d, ok = ttl, true
	}
	if !ok {
		return 0, false
	}
	if d == 0 {
		d = int64(time.Millisecond)
	}
	return q.env.Now() + d, true
}

// expire is rabbit_fifo:expire_msgs/4: while the next message to take
// (returns first, as take_next_msg/1) has expired it is dead-lettered with
// reason expired (or dropped). Only that head is looked at, so an expired
// message behind a live one waits (quorum-ttl.txt: p3 behind p2 stays
// until p2 is taken); a returned message keeps its expiry and expires
// once it is the head (quorum-ttl-returns.txt). It then sets the TTL
// timer for the new head's expiry. The clock is read only for a head
// that can expire (headExpired): dispatch runs this before every message.
//
// With Rules.QuorumExpiresEveryHead (4.3) an expired next message starts
// expireHeads instead.
func (q *quorum[T]) expire() {
	switch {
	case !q.headExpired():
	case q.opts.Rules.QuorumExpiresEveryHead:
		q.expireHeads()
	default:
		for q.headExpired() {
			q.deadLetter(publisherCopy(q.take()), "expired")
		}
	}
	q.ensureTTLTimer()
}

// expireHeads is 4.3's rabbit_fifo:expire_batch/3: the expired messages
// at the head of the returns and at the head of each priority level are
// dead-lettered with reason expired (or dropped), whatever is ahead of
// them in the other queues (quorum-ttl-every-head.txt). They go in the
// order they expired, ties in enqueue order. RabbitMQ takes a batch as
// returns then levels from the lowest, but its batch holds what expired
// at one millisecond; on the virtual clock, which stands still between
// steps that take real time on a broker, messages published in turn
// with one TTL expire together, and the one published first expired
// first on the broker.
func (q *quorum[T]) expireHeads() {
	now := q.env.Now()
	expired := func(m *Message) bool { return m != nil && m.Expires && m.Expiry <= now }
	var gone []*Message
	for expired(q.returns.front()) {
		gone = append(gone, q.returns.popFront())
	}
	gone = q.messages.takeExpiredHeads(expired, gone)
	slices.SortFunc(gone, func(a, b *Message) int {
		return cmp.Or(cmp.Compare(a.Expiry, b.Expiry), cmp.Compare(a.Seq, b.Seq))
	})
	for _, m := range gone {
		q.readyBytes -= int64(m.size)
		q.deadLetter(publisherCopy(m), "expired")
	}
}

// headExpired says whether expire would drop the head now.
func (q *quorum[T]) headExpired() bool {
	m := q.head()
	return m != nil && m.Expires && m.Expiry <= q.env.Now()
}

// head returns the message the next take would return, or nil.
func (q *quorum[T]) head() *Message {
	if m := q.returns.front(); m != nil {
		return m
	}
	return q.messages.front()
}

// ensureTTLTimer keeps the TTL timer at the head's expiry, or stops it
// (rabbit_fifo returns a {timer, expire_msgs, T} effect for the head).
// With Rules.QuorumExpiresEveryHead it is the earliest expiry of the
// returns' head and each priority level's head (4.3's timer_effect/2).
func (q *quorum[T]) ensureTTLTimer() {
	var due int64
	var set bool
	earliest := func(m *Message) {
		if m != nil && m.Expires && (!set || m.Expiry < due) {
			due, set = m.Expiry, true
		}
	}
	if q.opts.Rules.QuorumExpiresEveryHead {
		earliest(q.returns.front())
		q.messages.eachHead(earliest)
	} else {
		earliest(q.head())
	}
	switch {
	case set:
		if !q.ttlSet || q.ttlDue != due {
			q.ttlDue, q.ttlSet = due, true
			q.env.SetTimer(TTLTimer, due)
		}
	case q.ttlSet:
		q.ttlSet = false
		q.env.StopTimer(TTLTimer)
	}
}

// overLimit is rabbit_fifo:is_over_limit/1: more ready messages or bytes
// than the limits allow.
// The unconfirmed at-least-once dead letters count with the ready
// messages (rabbit_fifo's limits count its dlx state too).
func (q *quorum[T]) overLimit() bool {
	l := &q.limits
	return (l.MaxLength >= 0 && int64(q.Ready()+len(q.dlx)) > l.MaxLength) ||
		(l.MaxLengthBytes >= 0 && q.readyBytes+q.dlxBytes > l.MaxLengthBytes)
}

// belowSoftLimit is rabbit_fifo:is_below_soft_limit/1: each limit is at
// most trunc(limit * 0.8).
func (q *quorum[T]) belowSoftLimit() bool {
	l := &q.limits
	below := func(limit, n int64) bool { return limit < 0 || n <= int64(float64(limit)*quorumLowLimit) }
	return below(l.MaxLength, int64(q.Ready()+len(q.dlx))) && below(l.MaxLengthBytes, q.readyBytes+q.dlxBytes)
}

// evaluateLimit is rabbit_fifo:evaluate_limit/5, run after an enqueue and
// after every take: over the limit, drop-head dead-letters the next
// messages with reason maxlen (returns first, take_next_msg), and
// reject-publish starts refusing publishes, until the queue is below its
// soft limit again. The message that goes over the limit is kept
// (quorum-max-length.txt). reject-publish-dlx is drop-head on a quorum
// queue: rabbit_quorum_queue logs a warning and uses the default.
func (q *quorum[T]) evaluateLimit() {
	l := &q.limits
	if l.MaxLength < 0 && l.MaxLengthBytes < 0 {
		return
	}
	if l.Overflow == RejectPublish {
		if q.overLimit() {
			q.rejecting = true
		} else if q.rejecting && q.belowSoftLimit() {
			q.rejecting = false
		}
		return
	}
	for q.Ready() > 0 && q.overLimit() {
		q.deadLetter(publisherCopy(q.take()), "maxlen")
	}
}
