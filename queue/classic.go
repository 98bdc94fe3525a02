package queue

import (
	"github.com/amqpsim/amqpsim/consumer"
	"github.com/amqpsim/amqpsim/internal/scratch"
	"github.com/amqpsim/amqpsim/protocol"
)

// classic is a RabbitMQ 3.10 classic queue.
type classic[T any] struct {
	declared
	env Env[T]

	maxPriority int // 0: not a priority queue
	limits      Limits

	levels     []readyList // one per priority 0..maxPriority
	readyCount int
	readyBytes int64
	unacked    int
	nextSeq    uint64
	// ttlDue is when the TTL timer is set to fire, when ttlSet.
	ttlDue int64
	ttlSet bool

	rotation    consumer.Rotation[T]
	consumers   []*consumer.Consumer[T] // registration order
	sacActive   *consumer.Consumer[T]   // single active consumer
	exclusiveC  bool                    // an exclusive consumer holds the queue
	hadConsumer bool
	// canSend and settled are made once and reused: method values and
	// per-call slices allocate.
	canSend func(*consumer.Consumer[T]) bool
	settled []*consumer.Consumer[T]
}

// notClassic are arguments of quorum queues and streams, which a classic
// queue refuses whatever their value.
var notClassic = []string{
	"x-delivery-limit", "x-dead-letter-strategy", "x-quorum-initial-group-size",
	"x-max-in-memory-length", "x-max-in-memory-bytes", "x-max-age",
	"x-stream-max-segment-size-bytes", "x-initial-cluster-size", "x-queue-leader-locator",
}

func newClassic[T any](env Env[T], d declared) (*classic[T], error) {
	if err := d.refuse(notClassic, Classic.module()); err != nil {
		return nil, err
	}
	if err := d.classicRules(); err != nil {
		return nil, err
	}
	d.caps = d.classicCaps()
	q := &classic[T]{declared: d, env: env, limits: readLimits(d.opts.Args)}
	if n, ok := protocol.Int(d.opts.Args["x-max-priority"]); ok {
		q.maxPriority = int(n)
	}
	q.levels = make([]readyList, q.maxPriority+1)
	q.canSend = env.CanSend
	return q, nil
}

// classicRules are the release's own checks of a classic declaration:
// 4.3 keeps only storage version 2 and gives classic queues no consumer
// timeout, so x-consumer-timeout is an argument of another queue type
// there (Rules.ConsumerTimeoutQuorumOnly).
func (d *declared) classicRules() error {
	r := d.opts.Rules
	if n, ok := protocol.Int(d.opts.Args["x-queue-version"]); ok && n == 1 && r.OnlyQueueVersion2 {
		return protocol.Errorf(protocol.PreconditionFailed, protocol.QueueDeclare,
			"invalid arg 'x-queue-version' for %s: \"unsupported queue version '1'\"", d.Resource())
	}
	if r.ConsumerTimeoutQuorumOnly {
		return d.refuse([]string{"x-consumer-timeout"}, Classic.module())
	}
	return nil
}

func (q *classic[T]) Limits() Limits { return q.limits }

// ApplyPolicy recomputes the queue's limits from its arguments and the
// policy, then applies them as process_args_policy's initialisers do: the
// length limits drop from the head, expired heads are dropped, and the
// x-expires timer restarts. Messages already queued keep their expiry.
func (q *classic[T]) ApplyPolicy(definition protocol.Table) {
	// rabbit_amqqueue_process:process_args_policy applies max-length and
	// max-length-bytes before overflow: the new lengths are enforced
	// under the overflow in force before the change (a policy that
	// lowers max-length and sets reject-publish still drops from the
	// head), then a new drop-head drops at once (init_overflow;
	// policy-max-length-then-overflow.txt, 3.10.8, 4.0.5 and 4.3.6).
	l := EffectiveLimits(q.opts.Args, definition)
	overflow := l.Overflow
	l.Overflow = q.limits.Overflow
	q.limits = l
	q.dropOverLimit()
	q.limits.Overflow = overflow
	q.dropOverLimit()
	q.dropExpired()
	q.Touch()
}
func (q *classic[T]) Ready() int        { return q.readyCount }
func (q *classic[T]) ReadyBytes() int64 { return q.readyBytes }
func (q *classic[T]) Unacked() int      { return q.unacked }

// Publish is RabbitMQ's deliver_or_enqueue: reject-publish overflow refuses
// the message, an empty queue hands it straight to a waiting consumer, a
// message with x-message-ttl 0 that cannot be delivered at once is
// discarded when there is no dead-letter exchange, and drop-head overflow
// drops from the head afterwards.
func (q *classic[T]) Publish(m *Message, ttl int64, hasTTL bool) bool {
	l := &q.limits
	if l.Overflow != DropHead && q.wouldOverflow(len(m.Body)) {
		q.env.Refused(m, "rejected")
		if l.Overflow == RejectPublishDLX {
			q.env.DeadLetter(m, "maxlen")
		}
		return false
	}
	if hasTTL || l.HasMessageTTL {
		m.Expiry, m.Expires = q.expiryAt(q.env.Now(), ttl, hasTTL)
	} else {
		m.Expiry, m.Expires = 0, false // no call for the clock: nothing expires
	}
	wasEmpty := q.readyCount == 0
	// Only the queue's x-message-ttl 0 discards (deliver_or_enqueue
	// matches #q{ttl = 0, dlx = undefined}); a message whose own
	// expiration is "0" is enqueued and expires only at the head
	// (measured on RabbitMQ 3.10.8: behind another message it is counted,
	// and dropped when the message before it is fetched).
	if l.HasMessageTTL && l.MessageTTL == 0 && !wasEmpty && !l.HasDeadLetterExchange {
		q.env.Refused(m, "discarded")
		return true
	}
	q.enqueue(m)
	if wasEmpty && len(q.consumers) > 0 {
		// Hand the message straight to a waiting consumer even when it is
		// already expired (TTL 0), as attempt_delivery does before any
		// expiry check (measured on RabbitMQ 3.10.8: a queue with
		// x-message-ttl 0 delivers to a consumer with room). No fetch, so
		// nothing is dropped here.
		q.dispatch(false)
		if q.readyCount == 0 {
			return true
		}
	}
	if q.opts.Rules.ClassicDeliveryCount && m.Failures > 0 {
		// 4.3 stores a message with failed deliveries as delivered, so
		// it is redelivered when fetched; handed straight to a waiting
		// consumer above it is not (dlx-reject-counts-delivery.txt).
		m.Delivered = true
	}
	dropped := q.dropOverLimit()
	// deliver_or_enqueue runs drop_expired_msgs only when the new message
	// may have become the head: the queue holds one message, or drop-head
	// dropped some (unless then one message without expiry is left). In a
	// priority queue a new higher-priority head is not checked.
	if one := q.readyCount == 1; dropped || one {
		if !(dropped && one && !m.Expires) {
			q.dropExpired()
		}
	}
	return true
}

// Get takes the head message for basic.get. Like RabbitMQ's fetch it takes
// the head even if it has expired (its TTL timer has not fired yet: in a
// priority queue it may be set for a later message), and drops what
// expired behind it only afterwards. basic.get restarts x-expires.
func (q *classic[T]) Get(ackRequired bool, got func(m *Message, redelivered bool)) (bool, error) {
	q.Touch()
	m, redelivered := q.fetch(ackRequired)
	if m == nil {
		return false, nil
	}
	got(m, redelivered)
	q.dropExpired()
	return true, nil
}

// Settle settles one group: acks forget the messages, rejects dead-letter
// them, requeues put them back in place. The consumers get their credit
// back (one unblock for the group), and after a requeue the queue runs
// requeue_and_run's drop-head and drop_expired_msgs.
func (q *classic[T]) Settle(ds []Settled[T], how Settlement) {
	settled := q.settled[:0]
	for _, d := range ds {
		q.unacked--
		if how.failed() {
			q.failed(d.Message)
		}
		switch how {
		case Requeue, RequeueFailed:
			q.requeue(d.Message)
		case Reject, RejectFailed:
			q.env.DeadLetter(d.Message, "rejected")
		}
		if d.Consumer != nil {
			settled = append(settled, d.Consumer)
		}
	}
	q.rotation.Credit(settled)
	scratch.Zero(settled)
	q.settled = settled[:0]
	if how.Requeues() {
		q.dropOverLimit()
		q.dropExpired()
	}
}

// Return puts back the unacked messages of a channel that closed, then
// drops from the head over a length limit, drops what expired, and
// restarts x-expires.
func (q *classic[T]) Return(ms []*Message) {
	for _, m := range ms {
		q.unacked--
		q.failed(m)
		q.requeue(m)
	}
	q.dropOverLimit()
	q.dropExpired()
	q.Touch()
}

// failed counts a failed delivery of m (basic.reject, a channel that
// closed) where Rules.ClassicDeliveryCount holds.
func (q *classic[T]) failed(m *Message) {
	if q.opts.Rules.ClassicDeliveryCount {
		m.Failures++
	}
}

// Purge removes every ready message and returns how many there were.
// Unacked messages stay.
func (q *classic[T]) Purge() (int, error) {
	n := q.readyCount
	for i := range q.levels {
		q.levels[i].clear()
	}
	q.readyCount, q.readyBytes = 0, 0
	return n, nil
}

// retain removes the ready messages keep refuses, and returns how many.
// The kept ones go back into each level's ring in sequence order
// (requeued ones included: they all have lower sequences than the ring's,
// so the ring's order is the fetch order); their sequence numbers and
// flags stay.
func (q *classic[T]) retain(keep func(m *Message) bool) int {
	removed := 0
	for i := range q.levels {
		var kept []*Message
		q.levels[i].each(func(m *Message) bool {
			if keep(m) {
				kept = append(kept, m)
			} else {
				removed++
				q.readyCount--
				q.readyBytes -= int64(len(m.Body))
			}
			return true
		})
		q.levels[i].clear()
		for _, m := range kept {
			q.levels[i].push(m)
		}
	}
	if removed > 0 {
		q.dropExpired() // re-arms the TTL timer for the new head
	}
	return removed
}

// Messages returns the ready messages in the order they would be fetched.
func (q *classic[T]) Messages() []*Message {
	out := make([]*Message, 0, q.readyCount)
	for p := len(q.levels) - 1; p >= 0; p-- {
		q.levels[p].each(func(m *Message) bool {
			out = append(out, m)
			return true
		})
	}
	return out
}

// Touch is RabbitMQ's ensure_expiry_timer: the x-expires timer restarts,
// and runs only while the queue has no consumers.
func (q *classic[T]) Touch() {
	d := q.limits.Expires
	if d <= 0 {
		return
	}
	if len(q.consumers) > 0 {
		q.env.StopTimer(ExpiresTimer)
		return
	}
	q.env.SetTimer(ExpiresTimer, q.env.Now()+int64(d))
}

// TimerFired runs a timer's work: the TTL timer is cleared and
// drop_expired_msgs runs (handle_info drop_expired); x-expires deletes a
// queue that still has no consumers.
func (q *classic[T]) TimerFired(t Timer) bool {
	switch t {
	case TTLTimer:
		q.ttlSet = false
		q.dropExpired()
	case ExpiresTimer:
		return len(q.consumers) == 0
	}
	return false
}

// dropExpired is RabbitMQ's drop_expired_msgs: on a queue with ready
// messages it drops the expired head messages, dead-lettering them with
// reason "expired", then ensures the TTL timer for the new head's expiry.
//
// Expired messages are dropped, and the TTL timer set, only where RabbitMQ
// 3.10.8's rabbit_amqqueue_process runs drop_expired_msgs: after a fetch
// (delivery or basic.get), after a requeue, after a publish that leaves one
// message queued (or drops from the head), and when the TTL timer fires. So
// in a priority queue a short-lived higher-priority message published
// behind a long-lived one waits for the timer set for the first (measured:
// see TestTTLPriorityHeadWaitsForTimer in package sim).
func (q *classic[T]) dropExpired() {
	if q.readyCount == 0 {
		return
	}
	now := q.env.Now()
	// Only the queue's head expires, not the head of every priority level:
	// rabbit_priority_queue:dropwhile runs through the levels from the
	// highest (find2) and stops at the first that is not left empty, so an
	// expired message below a live higher-priority one stays (measured on
	// RabbitMQ 3.10.8, x-max-priority 2: A priority 2 expiration 60000,
	// then B priority 0 expiration 100: both still queued 0.5 s later; B
	// was dead-lettered only once a basic.get took A).
	for {
		m := q.head()
		if m == nil || !m.Expires || m.Expiry > now {
			break
		}
		q.take()
		q.env.DeadLetter(m, "expired")
	}
	if m := q.head(); m != nil && m.Expires {
		q.ensureTTLTimer(m.Expiry)
	}
}

// ensureTTLTimer is RabbitMQ's ensure_ttl_timer: with no timer set it sets
// one for expiry; a set timer moves only earlier, and only when expiry is
// more than 1 ms before it; it never moves later, and it is left set when
// the queue empties (firing then drops nothing).
func (q *classic[T]) ensureTTLTimer(expiry int64) {
	const ms = 1e6
	if !q.ttlSet || expiry+ms < q.ttlDue {
		q.ttlDue, q.ttlSet = expiry, true
		q.env.SetTimer(TTLTimer, expiry)
	}
}

// wouldOverflow reports whether one more ready message of size body bytes
// would break a length limit (RabbitMQ's will_overflow, checked before a
// publish under reject-publish).
func (q *classic[T]) wouldOverflow(size int) bool {
	l := &q.limits
	return (l.MaxLength >= 0 && int64(q.readyCount)+1 > l.MaxLength) ||
		(l.MaxLengthBytes >= 0 && q.readyBytes+int64(size) > l.MaxLengthBytes)
}

// dropOverLimit drops ready messages from the head while the queue is over
// a length limit (x-overflow drop-head, RabbitMQ's maybe_drop_head),
// dead-lettering each with reason "maxlen", and reports whether it dropped
// any. Under reject-publish nothing is dropped.
func (q *classic[T]) dropOverLimit() bool {
	l := &q.limits
	if l.Overflow != DropHead {
		return false
	}
	did := false
	for q.readyCount > 0 && ((l.MaxLength >= 0 && int64(q.readyCount) > l.MaxLength) ||
		(l.MaxLengthBytes >= 0 && q.readyBytes > l.MaxLengthBytes)) {
		q.env.DeadLetter(q.take(), "maxlen")
		did = true
	}
	return did
}

// expiryAt returns the expiry of a message enqueued at now: now plus the
// smaller of the queue's x-message-ttl and the message's own TTL, and
// whether either is set.
func (q *classic[T]) expiryAt(now, messageTTL int64, hasMessageTTL bool) (int64, bool) {
	ttl, ok := int64(q.limits.MessageTTL), q.limits.HasMessageTTL
	if hasMessageTTL && (!ok || messageTTL < ttl) {
		ttl, ok = messageTTL, true
	}
	if !ok {
		return 0, false
	}
	return now + ttl, true
}
