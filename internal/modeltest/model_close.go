package modeltest

import (
	"slices"
	"time"

	"github.com/amqpsim/amqpsim/sim"
)

// closeChannel ends a channel, by channel.close, by an error, or with its
// connection, as RabbitMQ does (section 5). The channel takes nothing more
// and its consumer-timeout tick stops. Every queue the channel consumed
// from or holds deliveries of hears that it is down (notify_down_all) and
// handles it on its own (rabbit_amqqueue_process:handle_ch_down):
//
//  1. it erases all the channel's consumers; a single active consumer
//     queue whose active consumer was among them hands over to the next
//     (see handOver);
//  2. if it is auto-delete, has had consumers and now has none, it is
//     deleted, and the channel's unacked messages from it go with it;
//  3. otherwise it requeues all the channel's unacked messages from it
//     (basic.get ones and those of consumers cancelled earlier too) to
//     their original positions, where they are marked redelivered, drops
//     what that put over its length limit and what has expired at its
//     head, restarts x-expires if it has no consumers, and is dispatched.
//
// RabbitMQ sends the notice to every queue at once, before any of them
// acts on it, so a message one queue dead-letters while it requeues reaches
// the others after they erased the channel's consumers: step 1 is done in
// every queue first. Steps 2 and 3 then run queue by queue in the
// simulator's order (see the model's doc).
func (m *model) closeChannel(ch *mChan, cause *errInfo) {
	ch.closed, ch.cause, ch.tick.on = true, cause, false
	delete(ch.conn.open, ch.id)
	unacked := ch.ledger
	ch.ledger = nil
	var queues []*mQueue
	for _, c := range ch.consumers {
		if !c.cancelled && !slices.Contains(queues, c.q) {
			queues = append(queues, c.q)
		}
	}
	for _, d := range unacked {
		if !slices.Contains(queues, d.q) {
			queues = append(queues, d.q)
		}
	}
	for _, q := range queues {
		if q.deleted {
			continue
		}
		wasActive := q.active != nil && q.active.ch == ch
		for _, c := range slices.Clone(q.consumers) {
			if c.ch == ch {
				m.forget(c)
			}
		}
		if wasActive {
			m.handOver(q)
		}
	}
	for _, q := range queues {
		if q.deleted {
			continue // settling a deleted queue's deliveries does nothing
		}
		if q.autoDel && q.hadCons && len(q.consumers) == 0 {
			m.cover["auto-delete queue deleted by a channel close"]++
			m.deleteQueue(q)
			continue
		}
		if q.quorum {
			m.returnAll(q, unacked)
		}
		for _, d := range unacked {
			if d.q == q && !q.quorum {
				q.unacked--
				m.insertReady(q, d.msg)
			}
		}
		m.dropOverLimit(q)
		m.dropExpired(q)
		m.touchExpires(q)
		m.markDirty(q)
	}
}

func (m *model) closeConn(c *mConn, cause *errInfo) {
	c.closed, c.cause = true, cause
	var ids []uint16
	for id := range c.open {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	// Every channel stops taking deliveries first: what closing one
	// channel dead-letters cannot reach a consumer on the next.
	for _, id := range ids {
		c.open[id].closed = true
	}
	for _, id := range ids {
		m.closeChannel(c.open[id], cause)
	}
}

// deleteQueue deletes a queue: its ready messages go, its consumers are
// cancelled (with basic.cancel to the client); its unacked deliveries stay
// in their channels, where settling them does nothing.
func (m *model) deleteQueue(q *mQueue) {
	q.deleted = true
	q.ready = nil
	q.ttl.on, q.expires.on = false, false
	delete(m.queues, q.name)
	for _, c := range slices.Clone(q.consumers) {
		m.forget(c)
		ch := c.ch
		// The broker forgets the queue in the limiter of each channel
		// that still consumed from it.
		ch.refused = slices.DeleteFunc(ch.refused, func(x *mQueue) bool { return x == q })
		if !ch.closed {
			ch.cancels = append(ch.cancels, sim.Cancellation{ConsumerTag: c.tag})
		}
	}
}

// syncTick keeps a channel's consumer-timeout tick scheduled while it has
// unacked deliveries, 60 s after it was (re)started.
func (m *model) syncTick(ch *mChan) {
	if ch.closed || len(ch.ledger) == 0 {
		ch.tick.on = false
		return
	}
	if !ch.tick.on {
		m.setTimer(&ch.tick, m.now+60*time.Second)
	}
}

// advance moves the clock, firing every timer due on the way at its own
// time, in (due, scheduling) order: it looks through every channel and
// queue for the earliest one, fires it, and starts again.
//   - A channel's tick closes it with 406 if the oldest unacked delivery
//     (basic.get ones included) has reached the consumer timeout, 30
//     minutes (section 6).
//   - A queue's TTL timer drops its expired head (setting itself again for
//     the new head) and dispatches it.
//   - A queue's x-expires timer deletes it, messages included, if it
//     still has no consumers.
func (m *model) advance(d time.Duration) {
	end := m.now + d
	for {
		var next *mTimer
		earlier := func(t *mTimer) {
			if t.on && t.due <= end && (next == nil || t.due < next.due || t.due == next.due && t.seq < next.seq) {
				next = t
			}
		}
		for _, ch := range m.chans {
			if ch != nil {
				earlier(&ch.tick)
			}
		}
		for _, q := range m.queues {
			earlier(&q.ttl)
			earlier(&q.expires)
		}
		if next == nil {
			break
		}
		m.now, next.on = next.due, false
		m.fire(next)
		m.flush()
	}
	m.now = end
}

// fire runs the timer t, which has just come due.
func (m *model) fire(t *mTimer) {
	for _, q := range m.queues {
		switch t {
		case &q.ttl:
			if q.quorum {
				m.expireQuorum(q)
			}
			m.dropExpired(q)
			m.markDirty(q)
			return
		case &q.expires:
			if len(q.consumers) == 0 {
				m.cover["queue deleted by x-expires"]++
				m.deleteQueue(q)
			}
			return
		}
	}
	for _, ch := range m.chans {
		if ch == nil || t != &ch.tick {
			continue
		}
		// A delivery exactly 30 minutes old times out: the simulator's
		// reading of RabbitMQ 3.10.8, whose tick is armed before the
		// delivery is recorded (sim/expiry.go onTick).
		if len(ch.ledger) > 0 && ch.ledger[0].at <= m.now-30*time.Minute {
			m.cover["consumer timeout"]++
			m.closeChannel(ch, protoErr(406, "none", "delivery acknowledgement on channel %d timed out. Timeout value used: 1800000 ms. This timeout value can be configured, see consumers doc guide to learn more", ch.id))
		} else {
			m.syncTick(ch)
		}
		return
	}
}

// observe returns what the model expects a client and an operator to see.
func (m *model) observe(r result) observation {
	o := observation{Result: r, Ready: map[string][]string{}}
	for _, c := range m.cons {
		if c == nil {
			o.Consumers = append(o.Consumers, consumerObs{})
			continue
		}
		o.Consumers = append(o.Consumers, consumerObs{Tag: c.tag, New: c.inbox, Cancelled: c.cancelled})
		c.inbox = nil
	}
	for _, ch := range m.chans {
		if ch == nil {
			o.Channels = append(o.Channels, channelObs{})
			continue
		}
		co := channelObs{Returns: ch.returns, Confirms: ch.confirms, Cancels: ch.cancels}
		ch.returns, ch.confirms, ch.cancels = nil, nil, nil
		if ch.closed {
			co.Err = closedErr(ch.cause)
		} else {
			st := sim.ChannelStats{
				Channel: ch.id, Prefetch: ch.prefetch, GlobalLimit: ch.limit, GlobalVolume: ch.volume,
				Unacked: len(ch.ledger), NextTag: ch.lastTag + 1, Confirming: ch.confirming, LastPublishTag: ch.pubTag,
			}
			for _, c := range ch.consumers {
				if !c.cancelled {
					st.Consumers = append(st.Consumers, sim.ConsumerStats{
						Tag: c.tag, Queue: c.q.name, Channel: ch.id, Prefetch: c.prefetch, Outstanding: c.outstanding,
						NoAck: c.noAck, Priority: c.prio, Blocked: c.blocked, Active: !c.q.sac || c.q.active == c,
						Exclusive: c.exclusive, Args: c.args,
					})
				}
			}
			co.Stats = &st
		}
		o.Channels = append(o.Channels, co)
	}
	for _, c := range m.conns {
		if c.closed {
			o.Conns = append(o.Conns, closedErr(c.cause))
		} else {
			o.Conns = append(o.Conns, nil)
		}
	}
	var names []string
	for n := range m.queues {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		q := m.queues[n]
		st := sim.QueueStats{Vhost: "/", Name: n, Ready: len(q.ready), Unacked: q.unacked, Consumers: m.consumerCount(q)}
		var bodies []string
		for _, msg := range q.ready {
			st.Bytes += int64(len(msg.body))
			bodies = append(bodies, msg.body)
		}
		o.Queues = append(o.Queues, st)
		o.Ready[n] = bodies
	}
	return o
}
