package amqpsim_test

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/amqpsim/amqpsim/sim"
)

// checker verifies DESIGN.md's invariants after every step from what the
// simulator shows (deliveries, results, stats, ready lists), independently of
// the reference model: it never decides who gets a message, it only keeps
// the client's view of where every published message is.
type checker struct {
	requeued map[*cMsg]bool // messages made ready again during this step

	queues map[string]*cQueue // live queues by name
	msgs   map[string]*cMsg   // every routed message, by body
	chans  []*cChan           // by channel handle; nil if the open failed
	cons   []*cCons           // by consumer handle; nil if the consume failed
}

type cQueue struct {
	name    string
	maxPrio int
	sac     bool
	seq     int
}

type msgState int

const (
	stReady msgState = iota
	stUnacked
	stGone // acked, rejected/nacked without requeue, purged, deleted, or taken with no-ack
)

type cMsg struct {
	body    string
	q       *cQueue
	prio    int
	seq     int
	state   msgState
	fetched bool // delivered or got from its queue before
}

// before reports whether m comes out of its queue before n.
func (m *cMsg) before(n *cMsg) bool {
	return m.prio > n.prio || m.prio == n.prio && m.seq < n.seq
}

type cChan struct {
	open     bool
	lastTag  uint64
	unacked  []cEntry // tag order
	prefetch int
}

type cEntry struct {
	tag  uint64
	msg  *cMsg
	cons int // consumer handle, -1 for basic.get
}

type cCons struct {
	ch          int
	tag         string
	q           *cQueue
	noAck       bool
	prefetch    int
	outstanding int
	live        bool
}

func newChecker() *checker {
	return &checker{queues: map[string]*cQueue{}, msgs: map[string]*cMsg{}}
}

// check applies the step's effects to the client's view and verifies the
// invariants against what the simulator shows. It returns the violations.
func (k *checker) check(o op, obs observation) []string {
	var bad []string
	fail := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }
	ok := obs.Result.Err == nil
	k.requeued = map[*cMsg]bool{}

	readyBefore := -1
	if q := k.queues[o.Queue]; q != nil {
		readyBefore = len(k.ready(q))
	}

	switch o.Kind {
	case opOpenChannel:
		if ok {
			k.chans = append(k.chans, &cChan{open: true})
		} else {
			k.chans = append(k.chans, nil)
		}
	case opConsume:
		if ok {
			ch := k.chans[o.Ch]
			c := &cCons{ch: o.Ch, tag: o.Tag, q: k.queues[o.Queue], noAck: o.NoAck, live: true}
			if !o.NoAck {
				c.prefetch = ch.prefetch
			}
			k.cons = append(k.cons, c)
		} else {
			k.cons = append(k.cons, nil)
		}
	}
	if !ok {
		goto closes
	}
	switch o.Kind {
	case opDeclare:
		if !o.Passive && k.queues[o.Queue] == nil {
			k.queues[o.Queue] = &cQueue{name: o.Queue, maxPrio: argsMaxPriority(o.Args), sac: argsSingleActive(o.Args)}
		}
	case opBrokerPublish, opPublish:
		if q := k.queues[o.Queue]; q != nil { // routed iff the queue exists
			q.seq++
			m := &cMsg{body: o.Body, q: q, seq: q.seq}
			if q.maxPrio > 0 {
				m.prio = min(int(o.Priority), q.maxPrio)
			}
			k.msgs[o.Body] = m
		}
	case opQos:
		if !o.Global {
			k.chans[o.Ch].prefetch = o.Count
		}
	case opCancel:
		for _, c := range k.cons {
			if c != nil && c.live && c.ch == o.Ch && c.tag == o.Tag {
				c.live = false
			}
		}
	case opAck, opNack, opReject:
		ch := k.chans[o.Ch]
		var settled []cEntry
		switch {
		case o.Multiple && o.DTag == 0 && o.Kind != opReject:
			settled, ch.unacked = ch.unacked, nil
		case o.Multiple && o.Kind != opReject:
			i := slices.IndexFunc(ch.unacked, func(e cEntry) bool { return e.tag == o.DTag })
			if i < 0 {
				fail("%s succeeded but tag %d was not outstanding", o, o.DTag)
				break
			}
			settled = slices.Clone(ch.unacked[:i+1])
			ch.unacked = slices.Clone(ch.unacked[i+1:])
		default:
			i := slices.IndexFunc(ch.unacked, func(e cEntry) bool { return e.tag == o.DTag })
			if i < 0 {
				fail("%s succeeded but tag %d was not outstanding", o, o.DTag)
				break
			}
			settled = []cEntry{ch.unacked[i]}
			ch.unacked = slices.Delete(slices.Clone(ch.unacked), i, i+1)
		}
		k.release(settled, o.Kind != opAck && o.Requeue)
	case opRecover:
		ch := k.chans[o.Ch]
		k.release(ch.unacked, true)
		ch.unacked = nil
	case opPurge:
		q := k.queues[o.Queue]
		n := 0
		for _, m := range k.ready(q) {
			m.state = stGone
			n++
		}
		if n != obs.Result.N {
			fail("%s: purge-ok says %d messages, %d were ready", o, obs.Result.N, n)
		}
	case opDelete:
		q := k.queues[o.Queue]
		if q == nil {
			break
		}
		n := 0
		for _, m := range k.ready(q) {
			m.state = stGone
			n++
		}
		if n != obs.Result.N {
			fail("%s: delete-ok says %d messages, %d were ready", o, obs.Result.N, n)
		}
		delete(k.queues, q.name)
		for _, c := range k.cons {
			if c != nil && c.q == q {
				c.live = false
			}
		}
	}

closes:
	// Channels the simulator now reports closed: their consumers are gone
	// and their unacked deliveries are back in their queues.
	closedNow := map[int]bool{}
	for i, ch := range k.chans {
		if ch != nil && ch.open && obs.Channels[i].Err != nil {
			closedNow[i] = true
			ch.open = false
			k.release(ch.unacked, true)
			ch.unacked = nil
			for _, c := range k.cons {
				if c != nil && c.ch == i {
					c.live = false
				}
			}
		}
	}

	// Invariant 3: basic.get is never limited.
	if o.Kind == opGet && ok && readyBefore > 0 && !obs.Result.GetOK {
		fail("invariant 3: %s returned get-empty with %d ready messages", o, readyBefore)
	}

	// The step's deliveries per channel, in tag order.
	type dlv struct {
		d    sim.Delivery
		ch   int
		cons int // -1: basic.get
		q    *cQueue
		ack  bool
	}
	perCh := map[int][]dlv{}
	for i, co := range obs.Consumers {
		for _, d := range co.New {
			c := k.cons[i]
			if c == nil {
				fail("delivery %q to a consumer that does not exist", d.Body)
				continue
			}
			perCh[c.ch] = append(perCh[c.ch], dlv{d: d, ch: c.ch, cons: i, q: c.q, ack: !c.noAck})
		}
	}
	if o.Kind == opGet && obs.Result.GetOK {
		perCh[o.Ch] = append(perCh[o.Ch], dlv{d: *obs.Result.Get, ch: o.Ch, cons: -1, q: k.queues[o.Queue], ack: !o.NoAck})
	}
	// Pass 1, per channel in tag order: tags, the order a channel gets a
	// queue's messages in, and the global limit.
	var chIDs []int
	for i := range perCh {
		chIDs = append(chIDs, i)
	}
	slices.Sort(chIDs)
	var all []dlv
	for _, i := range chIDs {
		ds := perCh[i]
		sort.Slice(ds, func(a, b int) bool { return ds[a].d.DeliveryTag < ds[b].d.DeliveryTag })
		ch := k.chans[i]
		last := map[*cQueue]*cMsg{}
		for _, x := range ds {
			// Invariant 9: tags start at 1 and grow by one per deliver or get-ok.
			if x.d.DeliveryTag != ch.lastTag+1 {
				fail("invariant 9: channel handle %d: delivery tag %d after %d", i, x.d.DeliveryTag, ch.lastTag)
			}
			ch.lastTag = x.d.DeliveryTag
			m := k.msgs[string(x.d.Body)]
			if m == nil {
				fail("invariant 4: %q delivered but never published", x.d.Body)
				continue
			}
			// Invariant 7: one channel gets a queue's messages in queue order
			// (a message requeued during the step may overtake: a settlement
			// reaches a queue group by group, each dispatched in turn).
			if p := last[m.q]; p != nil && !p.before(m) && !k.requeued[m] {
				fail("invariant 7: channel handle %d got %q after %q from %s", i, m.body, p.body, m.q.name)
			}
			last[m.q] = m
			all = append(all, x)
		}
		// Invariant 2: no consumer delivery while the channel's counted
		// volume is at its global limit. Within a step the volume only
		// grows once deliveries start, so walk back from the final volume.
		if st := obs.Channels[i].Stats; st != nil && st.GlobalLimit > 0 {
			v := st.GlobalVolume
			for j := len(ds) - 1; j >= 0; j-- {
				if ds[j].cons < 0 {
					continue
				}
				if ds[j].ack {
					v--
				}
				if v >= st.GlobalLimit {
					fail("invariant 2: channel handle %d: delivery tag %d with volume %d, global limit %d", i, ds[j].d.DeliveryTag, v, st.GlobalLimit)
				}
			}
		}
	}

	// Pass 2: where each delivered message went. A channel that closed
	// during this step (a consumer timeout while the clock advanced) gave its
	// ack-mode deliveries back to their queues when it closed, so those come
	// first; the delivery that ends a message's step (no-ack, or ack-mode on
	// a channel still open) comes last, and there is at most one.
	back := func(x dlv) bool { return x.ack && closedNow[x.ch] }
	slices.SortStableFunc(all, func(a, b dlv) int {
		if back(a) != back(b) {
			if back(a) {
				return -1
			}
			return 1
		}
		return 0
	})
	delivered := map[*cQueue][]*cMsg{}
	fetchedBefore := map[*cMsg]bool{}
	firsts := map[*cMsg]int{}
	for _, x := range all {
		m := k.msgs[string(x.d.Body)]
		if m.state != stReady || m.q != x.q {
			fail("invariant 4: %q delivered (channel handle %d, tag %d) but it was not ready in queue %s", x.d.Body, x.ch, x.d.DeliveryTag, x.q.name)
			continue
		}
		if _, seen := fetchedBefore[m]; !seen {
			fetchedBefore[m] = m.fetched
		}
		if !x.d.Redelivered {
			firsts[m]++
		}
		delivered[m.q] = append(delivered[m.q], m)
		m.fetched = true
		switch {
		case !x.ack:
			m.state = stGone
		case back(x):
			if k.queues[m.q.name] != m.q {
				m.state = stGone
			}
			k.requeued[m] = true
		default:
			m.state = stUnacked
			ch := k.chans[x.ch]
			i := slices.IndexFunc(ch.unacked, func(e cEntry) bool { return e.tag > x.d.DeliveryTag })
			if i < 0 {
				i = len(ch.unacked)
			}
			ch.unacked = slices.Insert(ch.unacked, i, cEntry{tag: x.d.DeliveryTag, msg: m, cons: x.cons})
			if x.cons >= 0 {
				c := k.cons[x.cons]
				c.outstanding++
				// Invariant 1: prefetch p > 0 is never exceeded.
				if c.prefetch > 0 && c.outstanding > c.prefetch {
					fail("invariant 1: consumer %s holds %d deliveries with prefetch %d", c.tag, c.outstanding, c.prefetch)
				}
			}
		}
	}

	// Invariant 5: redelivered exactly when fetched before. A message
	// delivered more than once in one step (a channel that closed during the
	// step gave it back) says redelivered=false at most the first time.
	for m, before := range fetchedBefore {
		if before && firsts[m] > 0 || !before && firsts[m] != 1 {
			fail("invariant 5: %q fetched before the step: %t, delivered with redelivered=false %d times", m.body, before, firsts[m])
		}
	}

	// Invariant 7: a queue hands out its head: everything it delivered this
	// step comes before everything that stayed ready (except what was
	// requeued during the step, see above), and the ready messages are in
	// (priority, sequence) order, requeued ones at their original places.
	for q, ds := range delivered {
		for _, r := range k.ready(q) {
			if k.requeued[r] {
				continue
			}
			for _, d := range ds {
				if !d.before(r) {
					fail("invariant 7: %s delivered %q while %q, ahead of it, stayed ready", q.name, d.body, r.body)
				}
			}
		}
	}

	// Invariant 4 (conservation) and 7: the simulator's queues hold what the
	// client's view says, in order.
	var names []string
	for _, st := range obs.Queues {
		names = append(names, st.Name)
		q := k.queues[st.Name]
		if q == nil {
			fail("queue %s exists in the simulator only", st.Name)
			continue
		}
		var want []string
		for _, m := range k.ready(q) {
			want = append(want, m.body)
		}
		if got := obs.Ready[st.Name]; !slices.Equal(got, want) {
			fail("invariant 4/7: %s ready messages are %v, want %v", q.name, got, want)
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
		if st.Unacked != unacked || st.Consumers != consumers {
			fail("invariant 4: %s has unacked=%d consumers=%d, want %d and %d", q.name, st.Unacked, st.Consumers, unacked, consumers)
		}
	}
	if len(names) != len(k.queues) {
		fail("queues %v in the simulator, %d expected", names, len(k.queues))
	}

	// Invariants 1 and 6 on the simulator's stats.
	byQueue := map[string][]sim.ConsumerStats{}
	limited := map[string]bool{}
	for i, co := range obs.Channels {
		st := co.Stats
		if st == nil {
			continue
		}
		if ch := k.chans[i]; ch != nil && st.Unacked != len(ch.unacked) {
			fail("channel handle %d: %d unacked, want %d", i, st.Unacked, len(ch.unacked))
		}
		for _, cs := range st.Consumers {
			if cs.Prefetch > 0 && !cs.NoAck && cs.Outstanding > cs.Prefetch {
				fail("invariant 1: consumer %s: outstanding %d > prefetch %d", cs.Tag, cs.Outstanding, cs.Prefetch)
			}
			byQueue[cs.Queue] = append(byQueue[cs.Queue], cs)
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
				if st.Ready > 0 && cs.Active && credit && !limited[fmt.Sprint(i, cs.Tag)] {
					fail("invariant 6: %s has %d ready messages while consumer %s (channel handle %d) could take one", st.Name, st.Ready, cs.Tag, i)
				}
			}
		}
		if q.sac && st.Consumers > 0 && active != 1 {
			fail("single active consumer queue %s has %d active consumers of %d", st.Name, active, st.Consumers)
		}
	}
	return bad
}

// ready returns a queue's ready messages in delivery order.
func (k *checker) ready(q *cQueue) []*cMsg {
	var out []*cMsg
	for _, m := range k.msgs {
		if m.q == q && m.state == stReady {
			out = append(out, m)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].before(out[j]) })
	return out
}

// release settles deliveries: requeued ones return to their queue if it
// still exists; the rest are gone.
func (k *checker) release(es []cEntry, requeue bool) {
	for _, e := range es {
		if e.cons >= 0 {
			k.cons[e.cons].outstanding--
		}
		if requeue && k.queues[e.msg.q.name] == e.msg.q {
			e.msg.state = stReady
			k.requeued[e.msg] = true
		} else {
			e.msg.state = stGone
		}
	}
}

func joinLines(ss []string) string { return strings.Join(ss, "\n") }
