package amqpsim_test

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// checker verifies DESIGN.md's invariants after every step from what the
// simulator shows, independently of the reference model: it never decides
// who gets a message or when one expires. It replays the simulator's own
// trace of the step (publishes, deliveries, settlements, channel closes,
// dead-lettering, rejections, deletions) to keep the place of every
// published, routed message, refusing any move from a place the message is
// not in, and then compares the places with what the simulator shows
// (ready lists, queue and channel stats, the step's deliveries).
//
// A message is in exactly one place: ready in a queue, unacked on a
// channel, or gone for good - acknowledged, taken with no-ack, rejected,
// dropped from the head (max-length), expired, refused at publish
// (reject-publish), purged, deleted with its queue, or dead-lettered to no
// queue. Dead-lettered into a queue, it is ready there: the same message
// (bodies are unique) in a new place.
type checker struct {
	at      int           // trace events checked so far
	now     time.Duration // the time of the event being checked
	queues  map[string]*cQueue
	msgs    map[string]*cMsg // every routed message, by body
	chans   []*cChan         // by channel handle; nil if the open failed
	cons    []*cCons         // by consumer handle; nil if the consume failed
	pending *arrival         // a message on its way into a queue

	// For the step being checked.
	closeRequeued map[*cMsg]bool         // requeued by a channel close
	delivered     map[int][]sim.Delivery // by consumer handle
	gotten        bool                   // the basic.get-ok's fetch is done
	bad           []string
}

type cQueue struct {
	name  string
	args  qArgs
	seq   int
	ready []*cMsg // in delivery order
}

type msgState string

const (
	stReady    msgState = "ready"
	stUnacked  msgState = "unacked"
	stArriving msgState = "on its way into a queue"
	stRejected msgState = "rejected" // until its dead-letter event
)

// Places a message never leaves.
const (
	stAcked     msgState = "acknowledged"
	stNoAck     msgState = "taken with no-ack"
	stDead      msgState = "dead-lettered nowhere"
	stCycle     msgState = "dropped (dead-letter cycle)"
	stDropped   msgState = "dropped from the head (max-length)"
	stExpired   msgState = "expired"
	stRefused   msgState = "refused at publish (reject-publish)"
	stPurged    msgState = "purged"
	stDeleted   msgState = "deleted with its queue"
	stSettled   msgState = "rejected (no dead-letter exchange)"
	stDiscarded msgState = "discarded (x-message-ttl 0)"
)

type cMsg struct {
	body    string
	q       *cQueue // the queue it is (or was last) in
	key     string  // routing key it was published or dead-lettered with
	pubPrio uint8
	exp     string // its own expiration ("" once dead-lettered)
	prio    int
	seq     int
	state   msgState
	fetched bool // delivered or got from this queue before
	expires bool
	expiry  time.Duration
}

// before reports whether m comes out of its queue before n.
func (m *cMsg) before(n *cMsg) bool {
	return m.prio > n.prio || m.prio == n.prio && m.seq < n.seq
}

// arrival is a message routed to a queue, not yet enqueued: the queue may
// still refuse or discard it, or the dead-lettering find a cycle.
type arrival struct {
	m      *cMsg
	q      *cQueue
	at     time.Duration
	ttl    int // the message's own TTL (ms), for a publish
	hasTTL bool
}

type cChan struct {
	conn     string
	id       uint16
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

func (k *checker) fail(format string, args ...any) {
	k.bad = append(k.bad, fmt.Sprintf(format, args...))
}

// check applies the step's effects to the client's view and verifies the
// invariants against what the simulator shows. It returns the violations.
func (k *checker) check(o op, obs observation, trace []sim.Event) []string {
	k.bad = nil
	k.closeRequeued = map[*cMsg]bool{}
	k.delivered = map[int][]sim.Delivery{}
	k.gotten = false
	ok := obs.Result.Err == nil

	// What the operation itself sets up, before anything it causes.
	switch o.Kind {
	case opOpenChannel:
		if ok {
			k.chans = append(k.chans, &cChan{conn: fmt.Sprintf("conn%d", o.Conn+1), id: obs.Result.Channel, open: true})
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
	if ok {
		switch o.Kind {
		case opDeclare:
			if !o.Passive && k.queues[o.Queue] == nil {
				k.queues[o.Queue] = &cQueue{name: o.Queue, args: o.Args}
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
		}
	}

	// What happened, in the simulator's order.
	for _, e := range trace[k.at:] {
		k.now = e.At
		k.event(o, obs, e)
	}
	k.at = len(trace)
	k.arrive()
	if o.Kind == opGet && obs.Result.GetOK && !k.gotten {
		k.fail("basic.get-ok without its trace event")
	}
	for _, m := range k.msgs {
		if m.state == stRejected {
			k.fail("%q was rejected without a dead-letter event", m.body)
		}
	}
	k.checkDeliveries(obs)
	k.checkPlaces(obs)
	k.checkConsumers(obs)
	return k.bad
}

// event applies one trace event.
func (k *checker) event(o op, obs observation, e sim.Event) {
	body := string(e.Body)
	// A routed message is enqueued unless the very next event says the
	// queue refused or discarded it, or the dead-lettering dropped it.
	if p := k.pending; p != nil {
		switch e.Kind {
		case sim.EventPublishRejected:
			if e.Queue != p.q.name || body != p.m.body {
				k.fail("%s: not the message arriving (%q into %s)", e, p.m.body, p.q.name)
			}
			a := p.q.args
			if a.dropHead() || !(a.HasMaxLen && len(p.q.ready)+1 > a.MaxLen || a.HasMaxBytes && bytesOf(p.q.ready)+len(p.m.body) > a.MaxBytes) {
				k.fail("%s: %s (%s) refused a message that fits", e, p.q.name, argsLabel(a))
			}
			p.m.state, p.m.q, k.pending = stRefused, p.q, nil
			return
		case sim.EventDiscarded:
			if e.Queue != p.q.name || body != p.m.body {
				k.fail("%s: not the message arriving (%q into %s)", e, p.m.body, p.q.name)
			}
			if a := p.q.args; !a.HasTTL || a.TTL != 0 || a.DLX || len(p.q.ready) == 0 {
				k.fail("%s: %s (%s, %d ready) discarded a message", e, p.q.name, argsLabel(a), len(p.q.ready))
			}
			p.m.state, p.m.q, k.pending = stDiscarded, p.q, nil
			return
		case sim.EventDeadLetterCycle:
			if e.Target != p.q.name {
				k.fail("%s: not the message arriving (%q into %s)", e, p.m.body, p.q.name)
			}
			p.m.state, k.pending = stCycle, nil
			return
		}
		k.arrive()
	}

	switch {
	case e.Kind == sim.EventPublish, e.Kind == sim.EventCall && e.Method == protocol.BasicPublish:
		q := k.queues[o.Queue]
		if o.Exchange != "" || q == nil { // only the default exchange exists
			return
		}
		if k.msgs[o.Body] != nil {
			k.fail("%s published twice", o.Body)
		}
		m := &cMsg{body: o.Body, key: o.Queue, pubPrio: o.Priority, exp: o.Expire, state: stArriving}
		k.msgs[o.Body] = m
		k.pending = &arrival{m: m, q: q, at: k.now, hasTTL: o.Expire != ""}
		k.pending.ttl, _ = strconv.Atoi(o.Expire)

	case e.Kind == sim.EventPush && e.Method == protocol.BasicDeliver:
		h := k.channel(e)
		if h < 0 {
			return
		}
		i := slices.IndexFunc(k.cons, func(c *cCons) bool { return c != nil && c.live && c.ch == h && c.tag == e.ConsumerTag })
		if i < 0 {
			k.fail("%s: no such consumer", e)
			return
		}
		c := k.cons[i]
		d := k.deliver(h, i, c.q, c.noAck, e)
		k.delivered[i] = append(k.delivered[i], d)

	case e.Kind == sim.EventPush && e.Method == protocol.BasicGetOk:
		k.get(o, obs, e)
		if left := e.Count; left != len(k.queues[o.Queue].ready) {
			k.fail("%s: %d left, %d ready", e, left, len(k.queues[o.Queue].ready))
		}

	case e.Kind == sim.EventPush && e.Method == protocol.BasicGetEmpty:
		// Invariant 3: basic.get is never limited.
		if q := k.queues[o.Queue]; q != nil && len(q.ready) > 0 {
			k.fail("invariant 3: %s returned get-empty with %d ready messages", o, len(q.ready))
		}

	case e.Kind == sim.EventSettle:
		h := k.channel(e)
		if h < 0 {
			return
		}
		ch := k.chans[h]
		tag := e.DeliveryTag
		i := slices.IndexFunc(ch.unacked, func(x cEntry) bool { return x.tag == tag })
		if i < 0 || ch.unacked[i].msg.body != body {
			k.fail("%s: no such unacked delivery", e)
			return
		}
		x := ch.unacked[i]
		ch.unacked = slices.Delete(slices.Clone(ch.unacked), i, i+1)
		k.settle(x, e.Requeue, o.Kind == opAck, false)

	case e.Kind == sim.EventDeadLetter:
		k.deadLetter(o, obs, e)

	case e.Kind == sim.EventChannelClose, e.Kind == sim.EventCall && e.Method == protocol.ChannelClose:
		if h := k.channel(e); h >= 0 {
			k.closeChannel(h)
		}

	case e.Kind == sim.EventConnectionClose:
		var hs []int
		for h, ch := range k.chans {
			if ch != nil && ch.open && ch.conn == e.Conn {
				hs = append(hs, h)
			}
		}
		sort.Slice(hs, func(i, j int) bool { return k.chans[hs[i]].id < k.chans[hs[j]].id })
		for _, h := range hs {
			k.closeChannel(h)
		}

	case e.Kind == sim.EventCall && e.Method == protocol.QueuePurge:
		q := k.queues[o.Queue]
		if obs.Result.Err != nil || q == nil {
			return
		}
		for _, m := range q.ready {
			m.state = stPurged
		}
		if len(q.ready) != obs.Result.N {
			k.fail("%s: purge-ok says %d messages, %d were ready", o, obs.Result.N, len(q.ready))
		}
		q.ready = nil

	case e.Kind == sim.EventQueueDeleted:
		q := k.queues[e.Queue]
		if q == nil {
			k.fail("%s: no such queue", e)
			return
		}
		if n := e.Count; n != len(q.ready) {
			k.fail("%s: %d were ready", e, len(q.ready))
		}
		if o.Kind == opDelete && obs.Result.N != len(q.ready) {
			k.fail("%s: delete-ok says %d messages, %d were ready", o, obs.Result.N, len(q.ready))
		}
		for _, m := range q.ready {
			m.state = stDeleted
		}
		q.ready = nil
		delete(k.queues, q.name)
		for _, c := range k.cons {
			if c != nil && c.q == q {
				c.live = false
			}
		}
	}
}

// arrive enqueues the message on its way into a queue.
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
		if !k.closeRequeued[x] {
			k.fail("invariant 7: %s: %q %s while %q, ahead of it, stayed ready", q.name, m.body, why, x.body)
			break
		}
	}
	q.ready = slices.Delete(q.ready, i, i+1)
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
	// Invariant 5: redelivered exactly when fetched from this queue before.
	if d.Redelivered != m.fetched {
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
func (k *checker) get(o op, obs observation, e sim.Event) {
	if k.gotten || !obs.Result.GetOK {
		return
	}
	k.gotten = true
	h := o.Ch
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

func (k *checker) closeChannel(h int) {
	ch := k.chans[h]
	ch.open = false
	for _, x := range ch.unacked {
		k.settle(x, true, false, true)
	}
	ch.unacked = nil
	for _, c := range k.cons {
		if c != nil && c.ch == h {
			c.live = false
		}
	}
}

// deadLetter checks that a message that left its queue (or was refused or
// rejected by it) could, and moves it on: to the queue its dead-letter
// routing key (or its own key) names through the default exchange, if
// there is one; else it is gone.
func (k *checker) deadLetter(o op, obs observation, e sim.Event) {
	q := k.queues[e.Queue]
	m := k.msgs[string(e.Body)]
	reason := e.Reason
	if q == nil || m == nil {
		k.fail("%s: no such queue or message", e)
		return
	}
	if o.Kind == opGet && obs.Result.GetOK && !k.gotten && q.name == o.Queue && len(q.ready) > 0 &&
		string(obs.Result.Get.Body) == q.ready[0].body && m != q.ready[0] {
		k.get(o, obs, e) // it was fetched first
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
		if c := k.cons[i]; c != nil {
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
				if st.Ready > 0 && cs.Active && credit && !limited[fmt.Sprint(i, cs.Tag)] {
					k.fail("invariant 6: %s has %d ready messages while consumer %s (channel handle %d) could take one", st.Name, st.Ready, cs.Tag, i)
				}
			}
		}
		if q.args.SAC && st.Consumers > 0 && active != 1 {
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

func joinLines(ss []string) string { return strings.Join(ss, "\n") }
