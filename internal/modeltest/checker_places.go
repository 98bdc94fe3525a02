package modeltest

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/amqpsim/amqpsim/scenarios"
	"github.com/amqpsim/amqpsim/sim"
)

func (k *checker) arrive() {
	p := k.pending
	if p == nil {
		return
	}
	k.pending = nil
	m, q := p.m, p.q
	q.seq++
	m.q, m.seq, m.key, m.state, m.fetched, m.prio = q, q.seq, q.name, stReady, false, 0
	if q.args.MaxPrio > 0 {
		m.prio = min(int(m.pubPrio), q.args.MaxPrio)
	}
	ttl, has := p.ttl, p.hasTTL
	if a := q.args; a.HasTTL && (!has || a.TTL < ttl) {
		ttl, has = a.TTL, true
	}
	m.expires, m.expiry = has, p.at+time.Duration(ttl)*time.Millisecond
	m.count = 0
	if q.args.Quorum {
		m.prio = 0 // no priorities in 3.10
		q.ready = append(q.ready, m)
		m.state = stReady
		return
	}
	k.makeReady(m)
}

func (k *checker) makeReady(m *cMsg) {
	q := m.q
	i := 0
	for i < len(q.ready) && q.ready[i].before(m) {
		i++
	}
	q.ready = slices.Insert(q.ready, i, m)
	m.state = stReady
}

// passedMsg is a quorum delivery of m that came before the delivery of
// ahead, a message ahead of it (checker.passed).
type passedMsg struct{ m, ahead *cMsg }

// take removes m from its queue's ready messages. It must be the head,
// except that messages a channel close requeued during this step may be
// ahead of it (the close puts them back queue by queue, unseen, while
// dead-lettering may already reach the next queue).
func (k *checker) take(m *cMsg, why string) {
	q := m.q
	i := slices.Index(q.ready, m)
	if i < 0 {
		k.fail("invariant 4: %q %s from %s but it is not ready there", m.body, why, q.name)
		return
	}
	for _, x := range q.ready[:i] {
		if q.args.Quorum && why == "delivered" {
			k.passed = append(k.passed, passedMsg{m: m, ahead: x})
			continue
		}
		if !k.closeRequeued[x] {
			k.fail("invariant 7: %s: %q %s while %q, ahead of it, stayed ready", q.name, m.body, why, x.body)
			break
		}
	}
	k.taken[m] = true
	q.ready = slices.Delete(q.ready, i, i+1)
	if i < q.returns {
		q.returns--
	}
}

// deliver takes a delivery (consumer handle cons, or -1 for basic.get) out
// of its queue and records where it went.
func (k *checker) deliver(h, cons int, q *cQueue, noAck bool, e sim.Event) sim.Delivery {
	ch := k.chans[h]
	tag := e.DeliveryTag
	d := sim.Delivery{DeliveryTag: tag, Redelivered: e.Redelivered}
	d.Body = e.Body
	// Invariant 9: tags start at 1 and grow by one per deliver or get-ok.
	if tag != ch.lastTag+1 {
		k.fail("invariant 9: channel handle %d: delivery tag %d after %d", h, tag, ch.lastTag)
	}
	ch.lastTag = tag
	m := k.msgs[string(d.Body)]
	if m == nil {
		k.fail("invariant 4: %q delivered but never published", d.Body)
		return d
	}
	if m.state != stReady || m.q != q {
		k.fail("invariant 4: %q delivered from %s (%s) but it is %s in %s", m.body, q.name, e, m.state, m.q.name)
		return d
	}
	k.take(m, "delivered")
	// Invariant 5: redelivered exactly when fetched from this queue before
	// (from a quorum queue: when it came back to it before).
	if q.args.Quorum {
		if d.Redelivered != (m.count > 0) {
			k.fail("invariant 5: %q delivered from quorum queue %s with redelivered=%t after %d returns", m.body, q.name, d.Redelivered, m.count)
		}
	} else if d.Redelivered != m.fetched {
		k.fail("invariant 5: %q delivered with redelivered=%t, fetched before: %t", m.body, d.Redelivered, m.fetched)
	}
	m.fetched = true
	if noAck {
		m.state = stNoAck
		return d
	}
	m.state = stUnacked
	ch.unacked = append(ch.unacked, cEntry{tag: tag, msg: m, cons: cons})
	if cons >= 0 {
		c := k.cons[cons]
		c.outstanding++
		// Invariant 1: prefetch p > 0 is never exceeded.
		if c.prefetch > 0 && c.outstanding > c.prefetch {
			k.fail("invariant 1: consumer %s holds %d deliveries with prefetch %d", c.tag, c.outstanding, c.prefetch)
		}
	}
	return d
}

// get applies the basic.get-ok of the step, once: at its event, or
// earlier, at the first event that comes after the fetch (basic.get drops
// the expired messages behind the one it took before it answers).
func (k *checker) get(obs observation) {
	if k.gotten || !obs.Result.GetOK {
		return
	}
	k.gotten = true
	o := k.op.(scenarios.Get)
	h := k.chanBy[o.Channel]
	if ch := k.chans[h]; ch == nil || !ch.open {
		k.fail("get-ok on a closed channel")
		return
	}
	g := obs.Result.Get
	k.deliver(h, -1, k.queues[o.Queue], o.NoAck, sim.Event{DeliveryTag: g.DeliveryTag, Redelivered: g.Redelivered, Body: g.Body})
}

// settle takes an unacked delivery off its channel: requeued, it is ready
// again (if its queue still exists); otherwise acked, or rejected until its
// dead-letter event says where it went.
func (k *checker) settle(x cEntry, requeue, ack, closing bool) {
	if x.cons >= 0 {
		k.cons[x.cons].outstanding--
	}
	m := x.msg
	switch {
	case k.queues[m.q.name] != m.q:
		m.state = stDeleted // its queue was deleted
	case requeue && m.q.args.Quorum:
		k.giveBack(m, closing)
	case requeue:
		k.makeReady(m)
		if closing {
			k.closeRequeued[m] = true
		}
	case ack:
		m.state = stAcked
	default:
		m.state = stRejected
	}
}

// closeChannel ends a channel: its consumers go, then its unacked
// deliveries go back to their queues, except that an auto-delete queue
// that has had consumers and is left with none is deleted with them.
func (k *checker) closeChannel(h int) {
	ch := k.chans[h]
	ch.open = false
	for _, c := range k.cons {
		if c != nil && c.ch == h {
			c.live = false
		}
	}
	// A quorum queue takes its messages back holder by holder: the
	// basic.get ones, then each consumer's by tag, each in delivery order
	// (the other queues' keep their order: the key is "" for all).
	entries := slices.Clone(ch.unacked)
	holder := func(x cEntry) string {
		if !x.msg.q.args.Quorum || x.cons < 0 {
			return ""
		}
		return "tag " + k.cons[x.cons].tag
	}
	sort.SliceStable(entries, func(i, j int) bool { return holder(entries[i]) < holder(entries[j]) })
	for _, x := range entries {
		if q := x.msg.q; q.autoDel && q.hadCons && k.queues[q.name] == q && !k.consumed(q) {
			if x.cons >= 0 {
				k.cons[x.cons].outstanding--
			}
			x.msg.state = stDeleted
			continue
		}
		k.settle(x, true, false, true)
	}
	ch.unacked = nil
}

// consumed reports whether q has a live consumer.
func (k *checker) consumed(q *cQueue) bool {
	return slices.ContainsFunc(k.cons, func(c *cCons) bool { return c != nil && c.live && c.q == q })
}

// deadLetter checks that a message that left its queue (or was refused or
// rejected by it) could, and moves it on: to the queue its dead-letter
// routing key (or its own key) names through the default exchange, if
// there is one; else it is gone.
func (k *checker) deadLetter(obs observation, e sim.Event) {
	q := k.queues[e.Queue]
	m := k.msgs[string(e.Body)]
	reason := e.Reason
	if q == nil || m == nil {
		k.fail("%s: no such queue or message", e)
		return
	}
	if g, isGet := k.op.(scenarios.Get); isGet && obs.Result.GetOK && !k.gotten && q.name == g.Queue && len(q.ready) > 0 &&
		string(obs.Result.Get.Body) == q.ready[0].body && m != q.ready[0] {
		k.get(obs) // it was fetched first
	}
	gone := stDead
	switch {
	case m.q != q:
		k.fail("%s: %q is in %s", e, m.body, m.q.name)
		return
	case reason == "expired" && m.state == stReady:
		k.take(m, "expired")
		if !m.expires || m.expiry > k.now {
			k.fail("%s: %q expires at %v (%t), now %v", e, m.body, m.expiry, m.expires, k.now)
		}
		gone = stExpired
	case reason == "maxlen" && m.state == stReady:
		if !q.args.dropHead() {
			k.fail("%s: a %s queue dropped its head", e, q.args.Overflow)
		}
		k.take(m, "dropped")
		gone = stDropped
	case reason == "maxlen" && m.state == stRefused && q.args.Overflow == "reject-publish-dlx":
		gone = stRefused
	case reason == "rejected" && m.state == stRejected:
		gone = stSettled
	case reason == "delivery_limit" && m.state == stOverLimit:
		gone = stLimitDrop
	default:
		k.fail("%s: %q is %s", e, m.body, m.state)
		return
	}
	if !q.args.DLX {
		m.state = gone
		return
	}
	key := m.key
	if q.args.DLRK != "" {
		key = q.args.DLRK
	}
	m.key = key // the dead-lettered copy's routing key
	t := k.queues[key]
	if t == nil {
		m.state = stDead
		return
	}
	m.state, m.exp = stArriving, ""
	k.pending = &arrival{m: m, q: t, at: k.now}
}

// channel returns the handle of the open channel an event names, or -1.
func (k *checker) channel(e sim.Event) int {
	for h, ch := range k.chans {
		if ch != nil && ch.open && ch.conn == e.Conn && ch.id == e.Channel {
			return h
		}
	}
	k.fail("%s: no such open channel", e)
	return -1
}

// checkDeliveries compares the consumers' deliveries with the trace's and
// checks the global limits (invariant 2).
func (k *checker) checkDeliveries(obs observation) {
	perCh := map[int][]sim.Delivery{}
	ackMode := map[uint64]bool{}
	for i, co := range obs.Consumers {
		want := k.delivered[i]
		if len(co.New) != len(want) {
			k.fail("consumer handle %d got %d deliveries, the trace shows %d", i, len(co.New), len(want))
			continue
		}
		for j, d := range co.New {
			if d.DeliveryTag != want[j].DeliveryTag || string(d.Body) != string(want[j].Body) || d.Redelivered != want[j].Redelivered {
				k.fail("consumer handle %d got tag %d %q, the trace shows tag %d %q", i, d.DeliveryTag, d.Body, want[j].DeliveryTag, want[j].Body)
			}
		}
		// A quorum queue's deliveries do not count in the limiter's
		// volume: it never asks the limiter.
		if c := k.cons[i]; c != nil && !c.q.args.Quorum {
			perCh[c.ch] = append(perCh[c.ch], co.New...)
			for _, d := range co.New {
				ackMode[uint64(c.ch)<<32|d.DeliveryTag] = !c.noAck
			}
		}
	}
	// Invariant 2: no consumer delivery while the channel's counted
	// volume is at its global limit. Within a step the volume only grows
	// once deliveries start, so walk back from the final volume.
	for i, ds := range perCh {
		st := obs.Channels[i].Stats
		if st == nil || st.GlobalLimit == 0 {
			continue
		}
		sort.Slice(ds, func(a, b int) bool { return ds[a].DeliveryTag < ds[b].DeliveryTag })
		v := st.GlobalVolume
		for j := len(ds) - 1; j >= 0; j-- {
			if ackMode[uint64(i)<<32|ds[j].DeliveryTag] {
				v--
			}
			if v >= st.GlobalLimit {
				k.fail("invariant 2: channel handle %d: delivery tag %d with volume %d, global limit %d", i, ds[j].DeliveryTag, v, st.GlobalLimit)
			}
		}
	}
}

// checkPlaces is invariant 4, conservation: the simulator's queues hold
// the ready messages of the client's view, in order (invariant 7), and as
// many unacked ones; every message is in one place.
func (k *checker) checkPlaces(obs observation) {
	seen := map[string]string{}
	var names []string
	for _, st := range obs.Queues {
		names = append(names, st.Name)
		for _, b := range obs.Ready[st.Name] {
			if q, dup := seen[b]; dup {
				k.fail("invariant 4: %q is ready in %s and %s", b, q, st.Name)
			}
			seen[b] = st.Name
		}
		q := k.queues[st.Name]
		if q == nil {
			k.fail("queue %s exists in the simulator only", st.Name)
			continue
		}
		var want []string
		for _, m := range q.ready {
			want = append(want, m.body)
		}
		if got := obs.Ready[st.Name]; !slices.Equal(got, want) {
			k.fail("invariant 4/7: %s ready messages are %v, want %v", q.name, got, want)
		}
		unacked, consumers := 0, 0
		for _, ch := range k.chans {
			if ch != nil {
				for _, e := range ch.unacked {
					if e.msg.q == q {
						unacked++
					}
				}
			}
		}
		for _, c := range k.cons {
			if c != nil && c.live && c.q == q {
				consumers++
			}
		}
		if q.args.Quorum {
			if q.args.SAC {
				consumers = min(consumers, 1) // waiting ones do not count
			}
			consumers += k.quorumHolders(q)
		}
		if st.Unacked != unacked || st.Consumers != consumers {
			k.fail("invariant 4: %s has unacked=%d consumers=%d, want %d and %d", q.name, st.Unacked, st.Consumers, unacked, consumers)
		}
		// A drop-head queue is never left over its limit.
		if a := q.args; a.dropHead() && (a.HasMaxLen && st.Ready > a.MaxLen || a.HasMaxBytes && st.Bytes > int64(a.MaxBytes)) {
			k.fail("%s (%s) is left with %d ready messages, %d bytes", q.name, argsLabel(a), st.Ready, st.Bytes)
		}
	}
	if len(names) != len(k.queues) {
		k.fail("queues %v in the simulator, %d expected", names, len(k.queues))
	}
	for i, co := range obs.Channels {
		if ch := k.chans[i]; ch != nil && co.Stats != nil && co.Stats.Unacked != len(ch.unacked) {
			k.fail("channel handle %d: %d unacked, want %d", i, co.Stats.Unacked, len(ch.unacked))
		}
	}
}

// checkConsumers checks invariants 1 and 6 and single active consumers on
// the simulator's stats.
func (k *checker) checkConsumers(obs observation) {
	limited := map[string]bool{}
	for i, co := range obs.Channels {
		st := co.Stats
		if st == nil {
			continue
		}
		for _, cs := range st.Consumers {
			if cs.Prefetch > 0 && !cs.NoAck && cs.Outstanding > cs.Prefetch {
				k.fail("invariant 1: consumer %s: outstanding %d > prefetch %d", cs.Tag, cs.Outstanding, cs.Prefetch)
			}
			limited[fmt.Sprint(i, cs.Tag)] = st.GlobalLimit > 0 && st.GlobalVolume >= st.GlobalLimit
		}
	}
	for _, st := range obs.Queues {
		q := k.queues[st.Name]
		if q == nil {
			continue
		}
		active := 0
		for i, co := range obs.Channels {
			if co.Stats == nil {
				continue
			}
			for _, cs := range co.Stats.Consumers {
				if cs.Queue != st.Name {
					continue
				}
				if cs.Active {
					active++
				}
				credit := cs.NoAck || cs.Prefetch == 0 || cs.Outstanding < cs.Prefetch
				if st.Ready > 0 && cs.Active && credit && (q.args.Quorum || !limited[fmt.Sprint(i, cs.Tag)]) {
					k.fail("invariant 6: %s has %d ready messages while consumer %s (channel handle %d) could take one", st.Name, st.Ready, cs.Tag, i)
				}
			}
		}
		if q.args.SAC && k.consumed(q) && active != 1 {
			k.fail("single active consumer queue %s has %d active consumers of %d", st.Name, active, st.Consumers)
		}
	}
}

func bytesOf(ms []*cMsg) int {
	n := 0
	for _, m := range ms {
		n += len(m.body)
	}
	return n
}

// giveBack returns a message to its quorum queue: one more return; past
// the delivery limit it waits for its dead-letter event; else it goes to
// the tail of the returns (a channel close, or any return with a delivery
// limit) or of the queue.
func (k *checker) giveBack(m *cMsg, closing bool) {
	q := m.q
	m.count++
	if a := q.args; a.HasLimit && m.count > a.Limit {
		m.state = stOverLimit
		return
	}
	m.state = stReady
	if closing || q.args.HasLimit {
		q.ready = slices.Insert(q.ready, q.returns, m)
		q.returns++
		if closing {
			k.closeRequeued[m] = true
		}
		return
	}
	q.ready = append(q.ready, m)
}

// quorumHolders counts what a quorum queue reports as consumers besides
// its live ones: each cancelled consumer that holds messages of it and
// each unsettled basic.get.
func (k *checker) quorumHolders(q *cQueue) int {
	n := 0
	holding := map[int]bool{}
	for _, ch := range k.chans {
		if ch == nil || !ch.open {
			continue
		}
		for _, e := range ch.unacked {
			switch {
			case e.msg.q != q:
			case e.cons < 0:
				n++
			case !k.cons[e.cons].live && !holding[e.cons]:
				holding[e.cons] = true
				n++
			}
		}
	}
	return n
}
