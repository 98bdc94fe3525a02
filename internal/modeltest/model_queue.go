package modeltest

import (
	"slices"
	"time"

	"github.com/amqpsim/amqpsim/scenarios"
	"github.com/amqpsim/amqpsim/sim"
)

// publish routes through the default exchange: to the queue named by the
// routing key, if there is one. It reports whether the message was routed,
// and whether the queue refused it (reject-publish).
func (m *model) publish(o scenarios.Publish) (routed, rejected bool) {
	q := m.queues[o.Key]
	if q == nil {
		return false, false
	}
	msg := &mMsg{body: body(o), key: o.Key, pubPrio: o.Props.Priority, exp: o.Props.Expiration}
	ttl, hasTTL := expiration(o)
	return true, !m.enqueue(q, msg, ttl, hasTTL)
}

// enqueue puts a message that reached q into it (RabbitMQ's
// deliver_or_enqueue), ttl being the message's own TTL in ms. It reports
// false if q refused it (reject-publish).
func (m *model) enqueue(q *mQueue, msg *mMsg, ttl int, hasTTL bool) bool {
	if q.quorum {
		m.enqueueQuorum(q, msg, ttl, hasTTL)
		return true
	}
	a := q.args
	// reject-publish looks before anything else, even with a consumer
	// waiting: one more ready message must fit.
	if !a.dropHead() && (a.HasMaxLen && len(q.ready)+1 > a.MaxLen || a.HasMaxBytes && readyBytes(q)+len(msg.body) > a.MaxBytes) {
		m.cover["message rejected at publish ("+a.Overflow+")"]++
		if a.Overflow == "reject-publish-dlx" {
			m.deadLetter(q, msg, "maxlen")
		}
		return false
	}
	// The expiry is fixed now: the smaller of the two TTLs.
	if a.HasTTL && (!hasTTL || a.TTL < ttl) {
		ttl, hasTTL = a.TTL, true
	}
	msg.expires, msg.expiry = hasTTL, m.now+time.Duration(ttl)*time.Millisecond
	wasEmpty := len(q.ready) == 0
	// x-message-ttl 0 without a dead-letter exchange: what cannot go to a
	// consumer at once is discarded. Only an empty queue can hand it to
	// one.
	if a.HasTTL && a.TTL == 0 && !wasEmpty && !a.DLX {
		m.cover["message discarded (x-message-ttl 0)"]++
		return true
	}
	q.seq++
	msg.seq, msg.prio, msg.delivered = q.seq, 0, false
	if q.maxPrio > 0 {
		msg.prio = min(int(msg.pubPrio), q.maxPrio)
	}
	m.insertReady(q, msg)
	if wasEmpty && len(q.consumers) > 0 {
		// Straight to a waiting consumer, expired or not; then nothing
		// else happens.
		m.deliverReady(q, false)
		if len(q.ready) == 0 {
			if msg.expires && msg.expiry <= m.now {
				m.cover["expired message handed straight to a consumer"]++
			}
			m.markDirty(q)
			return true
		}
	}
	dropped := m.dropOverLimit(q)
	// Expired heads are dropped if the queue now holds one message, or
	// if the length limit dropped some, but not when both and the
	// message has no expiry.
	one := len(q.ready) == 1
	if (dropped || one) && !(dropped && one && !msg.expires) {
		m.dropExpired(q)
	}
	m.markDirty(q)
	return true
}

func readyBytes(q *mQueue) int {
	n := 0
	for _, msg := range q.ready {
		n += len(msg.body)
	}
	return n
}

// dropOverLimit drops from the head while a drop-head queue has more ready
// messages (or bytes) than its limit; they die of "maxlen". It reports
// whether it dropped any.
func (m *model) dropOverLimit(q *mQueue) bool {
	a := q.args
	dropped := false
	for a.dropHead() && len(q.ready) > 0 && (a.HasMaxLen && len(q.ready) > a.MaxLen || a.HasMaxBytes && readyBytes(q) > a.MaxBytes) {
		msg := q.ready[0]
		q.ready = q.ready[1:]
		m.cover["message dropped from the head (max-length)"]++
		m.deadLetter(q, msg, "maxlen")
		dropped = true
	}
	return dropped
}

// dropExpired drops the head while its expiry has come: only the head ever
// expires (of a priority queue too: the highest priority's head). Then the
// TTL timer is set for the new head's expiry, if it has one, unless the
// timer is already set no more than 1 ms after it. An empty queue is left
// alone.
func (m *model) dropExpired(q *mQueue) {
	if len(q.ready) == 0 || q.quorum { // a quorum queue: expireQuorum
		return
	}
	for len(q.ready) > 0 && q.ready[0].expires && q.ready[0].expiry <= m.now {
		msg := q.ready[0]
		q.ready = q.ready[1:]
		m.cover["message expired at the head"]++
		if msg.delivered {
			m.cover["requeued message expired"]++
		}
		m.deadLetter(q, msg, "expired")
	}
	if len(q.ready) > 0 && q.ready[0].expires {
		if e := q.ready[0].expiry; !q.ttl.on || e+time.Millisecond < q.ttl.due {
			if q.ttl.on {
				m.cover["TTL timer moved earlier"]++
			}
			m.setTimer(&q.ttl, e)
		}
	}
}

// deadLetter republishes a message that left q for reason to the default
// exchange with q's dead-letter routing key (or its own key), after
// recording the death in its x-death. A queue the message already died in
// with no rejection since is a cycle: the message is dropped. Without a
// dead-letter exchange, or a queue to route to, the message is dropped.
func (m *model) deadLetter(q *mQueue, msg *mMsg, reason string) {
	if !q.args.DLX {
		return
	}
	if m.heldDead != nil {
		*m.heldDead = append(*m.heldDead, heldDead{q, msg, reason})
		return
	}
	key := msg.key
	if q.args.DLRK != "" {
		key = q.args.DLRK
	}
	dead := &mMsg{body: msg.body, key: key, pubPrio: msg.pubPrio, first: msg.first}
	if len(msg.deaths) == 0 {
		dead.first = mDeath{queue: q.name, reason: reason}
	}
	dead.deaths = []mDeath{{queue: q.name, reason: reason, count: 1, at: m.now, key: msg.key, exp: msg.exp}}
	for _, d := range msg.deaths {
		if d.queue == q.name && d.reason == reason && dead.deaths[0].count == 1 {
			d.count++
			dead.deaths[0] = d // keeps its first time, key and expiration
			continue
		}
		dead.deaths = append(dead.deaths, d)
	}
	if dead.deaths[0].count > 1 {
		m.cover["x-death count above 1"]++
	}
	t := m.queues[key]
	if t == nil {
		return
	}
	for _, d := range dead.deaths {
		if d.reason == "rejected" {
			break
		}
		if d.queue == t.name {
			m.cover["dead-letter cycle dropped"]++
			return
		}
	}
	if t != q {
		m.cover["dead-lettered into another queue"]++
	}
	m.enqueue(t, dead, 0, false)
}

// heldDead is a dead letter held back until its queue has dispatched.
type heldDead struct {
	q      *mQueue
	msg    *mMsg
	reason string
}

// touchExpires restarts the queue's x-expires timer if it has no consumers,
// and stops it if it has.
func (m *model) touchExpires(q *mQueue) {
	if q.args.Expires == 0 || q.deleted {
		return
	}
	if len(q.consumers) > 0 {
		q.expires.on = false
		return
	}
	m.setTimer(&q.expires, m.now+time.Duration(q.args.Expires)*time.Millisecond)
}

func (m *model) setTimer(t *mTimer, due time.Duration) {
	m.seq++
	*t = mTimer{on: true, due: due, seq: m.seq}
}

// insertReady puts a message at its place: after every message of higher
// priority or of its priority and a lower sequence number.
func (m *model) insertReady(q *mQueue, msg *mMsg) {
	i := 0
	for i < len(q.ready) && (q.ready[i].prio > msg.prio || q.ready[i].prio == msg.prio && q.ready[i].seq < msg.seq) {
		i++
	}
	q.ready = slices.Insert(q.ready, i, msg)
}

func delivery(ctag string, tag uint64, redelivered bool, queue string, msg *mMsg) sim.Delivery {
	d := sim.Delivery{ConsumerTag: ctag, DeliveryTag: tag, Redelivered: redelivered, RoutingKey: msg.key, Queue: queue}
	d.Priority = msg.pubPrio
	d.Expiration = msg.exp
	d.Body = []byte(msg.body)
	if len(msg.deaths) > 0 {
		var deaths []any
		for _, x := range msg.deaths {
			e := sim.Table{"count": x.count, "reason": x.reason, "queue": x.queue, "exchange": "",
				"time": sim.Epoch().Add(x.at).Truncate(time.Second).UTC(), "routing-keys": []any{x.key}}
			if x.exp != "" {
				e["original-expiration"] = x.exp
			}
			deaths = append(deaths, e)
		}
		d.Headers = sim.Table{"x-death": deaths, "x-first-death-reason": msg.first.reason,
			"x-first-death-queue": msg.first.queue, "x-first-death-exchange": ""}
	}
	return d
}

// noteDelivery counts what a delivered message shows.
func (m *model) noteDelivery(msg *mMsg) {
	if len(msg.deaths) > 0 {
		m.cover["dead-lettered message delivered ("+msg.deaths[0].reason+")"]++
	}
	if len(msg.deaths) > 1 {
		m.cover["message delivered after two deaths"]++
	}
}
