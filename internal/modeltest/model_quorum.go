package modeltest

import (
	"maps"
	"sort"
	"time"

	"github.com/amqpsim/amqpsim/scenarios"
	"github.com/amqpsim/amqpsim/sim"
)

// The model's quorum queues: RabbitMQ 3.10's rabbit_fifo as an AMQP 0-9-1
// client sees it on one node, re-stated from the recordings in
// scenarios/library/quorum-*.txt, not from queue/quorum*.go.
//
//   - A queue's ready slice is its returns (the first q.returns entries,
//     served first, in the order they came back) followed by its other
//     messages in enqueue order. No priorities, no length limits (the
//     generators declare none).
//   - A message's expiry is fixed when it arrives (the smaller of
//     x-message-ttl and its expiration) and kept when it comes back. Only
//     the head expires: before every checkout and basic.get and when the
//     TTL timer, kept at the head's expiry, fires (expireQuorum). A TTL
//     of 0 is 1 ms (quorum-ttl-zero.txt).
//   - A consumer's credit is its prefetch, 2000 for prefetch 0; a no-ack
//     consumer's never runs out. A consumer whose credit runs out leaves
//     the round robin at once and rejoins at the tail of its priority when
//     a settlement gives it credit (quorum-credit-rejoin.txt). The
//     channel-wide limiter is never asked, and basic.consume on a channel
//     with a global limit closes the connection with 540
//     (quorum-errors.txt); settlements still lower the limiter's volume
//     (quorum-global-qos-after-consume.txt).
//   - Every return (nack, reject or recover with requeue, a channel that
//     closed) raises the message's delivery count; a message whose count
//     passes x-delivery-limit is dead-lettered with reason delivery_limit,
//     or dropped (quorum-delivery-limit.txt). Otherwise a channel close
//     puts its unacked messages at the tail of the returns, basic.get ones
//     first, then consumer by consumer in tag order
//     (quorum-close-returns.txt, quorum-return-order.txt,
//     quorum-close-return-order.txt); nack, reject and
//     recover do too when the queue has a delivery limit
//     (quorum-requeue-with-limit.txt) and, without one, enqueue the message
//     again at the tail (quorum-requeue-positions.txt,
//     quorum-recover-nack-multiple.txt).
//   - A delivery is redelivered exactly when its count is above 0, and
//     then carries x-delivery-count; a basic.get always carries it, 0 the
//     first time (quorum-get.txt). A dead-lettered message leaves without
//     it (quorum-delivery-limit.txt).
//   - queue.declare-ok and the queue's stats count as consumers the live
//     ones, the cancelled ones still holding messages, and each unsettled
//     basic.get (quorum-errors.txt, quorum-purge-delete-noack.txt).
//   - With x-single-active-consumer only the active consumer takes
//     messages and counts as a consumer; when it goes, the waiting one
//     registered first takes over, whatever its priority; basic.get is
//     refused with 405 (quorum-single-active-consumer.txt).
//   - An exclusive consume is not exclusive (quorum-errors.txt);
//     queue.delete with if-unused or if-empty closes the connection with
//     540, if-unused looked at first (rabbit_quorum_queue:delete/4's
//     clause order).

// enqueueQuorum appends a message that reached a quorum queue, ttl being
// its own TTL in ms: its expiry is the smaller of that and the queue's.
func (m *model) enqueueQuorum(q *mQueue, msg *mMsg, ttl int, hasTTL bool) {
	if a := q.args; a.HasTTL && (!hasTTL || a.TTL < ttl) {
		ttl, hasTTL = a.TTL, true
	}
	if hasTTL && ttl == 0 {
		ttl = 1 // rabbit_fifo:update_expiry_header/3 (quorum-ttl-zero.txt)
		m.cover["quorum TTL 0"]++
	}
	q.seq++
	msg.seq, msg.prio, msg.delivered, msg.count = q.seq, 0, false, 0
	msg.expires, msg.expiry = hasTTL, m.now+time.Duration(ttl)*time.Millisecond
	q.ready = append(q.ready, msg)
	m.syncQuorumTTL(q)
	m.markDirty(q)
}

// expireQuorum drops the head while it has expired (its expiry has come,
// the same millisecond included): only the next message to take, returns
// first, is looked at, so an expired message behind a live one waits
// (quorum-ttl.txt, quorum-ttl-returns.txt). Then the TTL timer follows
// the new head.
func (m *model) expireQuorum(q *mQueue) {
	for len(q.ready) > 0 && q.ready[0].expires && q.ready[0].expiry <= m.now {
		msg := q.ready[0]
		q.ready = q.ready[1:]
		m.takeQuorum(q, msg)
		m.cover["quorum message expired at the head"]++
		if msg.count > 0 {
			m.cover["quorum returned message expired"]++
		}
		m.deadLetter(q, msg, "expired")
	}
	m.syncQuorumTTL(q)
}

// syncQuorumTTL sets the TTL timer for the head's expiry, unless it is set
// for that time already, or stops it if the head has none.
func (m *model) syncQuorumTTL(q *mQueue) {
	if len(q.ready) > 0 && q.ready[0].expires {
		if e := q.ready[0].expiry; !q.ttl.on || q.ttl.due != e {
			m.setTimer(&q.ttl, e)
		}
		return
	}
	q.ttl.on = false
}

// takeQuorum removes the head of a quorum queue and reports whether it is
// a redelivery.
func (m *model) takeQuorum(q *mQueue, msg *mMsg) bool {
	if q.returns > 0 {
		q.returns--
		m.cover["quorum return served first"]++
	}
	return msg.count > 0
}

// withDeliveryCount adds x-delivery-count to a quorum delivery: to every
// basic.get, else once the message came back.
func withDeliveryCount(d sim.Delivery, msg *mMsg, get bool) sim.Delivery {
	if msg.count == 0 && !get {
		return d
	}
	h := sim.Table{}
	maps.Copy(h, d.Headers)
	h["x-delivery-count"] = msg.count
	d.Headers = h
	return d
}

// consumeQuorum registers a consumer of a quorum queue.
func (m *model) consumeQuorum(ch *mChan, q *mQueue, o scenarios.Consume) *errInfo {
	if ch.limit != 0 {
		m.cover["quorum consume refused: global qos"]++
		return protoErr(540, "basic.consume", "queue '%s' in vhost '/' does not support global qos", q.name)
	}
	c := &mCons{tag: o.Tag, ch: ch, q: q, noAck: o.NoAck, exclusive: o.Exclusive, args: o.Args, prio: xPriority(o)}
	if !o.NoAck {
		c.prefetch = ch.prefetch
		if c.prefetch == 0 {
			c.prefetch = 2000 // rabbit_quorum_queue:consume/3, 3.10
		}
		if m.mutant {
			c.prefetch++
		}
	}
	if o.Exclusive && len(q.consumers) > 0 {
		m.cover["quorum exclusive consume beside another"]++
	}
	q.consumers = append(q.consumers, c)
	q.hadCons = true
	q.bands[c.prio] = append(q.bands[c.prio], c)
	if q.sac && q.active == nil {
		q.active = c
	}
	ch.consumers = append(ch.consumers, c)
	ch.live[c.tag] = c
	m.cons[len(m.cons)-1] = c
	m.markDirty(q)
	return nil
}

// getQuorum is basic.get of a quorum queue with a message ready.
func (m *model) getQuorum(ch *mChan, q *mQueue, o scenarios.Get, r *result) {
	msg := q.ready[0]
	q.ready = q.ready[1:]
	redelivered := m.takeQuorum(q, msg)
	ch.lastTag++
	if !o.NoAck {
		q.unacked++
		ch.ledger = append(ch.ledger, mEntry{at: m.now, tag: ch.lastTag, q: q, msg: msg})
		m.syncTick(ch)
	}
	if o.NoAck {
		// {dequeue, settled}: the settlement's checkout expires the new
		// head before the count (quorum-get-noack-expires.txt).
		m.expireQuorum(q)
	}
	d := withDeliveryCount(delivery("", ch.lastTag, redelivered, q.name, msg), msg, true)
	d.MessageCount = len(q.ready)
	r.GetOK, r.Get = true, &d
	m.noteDelivery(msg)
	m.markDirty(q)
}

// settleQuorum settles one delivery of a quorum queue: an ack forgets it,
// a reject without requeue dead-letters it, a requeue gives it back.
func (m *model) settleQuorum(q *mQueue, msg *mMsg, requeue, reject bool) {
	switch {
	case requeue:
		m.giveBack(q, msg, !q.args.HasLimit)
	case reject:
		m.deadLetter(q, msg, "rejected")
	}
}

// giveBack returns a message to a quorum queue: its count goes up; past
// the delivery limit it is dead-lettered (or dropped); else it joins the
// returns, or with toBack the tail as a new message.
func (m *model) giveBack(q *mQueue, msg *mMsg, toBack bool) {
	msg.count++
	if msg.count > 1 {
		m.cover["quorum message returned twice"]++
	}
	if a := q.args; a.HasLimit && msg.count > int64(a.Limit) {
		m.cover["quorum delivery limit reached"]++
		if a.DLX {
			m.cover["quorum delivery limit dead-lettered"]++
		}
		m.deadLetter(q, msg, "delivery_limit")
		return
	}
	if toBack {
		q.requeued = true
		q.seq++
		msg.seq = q.seq
		q.ready = append(q.ready, msg)
		m.cover["quorum requeue to the tail"]++
		return
	}
	q.ready = append(q.ready[:q.returns], append([]*mMsg{msg}, q.ready[q.returns:]...)...)
	q.returns++
	m.cover["quorum return"]++
}

// returnAll gives back to a quorum queue what a closed channel held of it:
// its basic.get deliveries first, then each consumer's, consumers by tag
// (rabbit_fifo's consumers map is keyed by {Tag, Pid}), each consumer's
// in the order it got them (quorum-close-return-order.txt).
func (m *model) returnAll(q *mQueue, unacked []mEntry) {
	var mine []mEntry
	for _, d := range unacked {
		if d.q == q {
			mine = append(mine, d)
		}
	}
	key := func(d mEntry) string {
		if d.cons == nil {
			return ""
		}
		return "tag " + d.cons.tag
	}
	sort.SliceStable(mine, func(i, j int) bool { return key(mine[i]) < key(mine[j]) })
	tags := map[string]bool{}
	for _, d := range mine {
		tags[key(d)] = true
		q.unacked--
		m.giveBack(q, d.msg, false)
	}
	if len(tags) > 1 {
		m.cover["quorum close returns from several holders"]++
	}
}

// consumerCount is the consumers queue.declare-ok and the stats report.
// A quorum queue also counts its cancelled consumers that still hold
// messages and its unsettled basic.gets (each a one-shot consumer).
func (m *model) consumerCount(q *mQueue) int {
	n := len(q.consumers)
	if !q.quorum {
		return n
	}
	if q.sac {
		// Waiting consumers do not count (quorum-single-active-consumer.txt).
		n = 0
		if q.active != nil {
			n = 1
		}
	}
	holding := map[*mCons]bool{}
	for _, ch := range m.chans {
		if ch == nil || ch.closed {
			continue
		}
		for _, e := range ch.ledger {
			switch {
			case e.q != q:
			case e.cons == nil:
				n++
			case e.cons.cancelled && !holding[e.cons]:
				holding[e.cons] = true
				n++
			}
		}
	}
	return n
}

// quorumDeleteFlags is queue.delete's refusal of if-unused and if-empty on
// a quorum queue.
func quorumDeleteFlags(q *mQueue, o scenarios.DeleteQueue) *errInfo {
	if !q.quorum {
		return nil
	}
	for _, f := range []struct {
		on   bool
		name string
	}{{o.IfUnused, "if-unused"}, {o.IfEmpty, "if-empty"}} {
		if f.on {
			return protoErr(540, "queue.delete", "cannot delete %s. queue.delete operations with %s flag set are not supported by quorum queues", "queue '"+q.name+"' in vhost '/'", f.name)
		}
	}
	return nil
}
