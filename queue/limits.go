package queue

import (
	"time"

	"github.com/amqpsim/amqpsim/protocol"
)

// Overflow behaviours of a queue with a length limit (x-overflow).
const (
	DropHead         = "drop-head"
	RejectPublish    = "reject-publish"
	RejectPublishDLX = "reject-publish-dlx"
)

// Limits are the queue arguments about time and size, read once at
// declaration.
type Limits struct {
	MessageTTL     time.Duration // x-message-ttl; valid when HasMessageTTL
	HasMessageTTL  bool
	Expires        time.Duration // x-expires; 0 means none
	MaxLength      int64         // x-max-length; -1 means none
	MaxLengthBytes int64         // x-max-length-bytes; -1 means none
	Overflow       string        // x-overflow; DropHead by default
	// DeadLetterExchange is x-dead-letter-exchange ("" is the default
	// exchange); valid when HasDeadLetterExchange.
	DeadLetterExchange    string
	HasDeadLetterExchange bool
	// DeadLetterRoutingKey is x-dead-letter-routing-key; valid when
	// HasDeadLetterRoutingKey.
	DeadLetterRoutingKey    string
	HasDeadLetterRoutingKey bool
}

func readLimits(args protocol.Table) Limits {
	l := Limits{MaxLength: -1, MaxLengthBytes: -1, Overflow: DropHead}
	if n, ok := protocol.Int(args["x-message-ttl"]); ok {
		l.MessageTTL, l.HasMessageTTL = time.Duration(n)*time.Millisecond, true
	}
	if n, ok := protocol.Int(args["x-expires"]); ok {
		l.Expires = time.Duration(n) * time.Millisecond
	}
	if n, ok := protocol.Int(args["x-max-length"]); ok {
		l.MaxLength = n
	}
	if n, ok := protocol.Int(args["x-max-length-bytes"]); ok {
		l.MaxLengthBytes = n
	}
	if s, ok := args["x-overflow"].(string); ok {
		l.Overflow = s
	}
	l.DeadLetterExchange, l.HasDeadLetterExchange = args["x-dead-letter-exchange"].(string)
	l.DeadLetterRoutingKey, l.HasDeadLetterRoutingKey = args["x-dead-letter-routing-key"].(string)
	return l
}

// Limits returns the queue's TTL, length and dead-letter settings.
func (q *Queue) Limits() Limits { return q.limits }

// WouldOverflow reports whether one more ready message of size body bytes
// would break a length limit (RabbitMQ's will_overflow, checked before a
// publish under reject-publish).
func (q *Queue) WouldOverflow(size int) bool {
	l := q.limits
	return (l.MaxLength >= 0 && int64(q.readyCount)+1 > l.MaxLength) ||
		(l.MaxLengthBytes >= 0 && q.readyBytes+int64(size) > l.MaxLengthBytes)
}

// DropOverLimit drops ready messages from the head while the queue is over
// a length limit (x-overflow drop-head, RabbitMQ's maybe_drop_head), handing
// each to dropped, and reports whether it dropped any. Under reject-publish
// nothing is dropped.
func (q *Queue) DropOverLimit(dropped func(q *Queue, m *Message)) bool {
	l := q.limits
	if l.Overflow != DropHead {
		return false
	}
	did := false
	for q.readyCount > 0 && ((l.MaxLength >= 0 && int64(q.readyCount) > l.MaxLength) ||
		(l.MaxLengthBytes >= 0 && q.readyBytes > l.MaxLengthBytes)) {
		dropped(q, q.take())
		did = true
	}
	return did
}

// take removes the head message without fetching it.
func (q *Queue) take() *Message {
	for p := len(q.levels) - 1; p >= 0; p-- {
		if q.levels[p].len() > 0 {
			m := q.levels[p].pop()
			q.readyCount--
			q.readyBytes -= int64(len(m.Body))
			return m
		}
	}
	return nil
}

// DropExpired drops the head message while its expiry has come by now
// (RabbitMQ's drop_expired_msgs: expiry only ever happens at the head),
// handing each to expired.
//
// Only the queue's head expires, not the head of every priority level:
// rabbit_priority_queue:dropwhile runs through the levels from the highest
// (find2) and stops at the first that is not left empty, so an expired
// message below a live higher-priority one stays (measured on RabbitMQ
// 3.10.8, x-max-priority 2: A priority 2 expiration 60000, then B priority
// 0 expiration 100: both still queued 0.5 s later; B was dead-lettered
// only once a basic.get took A).
func (q *Queue) DropExpired(now int64, expired func(q *Queue, m *Message)) {
	for {
		m := q.Head()
		if m == nil || m.Expiry == 0 || m.Expiry > now {
			return
		}
		q.take()
		if expired != nil {
			expired(q, m)
		}
	}
}

// NextExpiry returns the expiry of the head message, when the queue's TTL
// timer must fire, or 0 for none. Like DropExpired it looks at the head
// only.
func (q *Queue) NextExpiry() int64 {
	if m := q.Head(); m != nil {
		return m.Expiry
	}
	return 0
}

// ExpiryAt returns the expiry of a message enqueued at now: now plus the
// smaller of the queue's x-message-ttl and the message's own TTL (its
// expiration property), or 0 when neither is set.
func (q *Queue) ExpiryAt(now int64, messageTTL time.Duration, hasMessageTTL bool) int64 {
	ttl, ok := q.limits.MessageTTL, q.limits.HasMessageTTL
	if hasMessageTTL && (!ok || messageTTL < ttl) {
		ttl, ok = messageTTL, true
	}
	if !ok {
		return 0
	}
	return now + int64(ttl)
}
