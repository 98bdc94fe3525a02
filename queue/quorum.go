package queue

import (
	"cmp"
	"slices"
	"strings"

	"github.com/amqpsim/amqpsim/consumer"
	"github.com/amqpsim/amqpsim/internal/scratch"
	"github.com/amqpsim/amqpsim/protocol"
)

// quorumDefaultCredit is the credit of a consumer with prefetch 0:
// rabbit_quorum_queue:consume/3 in 3.10 sets Prefetch0 = 2000.
const quorumDefaultCredit = 2000

// quorum is a RabbitMQ 3.10 quorum queue as rabbit_fifo runs it for AMQP
// 0-9-1 clients, on a single node: ready messages in two queues, returns
// (served first) and messages; consumers with simple_prefetch credit in a
// round robin within x-priority; a delivery count per message, shown as
// the x-delivery-count header once it is above 0, and the optional
// x-delivery-limit.
type quorum[T any] struct {
	declared
	env    Env[T]
	limits Limits
	// limit is x-delivery-limit, when hasLimit.
	limit    int64
	hasLimit bool

	// returns are messages given back by a channel close or, with a
	// delivery limit, by nack and reject; messages are the others, in
	// enqueue order. rabbit_fifo:take_next_msg/1 takes from returns first.
	returns    ring
	messages   quorumReady
	readyBytes int64
	unacked    int
	nextSeq    uint64

	rotation    consumer.Rotation[T]
	consumers   []*consumer.Consumer[T] // registration order
	hadConsumer bool
	// gets counts the basic.get messages not yet settled: each is a
	// one-shot consumer of its own in rabbit_fifo's consumers map until
	// settled, so declare-ok counts it (quorum-ttl.txt: 2 after two gets
	// on one channel).
	gets int
	// With x-single-active-consumer (Caps.SingleActive) only active
	// takes messages; the others wait in registration order (3.10) or by
	// priority (Rules.QuorumSACPriority). quiescing is set while a
	// waiting consumer of higher priority waits for active to settle
	// what it holds; active gets no new message meanwhile.
	active    *consumer.Consumer[T]
	quiescing bool
	// rejecting is set while x-overflow reject-publish refuses
	// publishes; ttlDue is when the TTL timer is set to fire, when ttlSet.
	rejecting bool
	ttlDue    int64
	ttlSet    bool
	// lastActive is rabbit_fifo's last_active, for x-expires; created is
	// when the queue started, the phase of its ticks.
	lastActive int64
	created    int64
	// held counts each consumer's checked-out messages, and gone marks
	// the cancelled consumers that still hold some: rabbit_fifo keeps
	// them in its consumers map as cancelled until they settle, so
	// queue.declare-ok counts them (query_stat/1; quorum-errors.txt).
	held map[*consumer.Consumer[T]]int
	gone map[*consumer.Consumer[T]]bool
	// keys are the consumers' keys in rabbit_fifo's consumers map from
	// 4.0 (Rules.ReturnsByConsumerKey): the Raft index of the checkout
	// that registered each, so registration order (nextKey counts).
	keys    map[*consumer.Consumer[T]]uint64
	nextKey uint64
	owner   map[*Message]*consumer.Consumer[T] // who holds each checked-out message
	canSend func(*consumer.Consumer[T]) bool
	settled []*consumer.Consumer[T]
	// out is what the running Dispatch checked out (deliverOut);
	// requeued is set when a settlement requeued messages at the tail
	// (giveBack's toBack): 3.10 sends each as a #requeue{} command of its
	// own, checked out on its own, so what the next Dispatch checks out
	// goes in checkout order (quorum-delivery-groups.txt).
	out      []checkedOut[T]
	requeued bool
	// dlx are the at-least-once dead letters not yet confirmed, dlxBytes
	// their bytes (quorumSize); dlxTimer is set while the retry timer runs.
	dlx      []*pendingDL
	dlxBytes int64
	dlxTimer bool
	// copies makes the counted copies handOut returns.
	copies quorumCopies
	// The consumer timeout (Rules.QuorumConsumerTimeout,
	// quorum_timeout.go): timings are the ack-mode consumers', getOut
	// the unsettled basic.get deliveries with a timeout, in get order,
	// getLive those still out; stale are the timed-out deliveries their
	// channels still hold, by message, with their consumer (nil for a
	// basic.get); policyTimeout is the policy's consumer-timeout, when
	// hasPolicyTimeout; timeoutDue is when the timer fires, when
	// timeoutSet.
	timings          map[*consumer.Consumer[T]]*timing
	getOut           timing
	getLive          map[*Message]bool
	stale            map[*Message]*consumer.Consumer[T]
	policyTimeout    any
	hasPolicyTimeout bool
	timeoutDue       int64
	timeoutSet       bool
}

func newQuorum[T any](env Env[T], d declared) (*quorum[T], error) {
	if err := d.validateQuorum(); err != nil {
		return nil, err
	}
	d.caps = d.quorumCaps()
	q := &quorum[T]{declared: d, env: env, limits: readLimits(d.opts.Args),
		held: map[*consumer.Consumer[T]]int{}, gone: map[*consumer.Consumer[T]]bool{}, keys: map[*consumer.Consumer[T]]uint64{},
		owner: map[*Message]*consumer.Consumer[T]{}, messages: newQuorumReady(d.opts.Rules.QuorumPriorities)}
	q.limit, q.hasLimit = q.resolveLimit(nil)
	q.canSend = env.CanSend
	q.created = env.Now()
	q.lastActive = q.created
	q.scheduleTick()
	return q, nil
}

// Equivalent checks a redeclaration: durable, auto_delete, then the
// arguments a quorum queue accepts (quorum-redeclare.txt).
func (q *quorum[T]) Equivalent(o Options) error { return q.equivalent(o, quorumArgs) }

// ApplyPolicy recomputes the limits from the arguments and the policy as
// rabbit_quorum_queue does in 3.10 (semantics doc §7, §11; the overflow,
// max-length and delivery-limit rules measured on 3.10.8 with the policy
// set before the declare, the others not recorded):
// message-ttl, expires, max-length and max-length-bytes take the smaller
// value and the queue's own dead-letter arguments win, as for a classic
// queue, but the policy's overflow wins (policy_has_precedence), and
// delivery-limit takes the smaller value (args_policy_lookup with min/2).
// The new limits apply at once; queued messages keep their expiry.
func (q *quorum[T]) ApplyPolicy(definition protocol.Table) {
	l := EffectiveLimits(q.opts.Args, definition)
	q.policyTimeout, q.hasPolicyTimeout = definition["consumer-timeout"]
	if s, ok := definition["overflow"].(string); ok {
		l.Overflow = s
	}
	q.limits = l
	q.limit, q.hasLimit = q.resolveLimit(definition)
	if l.Overflow != RejectPublish {
		q.rejecting = false
	}
	q.evaluateLimit()
	q.expire()
	q.scheduleTick()
}

// Limits returns the queue's TTL, length and dead-letter settings.
func (q *quorum[T]) Limits() Limits { return q.limits }

// Ready counts returns and messages: rabbit_fifo's messages_ready.
func (q *quorum[T]) Ready() int { return q.returns.len() + q.messages.len() }

// ReadyBytes returns the bytes of the ready messages, as the queue counts
// them against x-max-length-bytes (quorumSize).
func (q *quorum[T]) ReadyBytes() int64 { return q.readyBytes }

// Unacked counts the messages checked out and not yet settled, basic.get
// ones included.
func (q *quorum[T]) Unacked() int { return q.unacked }

// Messages returns the ready messages in the order they would be taken:
// returns first.
func (q *quorum[T]) Messages() []*Message {
	out := make([]*Message, 0, q.Ready())
	for i := 0; i < q.returns.len(); i++ {
		out = append(out, q.returns.at(i))
	}
	return append(out, q.messages.all()...)
}

// Publish enqueues m at the tail of messages (rabbit_fifo apply
// #enqueue{}) with its expiry; the length limits are evaluated after the
// broker's dispatch, as rabbit_fifo's checkout/5 hands the message to a
// consumer with credit before evaluate_limit/5, so that a queue with
// x-max-length=0 still delivers to a waiting consumer
// (maxlen-zero-with-consumer.txt, 3.10.8, 4.0.5 and 4.3.6). While
// reject-publish refuses, the message is not taken and the publisher's
// confirm is a nack; RabbitMQ's channel refuses it on the queue's
// reject_publish notice, so a burst sent before the notice arrives is
// taken whole, which this model, one publish after the other, never does.
// The broker dispatches afterwards.
func (q *quorum[T]) Publish(m *Message, ttl int64, hasTTL bool) bool {
	if q.rejecting {
		q.env.Refused(m, "rejected")
		return false
	}
	m.Expiry, m.Expires = q.expiryAt(ttl, hasTTL)
	if r := q.opts.Rules; r.QuorumReadsDeliveryCount && r.SplitDeliveryCount {
		// The dead letter's delivery-count annotation becomes the
		// message's delivery_count (before 4.3 handOut reads Failures).
		m.deliveryCount = m.Failures
	}
	q.nextSeq++
	m.Seq = q.nextSeq
	m.size = q.quorumSize(m)
	q.messages.pushBack(m)
	q.readyBytes += int64(m.size)
	q.ensureTTLTimer()
	return true
}

// quorumSize is what the queue counts of m against x-max-length-bytes: its
// body, and from 4.3 its stored properties (Rules.QuorumCountsProperties).
func (q *quorum[T]) quorumSize(m *Message) int32 {
	n := int32(len(m.Body))
	if q.opts.Rules.QuorumCountsProperties {
		n += m.StoredPropertiesSize()
	}
	return n
}

// take removes the next ready message: returns first
// (rabbit_fifo:take_next_msg/1).
func (q *quorum[T]) take() *Message {
	m := q.returns.popFront()
	if m == nil {
		m = q.messages.popFront()
	}
	if m != nil {
		q.readyBytes -= int64(m.size)
	}
	return m
}

// handOut is the message as the client gets it. In 3.10
// rabbit_fifo_client adds x-delivery-count to a consumer delivery only
// when the message was returned before (transform_msgs/3), and to every
// basic.get reply, 0 on the first (dequeue/3; quorum-get.txt). The copy
// that carries the header is what the queue tracks from then on; the
// publisher's properties are kept for dead-lettering, which in 3.10
// publishes the stored message without the header
// (quorum-delivery-limit.txt). redelivered is true once the message was
// returned (the header's delivery_count is present).
//
// From 3.12 a basic.get adds the header only above 0 too
// (Rules.GetCountOnlyReturned); in 4.3 (Rules.SplitDeliveryCount) the
// header shows delivery_count, x-acquired-count the returns, and
// redelivered is acquired_count > 0.
//
// A message stored with a dead letter's delivery count
// (Rules.QuorumReadsDeliveryCount) has a delivery_count and no
// acquired_count until its first return: rabbit_fifo_client then takes
// the delivery_count as the acquired count.
func (q *quorum[T]) handOut(m *Message, get bool) (out *Message, redelivered bool) {
	r := q.opts.Rules
	dc, acquired := m.deliveryCount, m.deliveryCount
	if r.SplitDeliveryCount {
		acquired = m.acquiredCount
		if acquired == 0 {
			acquired = m.deliveryCount
		}
	} else if acquired == 0 && r.QuorumReadsDeliveryCount {
		dc, acquired = m.Failures, m.Failures
	}
	redelivered = acquired > 0
	zeroOnGet := get && !r.GetCountOnlyReturned
	if !redelivered && !zeroOnGet {
		return m, false
	}
	c := q.copies.message(m)
	if !m.hasPlain {
		c.plain, c.hasPlain = m.Properties, true
	}
	c.Properties = q.copies.withCounts(c.plain, countKey{dc: dc, hasDC: dc > 0 || zeroOnGet,
		ac: acquired, hasAC: r.SplitDeliveryCount && acquired > 0})
	return c, redelivered
}

// publisherCopy is m with the publisher's properties, for dead-lettering.
func publisherCopy(m *Message) *Message {
	if !m.hasPlain {
		return m
	}
	c := *m
	c.Properties, c.plain, c.hasPlain = m.plain, nil, false
	return &c
}

// Dispatch hands ready messages to consumers while one has credit
// (rabbit_fifo:checkout_one/4): the head of the service queue of the
// highest priority takes the next message and goes to the tail of its
// priority while it has credit left; one whose credit ran out leaves the
// rotation until a settlement gives it credit (Rotation.Spent).
//
// Before each message the expired head messages go (checkout_one/4 runs
// expire_msgs/4 first), also when no consumer can take one: the broker
// dispatches after every change, which is where rabbit_fifo expires.
func (q *quorum[T]) Dispatch() int {
	n := 0
	for {
		if len(q.out) > 0 && q.headExpired() {
			// What was checked out goes first: its takes came before
			// the expiry, and the trace must say so.
			q.deliverOut()
		}
		q.expire()
		if q.Ready() == 0 {
			break
		}
		var c *consumer.Consumer[T]
		if q.caps.SingleActive {
			if q.active == nil || q.quiescing || !q.rotation.Offer(q.active, q.canSend) {
				break
			}
			c = q.active
		} else if c = q.rotation.Pick(q.canSend); c == nil {
			break
		}
		m, redelivered := q.handOut(q.take(), false)
		q.rotation.Delivered(c)
		q.rotation.Spent(c)
		if !c.NoAck {
			q.unacked++
			q.held[c]++
			q.owner[m] = c
			q.checkedOut(c, m)
		}
		q.out = append(q.out, checkedOut[T]{c, m, redelivered})
		n++
	}
	q.deliverOut()
	q.evaluateLimit()
	return n
}

// checkedOut is a message Dispatch checked out to a consumer.
type checkedOut[T any] struct {
	c           *consumer.Consumer[T]
	m           *Message
	redelivered bool
}

// deliverOut delivers what one Dispatch checked out, grouped by consumer
// in the order of their keys (q.keys: registration order): rabbit_fifo's
// checkout collects each consumer's messages in a map and sends each
// consumer one delivery effect, in the order of the map's keys, so a channel numbers a consumer's messages together
// and an earlier consumer's first (recorded on 3.10.8, 4.0.5 and 4.3.6:
// quorum-delivery-groups.txt, where a consumer registered later takes a
// returned message first and still gets the higher tag).
func (q *quorum[T]) deliverOut() {
	out := q.out
	q.out = nil // a delivery may dispatch again (re-entrant): it gets its own slice
	grouped := !q.requeued
	q.requeued = false
	if grouped && len(out) > 1 && slices.ContainsFunc(out[1:], func(o checkedOut[T]) bool { return o.c != out[0].c }) {
		slices.SortStableFunc(out, func(a, b checkedOut[T]) int {
			return cmp.Compare(q.keys[a.c], q.keys[b.c])
		})
	}
	for _, o := range out {
		q.env.Deliver(o.c, o.m, o.redelivered)
	}
	clear(out)
	if q.out == nil {
		q.out = out[:0]
	}
}

// Get is basic.get, a one-shot consumer of one message
// ({dequeue, settled|unsettled}): it takes the next message, returns
// first, and the get-ok's message_count is what is ready after the take.
// Expired head messages go before the take; what expired behind the taken
// one goes at the next dispatch, after the count was taken
// (quorum-ttl.txt: get-ok left=2, then 1 ready), except for a no-ack get,
// whose settlement expires them first. A single active
// consumer queue refuses basic.get (sacGetRefused).
func (q *quorum[T]) Get(ackRequired bool, got func(m *Message, redelivered bool)) (bool, error) {
	if q.caps.SingleActive {
		return false, q.sacGetRefused()
	}
	q.lastActive = q.env.Now() // also for get-empty (quorum-expires.txt)
	q.expire()
	m := q.take()
	if m == nil {
		return false, nil
	}
	out, redelivered := q.handOut(m, true)
	if ackRequired {
		q.unacked++
		q.gets++
		q.gotOut(out)
	} else {
		// {dequeue, settled} settles the message at once, and the
		// settlement's checkout expires the new head before the count
		// is taken (quorum-get-noack-expires.txt).
		q.expire()
	}
	q.evaluateLimit()
	got(out, redelivered)
	return true, nil
}

// Settle applies a channel's settlement: ack forgets (rabbit_fifo
// #settle{}), reject without requeue dead-letters with reason rejected or
// drops (#discard{}), and requeue returns each message in the order given
// (#return{}). Credit comes back to the consumers either way. A
// delivery the queue timed out is no longer the consumer's: its
// settlement only ends the consumer's pause (settleStale).
func (q *quorum[T]) Settle(ds []Settled[T], how Settlement) {
	if how.Requeues() && !slices.IsSortedFunc(ds, byTag[T]) {
		// rabbit_fifo returns a consumer's messages in the order of
		// their ids (apply #return{}: maps:fold over the ids), whatever
		// the order the channel sent them in: a tx.commit, which settles
		// from the highest tag down, redelivers them from the lowest
		// (tx-commit-settles-before-enqueues.txt).
		ds = slices.Clone(ds)
		slices.SortStableFunc(ds, byTag[T])
	}
	settled := q.settled[:0]
	for _, d := range ds {
		if q.stale != nil && q.settleStale(d, how) {
			continue
		}
		q.unacked--
		if d.Consumer == nil {
			q.getDone()
			q.settledOut(nil, d.Message)
		} else if !d.Consumer.NoAck {
			delete(q.owner, d.Message)
			q.settledOut(d.Consumer, d.Message)
			q.release(d.Consumer)
			settled = append(settled, d.Consumer)
		}
		switch how {
		case Requeue, RequeueFailed:
			q.giveBack(d.Message, !q.hasLimit, how == RequeueFailed)
		case Reject, RejectFailed:
			if how == RejectFailed && q.opts.Rules.SplitDeliveryCount {
				// #discard{} counts a failed delivery in the dead letter's
				// delivery_count (4.3).
				d.Message.deliveryCount++
			}
			q.deadLetter(publisherCopy(d.Message), "rejected")
		}
	}
	q.rotation.Credit(settled)
	scratch.Zero(settled)
	q.settled = settled[:0]
	q.maybeHandOver()
	// The length limits are evaluated by the Dispatch that follows, after
	// the returned messages went out: rabbit_fifo's return and discard
	// run checkout, which evaluates them last (s13038: a 4.3 quorum queue
	// over x-max-length-bytes delivers the returned messages it would
	// otherwise drop; quorum-return-before-limit.txt).
}

// byTag orders settlements by delivery tag.
func byTag[T any](a, b Settled[T]) int { return cmp.Compare(a.Tag, b.Tag) }

// giveBack is a return: the delivery count goes up (return_one/6 and the
// #requeue{} command alike) and a message over the delivery limit is
// dead-lettered with reason delivery_limit, or dropped without a
// dead-letter exchange. Otherwise, toBack re-enqueues it at the tail
// with a new index, as 3.10 does for nack and reject when no delivery
// limit is set (handle_aux turns the #return{} into #requeue{}:
// quorum-requeue-positions.txt); else it joins returns, served first
// (quorum-requeue-with-limit.txt).
//
// In 4.3 (Rules.SplitDeliveryCount) every return counts in
// acquired_count, and only a failed delivery (basic.reject, a channel
// that closed) in delivery_count, which the limit is compared with.
func (q *quorum[T]) giveBack(m *Message, toBack, failed bool) {
	if q.opts.Rules.SplitDeliveryCount {
		m.acquiredCount++
		if failed {
			m.deliveryCount++
		}
	} else {
		m.deliveryCount++
	}
	if q.hasLimit && m.deliveryCount > q.limit {
		q.deadLetter(publisherCopy(m), "delivery_limit")
		return
	}
	q.readyBytes += int64(m.size)
	if toBack {
		q.requeued = true
		q.nextSeq++
		m.Seq = q.nextSeq
		q.messages.pushBack(m)
		return
	}
	q.returns.pushBack(m)
}

// getDone ends the one-shot consumer of a basic.get whose message was
// settled or returned: removing it sets last_active (quorum-expires.txt:
// the queue outlives the tick that would have deleted it counting from
// the get).
func (q *quorum[T]) getDone() {
	q.gets--
	q.lastActive = q.env.Now()
}

// release notes that consumer c settled or lost one checked-out message,
// forgetting a cancelled consumer that holds none any more. A registered
// consumer keeps its entry at 0 (RemoveConsumer drops it): one that takes
// and settles a message at a time does not add and delete it each time.
func (q *quorum[T]) release(c *consumer.Consumer[T]) {
	n := q.held[c] - 1
	if n > 0 {
		q.held[c] = n
		return
	}
	if !q.gone[c] {
		q.held[c] = 0
		return
	}
	delete(q.held, c)
	delete(q.gone, c)
	delete(q.keys, c)
	delete(q.timings, c)
	q.lastActive = q.env.Now()
}

// Return takes back the unacked messages of a channel that closed: they
// join returns, ahead of the other messages, whether or not a delivery
// limit is set (rabbit_fifo:return_all/5 after the consumer's process
// went down; quorum-close-returns.txt). rabbit_fifo returns them consumer
// by consumer in the order of its consumers map (handle_down/3), each
// consumer's in the order it took them. In 3.10 the map is keyed by
// {Tag, Pid}: the basic.get messages first (their tag is the delivery
// tag, digits), then each consumer's by consumer tag. From 4.0
// (Rules.ReturnsByConsumerKey) a consumer's key is the Raft index of its
// checkout, an integer, and a basic.get's is still {Tag, Pid}, which
// sorts after integers: each consumer's messages in registration order,
// then the basic.get ones (quorum-close-return-order.txt). ms, in the
// channel's delivery order, is sorted so; basic.get messages keep that
// order (rabbit_fifo orders them by their delivery tags as binaries, so
// "10" before "9", which amqpsim does not model).
//
// A delivery the queue timed out and took back already stays where it
// is.
func (q *quorum[T]) Return(ms []*Message) {
	if q.stale != nil {
		ms = slices.DeleteFunc(ms, func(m *Message) bool {
			_, ok := q.stale[m]
			delete(q.stale, m)
			return ok
		})
	}
	slices.SortStableFunc(ms, q.returnOrder)
	for _, m := range ms {
		q.unacked--
		if c, ok := q.owner[m]; ok {
			delete(q.owner, m)
			q.settledOut(c, m)
			q.release(c)
		} else {
			q.getDone()
			q.settledOut(nil, m)
		}
		if r := q.opts.Rules; r.QuorumReadsDeliveryCount && !r.SplitDeliveryCount {
			// Before 4.3 a closed channel's return is the one return
			// that counts in delivery_count (return_all/6 with
			// DelivFailed true; the dead letter carries it).
			m.Failures++
		}
		q.giveBack(m, false, true)
	}
	q.maybeHandOver()
	q.evaluateLimit()
}

// returnOrder orders a closed channel's messages as rabbit_fifo returns
// them: basic.get ones (no owner) first, then by the holder's tag; from
// 4.0 by the holder's key, basic.get ones last.
func (q *quorum[T]) returnOrder(a, b *Message) int {
	ca, heldA := q.owner[a]
	cb, heldB := q.owner[b]
	if q.opts.Rules.ReturnsByConsumerKey {
		if !heldA || !heldB {
			return cmp.Compare(btoi(!heldA), btoi(!heldB))
		}
		return cmp.Compare(q.keys[ca], q.keys[cb])
	}
	if !heldA || !heldB {
		return cmp.Compare(btoi(heldA), btoi(heldB))
	}
	return strings.Compare(ca.Tag, cb.Tag)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Purge removes the ready messages, returns and messages alike, and from
// 4.3 the at-least-once dead letters waiting for their targets
// (Rules.QuorumPurgeTakesDeadLetters); checked out ones stay.
func (q *quorum[T]) Purge() (int, error) {
	n := q.Ready()
	if q.opts.Rules.QuorumPurgeTakesDeadLetters && len(q.dlx) > 0 {
		n += len(q.dlx)
		clear(q.dlx)
		q.dlx, q.dlxBytes = q.dlx[:0], 0
		q.dlxTimer = false
		q.env.StopTimer(DeadLetterTimer)
	}
	q.returns = ring{}
	q.messages.clear()
	q.readyBytes = 0
	q.evaluateLimit()
	q.ensureTTLTimer()
	return n, nil
}

// Touch does nothing: a quorum queue's last_active moves only with its
// own commands (basic.get, consumer removal), not with queue.declare,
// passive or not (quorum-expires.txt: publishing and declaring do not keep
// a queue alive).
func (q *quorum[T]) Touch() {}

// quorumTick is the period of rabbit_fifo:tick/2, RabbitMQ's default
// quorum_tick_interval (5000 ms). Probed on RabbitMQ 3.10.8 with a small
// amqp091-go program (not in the repo): quorum queues with x-expires 1000
// and no activity all still existed 3.5 s after declaration and were all
// gone at 5.5 s; a basic.get, get-empty or basic.cancel at 4.3 s kept
// them past 5.5 s, a publish or passive declare at 4.3 s did not.
const quorumTick = 5_000_000_000

// scheduleTick sets the expires timer at the queue's next tick after
// now, when it has x-expires: only the tick deletes an expired quorum
// queue.
func (q *quorum[T]) scheduleTick() {
	if q.limits.Expires <= 0 {
		return
	}
	now := q.env.Now()
	next := q.created + ((now-q.created)/quorumTick+1)*quorumTick
	q.env.SetTimer(ExpiresTimer, next)
}

// TimerFired runs a timer: the TTL timer drops the expired head messages
// (rabbit_fifo's expire_msgs timeout); the tick reports the queue expired
// when it has no consumers (cancelled ones that hold messages and
// unsettled basic.gets count) and last_active + x-expires has passed
// (is_expired/2), and otherwise waits for the next tick.
func (q *quorum[T]) TimerFired(t Timer) bool {
	switch t {
	case ConsumerTimeoutTimer:
		q.evaluateTimeouts()
	case DeadLetterTimer:
		q.retryDeadLetters()
	case TTLTimer:
		q.ttlSet = false
		if q.opts.Rules.QuorumExpiresEveryHead {
			// expire_shallow/2: the timer expires every head that is due,
			// even when the next message to take is not.
			q.expireHeads()
		}
		q.expire()
	case ExpiresTimer:
		if q.limits.Expires <= 0 {
			return false // a policy took x-expires away
		}
		if q.ConsumerCount() == 0 && q.env.Now() > q.lastActive+int64(q.limits.Expires) {
			return true
		}
		q.scheduleTick()
	}
	return false
}
