package modeltest

import (
	"cmp"
	"fmt"
	"slices"
	"sort"

	"github.com/amqpsim/amqpsim/scenarios"
)

// consume is basic.consume (sections 2 and 5). The consumer joins the
// tail of its priority band. On a single active consumer queue the first
// consumer to register is the active one; one that registers while another
// is active waits, whatever its x-priority: a classic queue never lets a
// newcomer pre-empt the active consumer.
func (m *model) consume(ch *mChan, o scenarios.Consume) *errInfo {
	// The channel checks the tag before it looks at the queue
	// (rabbit_channel handle_method basic.consume: maps:find(ConsumerTag,
	// ConsumerMapping) comes first).
	if ch.live[o.Tag] != nil {
		return protoErr(530, "basic.consume", "attempt to reuse consumer tag '%s'", o.Tag)
	}
	q := m.queues[o.Queue]
	if q == nil {
		return protoErr(404, "basic.consume", "no queue '%s' in vhost '/'", o.Queue)
	}
	if q.quorum {
		return m.consumeQuorum(ch, q, o)
	}
	if q.exclusive || o.Exclusive && (len(q.consumers) > 0 || q.sac) {
		return protoErr(403, "basic.consume", "%s in exclusive use", m.resource(q.name))
	}
	c := &mCons{tag: o.Tag, ch: ch, q: q, noAck: o.NoAck, exclusive: o.Exclusive, args: o.Args, prio: xPriority(o)}
	if !o.NoAck { // no-ack consumers get no credit entry: unlimited
		c.prefetch = ch.prefetch
		if m.mutant {
			c.prefetch++
		}
	}
	q.consumers = append(q.consumers, c)
	q.hadCons = true
	q.bands[c.prio] = append(q.bands[c.prio], c)
	if o.Exclusive {
		q.exclusive = true
	}
	if q.sac && q.active == nil {
		q.active = c
	}
	ch.consumers = append(ch.consumers, c)
	ch.live[c.tag] = c
	m.cons[len(m.cons)-1] = c
	m.touchExpires(q) // stops it
	m.markDirty(q)
	return nil
}

// cancel is basic.cancel of a live consumer (section 5). The consumer
// goes; its unacked deliveries stay on the channel until they are settled
// or the channel closes. An auto-delete queue it leaves without consumers
// is deleted. Otherwise a single active consumer queue whose active
// consumer it was hands over to the next one, the queue restarts x-expires
// if it has no consumers now, and it is dispatched, which lets the new
// active consumer take messages.
func (m *model) cancel(c *mCons) {
	q := c.q
	wasActive := q.active == c
	m.forget(c)
	if q.autoDel && len(q.consumers) == 0 {
		m.cover["auto-delete queue deleted by a cancel"]++
		m.deleteQueue(q)
		return
	}
	if wasActive {
		m.handOver(q)
	}
	m.touchExpires(q)
	m.markDirty(q)
}

// forget takes a consumer off its queue and its channel, and nothing more.
func (m *model) forget(c *mCons) {
	q := c.q
	c.cancelled = true
	delete(c.ch.live, c.tag)
	q.consumers = slices.DeleteFunc(q.consumers, func(x *mCons) bool { return x == c })
	q.bands[c.prio] = slices.DeleteFunc(q.bands[c.prio], func(x *mCons) bool { return x == c })
	if c.exclusive {
		q.exclusive = false
	}
	if q.active == c {
		q.active = nil
	}
}

// handOver picks the single active consumer of q after the active one was
// cancelled or its channel went down. RabbitMQ takes the head of the
// queue's consumer priority queue (rabbit_queue_consumers:get_consumer/1,
// from new_single_active_consumer_after_basic_cancel/5 and
// new_single_active_consumer_after_channel_down/4): the highest x-priority,
// and among equals the one registered first. (Waiting consumers of a
// single active consumer queue are never offered a message, so they never
// move within their band: its order is the order they registered in.)
func (m *model) handOver(q *mQueue) {
	if q.quorum {
		// 3.10's rabbit_fifo activates the waiting consumer registered
		// first, whatever its priority (quorum-single-active-consumer.txt).
		if len(q.consumers) > 0 {
			q.active = q.consumers[0]
			m.cover["quorum single active consumer promoted"]++
		}
		return
	}
	waiting := slices.Clone(q.consumers) // in registration order
	slices.SortStableFunc(waiting, func(a, b *mCons) int { return b.prio - a.prio })
	if len(waiting) > 0 {
		q.active = waiting[0]
		m.cover["single active consumer promoted"]++
	}
}

// take removes from the ledger what an ack, nack or reject names.
func (m *model) take(ch *mChan, method string, tag uint64, multiple bool) ([]mEntry, *errInfo) {
	if multiple && tag == 0 {
		all := ch.ledger
		ch.ledger = nil
		return all, nil
	}
	i := slices.IndexFunc(ch.ledger, func(e mEntry) bool { return e.tag == tag })
	if i < 0 {
		return nil, protoErr(406, method, "unknown delivery tag %d", tag)
	}
	var out []mEntry
	if multiple {
		out = append(out, ch.ledger[:i+1]...)
		ch.ledger = slices.Clone(ch.ledger[i+1:])
	} else {
		out = append(out, ch.ledger[i])
		ch.ledger = slices.Delete(slices.Clone(ch.ledger), i, i+1)
	}
	return out, nil
}

// settle applies acks (requeue=false: dropped, or dead-lettered if reject;
// true: back to their place) as RabbitMQ's channel does. The limiter counts the consumer deliveries
// settled first. Then the deliveries go to their queues one (queue,
// consumer tag) group at a time, each group as one message the queue
// handles completely - requeue, credit back (if a window reopened, the
// channel's blocked consumers that have credit rejoin their bands), and
// dispatch - before the next. A basic.get delivery's "consumer tag" is its
// delivery tag, so each one is a group of its own, and they come first (in
// Erlang's term order integers sort before binaries): rabbit_channel
// foreach_per_queue folds a gb_tree keyed by {QName, CTag} (checked against
// RabbitMQ 3.10.8). A group's messages go back (or die) before its credit
// does, and a drop-head queue drops what a requeue put over its limit. Last,
// the queues the limiter released resume.
func (m *model) settle(ch *mChan, ds []mEntry, requeue, reject bool) {
	released := m.release(ch, ds)
	type group struct {
		q  *mQueue
		ds []mEntry
	}
	var groups []*group
	key := func(e mEntry) string {
		if e.cons == nil {
			return fmt.Sprintf("get %020d", e.tag)
		}
		return "tag " + e.cons.tag
	}
	for _, d := range ds {
		i := slices.IndexFunc(groups, func(g *group) bool { return g.q == d.q && key(g.ds[0]) == key(d) })
		if i < 0 {
			groups = append(groups, &group{q: d.q})
			i = len(groups) - 1
		}
		groups[i].ds = append(groups[i].ds, d)
	}
	sort.SliceStable(groups, func(i, j int) bool {
		a, b := groups[i], groups[j]
		if a.q.quorum != b.q.quorum { // a quorum queue's wait for consensus (settle-classic-before-quorum.txt)
			return !a.q.quorum
		}
		if a.q.id != b.q.id {
			return a.q.id < b.q.id
		}
		return key(a.ds[0]) < key(b.ds[0])
	})
	for _, g := range groups {
		q := g.q
		if q.deleted {
			continue // settling a deleted queue's deliveries does nothing
		}
		var held []heldDead
		if !requeue {
			m.heldDead = &held
		}
		for _, d := range g.ds {
			q.unacked--
			if q.quorum {
				m.settleQuorum(q, d.msg, requeue, reject)
				continue
			}
			if requeue {
				m.insertReady(q, d.msg)
			} else if reject {
				m.deadLetter(q, d.msg, "rejected")
			}
		}
		reopened := false
		for _, d := range g.ds {
			if c := d.cons; c != nil {
				full := !c.hasCredit()
				c.outstanding--
				if full && c.hasCredit() && !c.cancelled {
					reopened = true
				}
			}
		}
		if reopened {
			m.unblock(q, ch)
		}
		m.heldDead = nil
		if requeue && !q.quorum {
			m.dropOverLimit(q)
			m.dropExpired(q)
		}
		m.markDirty(q)
		m.flush()
		if requeue && q.quorum {
			// rabbit_fifo's return checks out, then evaluates the limits
			// (quorum-return-before-limit.txt).
			m.dropOverLimit(q)
		}
		for _, h := range held {
			m.deadLetter(h.q, h.msg, h.reason)
		}
		m.flush()
	}
	m.resume(ch, released)
	m.syncTick(ch)
}

// release tells the channel-wide limiter that deliveries were settled (only
// consumer deliveries count) and returns the queues to resume.
func (m *model) release(ch *mChan, ds []mEntry) []*mQueue {
	if ch.limit == 0 {
		return nil
	}
	n := 0
	for _, d := range ds {
		if d.cons != nil {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	was := ch.volume >= ch.limit
	if ch.volume != 0 { // rabbit_limiter never lowers a volume of 0
		ch.volume -= n
	} else {
		m.cover["settlement with volume 0"]++
	}
	if ch.volume < 0 {
		m.cover["negative volume"]++
	}
	return m.released(ch, was)
}

// setLimit is basic.qos global=true (and, with 0, global=false's clearing).
func (m *model) setLimit(ch *mChan, limit int) {
	was := ch.limit != 0 && ch.volume >= ch.limit
	switch {
	case limit == 0:
		ch.limit, ch.volume = 0, 0
	case ch.limit == 0:
		ch.limit, ch.volume = limit, len(ch.ledger) // basic.get deliveries included
		if slices.ContainsFunc(ch.ledger, func(e mEntry) bool { return e.cons == nil }) {
			m.cover["global limit switched on with basic.get deliveries unacked"]++
		}
	default:
		ch.limit = limit
	}
	m.resume(ch, m.released(ch, was))
}

// released returns the refused queues if the limit stopped being reached.
func (m *model) released(ch *mChan, was bool) []*mQueue {
	if !was || ch.limit != 0 && ch.volume >= ch.limit {
		return nil
	}
	qs := ch.refused
	ch.refused = nil
	return qs
}

// resume resumes queues the limiter released, starting at a random position
// as rabbit_limiter:notify_queues does.
func (m *model) resume(ch *mChan, qs []*mQueue) {
	start := 0
	if len(qs) > 1 {
		m.cover["global limit released to several queues"]++
		start = m.rng.IntN(len(qs))
	}
	for i := range qs {
		q := qs[(start+i)%len(qs)]
		if q.deleted {
			continue
		}
		if ch.suspended[q] {
			delete(ch.suspended, q)
			m.unblock(q, ch)
		}
		m.markDirty(q)
	}
}

func (c *mCons) hasCredit() bool { return c.noAck || c.prefetch == 0 || c.outstanding < c.prefetch }

// unblock moves the channel's blocked consumers of q that have credit back
// to the tails of their bands, in the order they were blocked.
func (m *model) unblock(q *mQueue, ch *mChan) {
	var moving []*mCons
	for _, c := range q.consumers {
		if c.ch == ch && c.blocked && c.hasCredit() {
			moving = append(moving, c)
		}
	}
	sort.Slice(moving, func(i, j int) bool { return moving[i].blockedAt < moving[j].blockedAt })
	if len(moving) > 1 {
		m.cover["several consumers unblocked at once"]++
	}
	for _, c := range moving {
		c.blocked = false
		q.bands[c.prio] = append(q.bands[c.prio], c)
	}
}

func (m *model) block(c *mCons) {
	q := c.q
	q.bands[c.prio] = slices.DeleteFunc(q.bands[c.prio], func(x *mCons) bool { return x == c })
	m.blocks++
	c.blocked, c.blockedAt = true, m.blocks
	if c.ch.closed {
		return
	}
	if c.hasCredit() {
		m.cover["consumer blocked by the global limit"]++
	} else {
		m.cover["consumer blocked by its prefetch"]++
	}
}

// canTake is the queue's question to a consumer at the head of the
// rotation: its channel not suspended, its own window open, then the
// channel-wide limiter's can_send (which counts an ack-mode delivery).
func (m *model) canTake(c *mCons) bool {
	ch := c.ch
	if ch.closed || ch.suspended[c.q] || !c.hasCredit() {
		return false
	}
	if c.q.quorum {
		return true // a quorum queue never asks the channel-wide limiter
	}
	if ch.limit != 0 {
		if ch.volume >= ch.limit {
			ch.suspended[c.q] = true
			if !slices.Contains(ch.refused, c.q) {
				ch.refused = append(ch.refused, c.q)
			}
			return false
		}
		if !c.noAck {
			ch.volume++
		}
	}
	return true
}

func (m *model) markDirty(q *mQueue) {
	if !q.deleted && !slices.Contains(m.dirty, q) {
		m.dirty = append(m.dirty, q)
	}
}

// flush dispatches the dirty queues, including those that become dirty on
// the way (dead-lettering into them); a queue that becomes dirty again
// after its dispatch is dispatched again.
func (m *model) flush() {
	var done []*mQueue
	for len(m.dirty) > 0 {
		q := m.dirty[0]
		m.dirty = m.dirty[1:]
		if !q.deleted {
			if slices.Contains(done, q) {
				m.cover["queue dispatched twice in one flush"]++
			}
			done = append(done, q)
			m.dispatch(q)
		}
	}
	m.dirty = nil
}

// dispatch delivers, dropping expired heads after every delivery.
func (m *model) dispatch(q *mQueue) {
	m.deliverReady(q, true)
}

// deliverReady hands the head message to the next consumer that can take
// it, while there is one; with expire, expired heads are dropped after
// every delivery (the delivered head itself may have expired).
func (m *model) deliverReady(q *mQueue, expire bool) {
	// A quorum queue's checkout sends each consumer its messages
	// together, consumers in registration order (quorum-delivery-groups.txt):
	// the tags are given when the checkout ends, or before an expiry.
	var batch []checkedOut
	defer func() { m.handOut(batch, q) }()
	for {
		if q.quorum {
			if len(batch) > 0 && len(q.ready) > 0 && q.ready[0].expires && q.ready[0].expiry <= m.now {
				m.handOut(batch, q)
				batch = batch[:0]
			}
			m.expireQuorum(q) // rabbit_fifo:checkout_one/4 expires first
		}
		if len(q.ready) == 0 {
			return
		}
		c := m.next(q)
		if c == nil {
			return
		}
		msg := q.ready[0]
		q.ready = q.ready[1:]
		redelivered := msg.delivered
		if q.quorum {
			redelivered = m.takeQuorum(q, msg)
		}
		msg.delivered = true
		if !c.noAck {
			q.unacked++
			c.outstanding++
		}
		if q.quorum {
			if !c.hasCredit() {
				m.block(c) // rabbit_fifo drops it from the service queue at once
			}
			batch = append(batch, checkedOut{c, msg, redelivered})
			continue
		}
		m.hand(c, q, msg, redelivered)
		if expire {
			m.dropExpired(q)
		}
	}
}

// checkedOut is a message a quorum queue's checkout gave a consumer.
type checkedOut struct {
	c           *mCons
	msg         *mMsg
	redelivered bool
}

// handOut delivers what one quorum checkout took, grouped by consumer in
// registration order, unless the checkout followed 3.10's per-message
// requeues (q.requeued), each checked out on its own.
func (m *model) handOut(batch []checkedOut, q *mQueue) {
	if !q.requeued {
		slices.SortStableFunc(batch, func(a, b checkedOut) int {
			return cmp.Compare(slices.Index(m.cons, a.c), slices.Index(m.cons, b.c))
		})
	}
	if len(batch) > 0 {
		q.requeued = false
	}
	for _, o := range batch {
		m.hand(o.c, q, o.msg, o.redelivered)
	}
}

// hand gives a delivery its tag and puts it in the consumer's inbox.
func (m *model) hand(c *mCons, q *mQueue, msg *mMsg, redelivered bool) {
	ch := c.ch
	ch.lastTag++
	if !c.noAck {
		ch.ledger = append(ch.ledger, mEntry{at: m.now, tag: ch.lastTag, q: q, msg: msg, cons: c})
		m.syncTick(ch)
	}
	d := delivery(c.tag, ch.lastTag, redelivered, q.name, msg)
	if q.quorum {
		d = withDeliveryCount(d, msg, false)
	}
	c.inbox = append(c.inbox, d)
	if redelivered {
		m.cover["redelivery to a consumer"]++
	}
	if msg.prio > 0 {
		m.cover["priority message delivered"]++
	}
	if ch.limit > 0 && ch.volume == ch.limit {
		m.cover["delivery filled the global limit"]++
	}
	m.noteDelivery(msg)
}

// next picks the consumer for the head message: on a single active consumer
// queue only the active one; otherwise the head of the highest band that can
// take it, blocking (lazily) each one that cannot, and moving the chosen one
// to its band's tail.
func (m *model) next(q *mQueue) *mCons {
	if q.sac {
		c := q.active
		if c == nil || c.blocked {
			return nil
		}
		if !m.canTake(c) {
			m.block(c)
			return nil
		}
		return c
	}
	var prios []int
	for p := range q.bands {
		prios = append(prios, p)
	}
	sort.Sort(sort.Reverse(sort.IntSlice(prios)))
	for _, p := range prios {
		for len(q.bands[p]) > 0 {
			c := q.bands[p][0]
			if m.canTake(c) {
				q.bands[p] = append(q.bands[p][1:], c)
				if len(q.bands[p]) > 1 {
					m.cover["round robin within a band"]++
				}
				return c
			}
			m.block(c)
		}
	}
	return nil
}
