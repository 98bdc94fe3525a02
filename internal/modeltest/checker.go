package modeltest

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/scenarios"
	"github.com/amqpsim/amqpsim/sim"
)

// checker verifies the package doc's invariants after every step from what the
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
// (reject-publish), purged, deleted with its queue, dropped past a quorum
// queue's delivery limit, or dead-lettered to no queue. Dead-lettered into a queue, it is ready there: the same message
// (bodies are unique) in a new place.
type checker struct {
	op      scenarios.Op  // the step being checked
	at      int           // trace events checked so far
	now     time.Duration // the time of the event being checked
	queues  map[string]*cQueue
	msgs    map[string]*cMsg // every routed message, by body
	conns   map[string]bool  // connections by name
	chans   []*cChan         // by channel handle; nil if the open failed
	chanBy  map[string]int   // channel handles by name
	cons    []*cCons         // by consumer handle; nil if the consume failed
	pending *arrival         // a message on its way into a queue

	// For the step being checked.
	closeRequeued map[*cMsg]bool // requeued by a channel close
	// passed are the messages a quorum delivery passed this step: a
	// checkout hands each consumer its messages together, consumers in
	// registration order (quorum-delivery-groups.txt), so a delivery may
	// come before one of a message ahead of it, which the same step must
	// then deliver too (and may give back again: a second channel's
	// consumer timeout in one advance).
	passed    []passedMsg
	taken     map[*cMsg]bool         // taken from a queue this step
	delivered map[int][]sim.Delivery // by consumer handle
	gotten    bool                   // the basic.get-ok's fetch is done
	bad       []string
}

type cQueue struct {
	name    string
	args    qArgs
	autoDel bool
	hadCons bool // a consumer has consumed from it
	seq     int
	ready   []*cMsg // in delivery order
	returns int     // a quorum queue's: the first returns of ready
}

type msgState string

const (
	stReady     msgState = "ready"
	stUnacked   msgState = "unacked"
	stArriving  msgState = "on its way into a queue"
	stRejected  msgState = "rejected"                // until its dead-letter event
	stOverLimit msgState = "over its delivery limit" // until its dead-letter event
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
	stLimitDrop msgState = "dropped (delivery limit, no dead-letter exchange)"
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
	count   int // returns to a quorum queue (its delivery count)
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
	return &checker{queues: map[string]*cQueue{}, msgs: map[string]*cMsg{}, conns: map[string]bool{}, chanBy: map[string]int{}}
}

func (k *checker) fail(format string, args ...any) {
	k.bad = append(k.bad, fmt.Sprintf(format, args...))
}

// check applies the step's effects to the client's view and verifies the
// invariants against what the simulator shows. It returns the violations.
func (k *checker) check(op scenarios.Op, obs observation, trace []sim.Event) []string {
	k.op = op
	k.bad = nil
	k.closeRequeued = map[*cMsg]bool{}
	k.taken = map[*cMsg]bool{}
	k.delivered = map[int][]sim.Delivery{}
	k.gotten = false
	ok := obs.Result.Err == nil

	// What the operation itself sets up, before anything it causes.
	switch o := op.(type) {
	case scenarios.Conn:
		k.conns[o.Name] = true
	case scenarios.OpenChannel:
		k.chanBy[o.Name] = len(k.chans)
		if ok {
			k.chans = append(k.chans, &cChan{conn: o.Conn, id: obs.Result.Channel, open: true})
		} else {
			k.chans = append(k.chans, nil)
		}
	case scenarios.Consume:
		if ok {
			h := k.chanBy[o.Channel]
			ch := k.chans[h]
			q := k.queues[o.Queue]
			c := &cCons{ch: h, tag: o.Tag, q: q, noAck: o.NoAck, live: true}
			if !o.NoAck {
				c.prefetch = ch.prefetch
			}
			q.hadCons = true
			k.cons = append(k.cons, c)
		} else {
			k.cons = append(k.cons, nil)
		}
	}
	if ok {
		switch o := op.(type) {
		case scenarios.DeclareQueue:
			if !o.Passive && k.queues[o.Queue] == nil {
				k.queues[o.Queue] = &cQueue{name: o.Queue, args: argsOf(o.Args), autoDel: o.AutoDelete}
			}
		case scenarios.Qos:
			if !o.Global {
				k.chans[k.chanBy[o.Channel]].prefetch = o.Count
			}
		case scenarios.Cancel:
			h := k.chanBy[o.Channel]
			for _, c := range k.cons {
				if c != nil && c.live && c.ch == h && c.tag == o.Tag {
					c.live = false
				}
			}
		}
	}

	// What happened, in the simulator's order.
	for _, e := range trace[k.at:] {
		k.now = e.At
		k.event(obs, e)
	}
	k.at = len(trace)
	for _, p := range k.passed {
		if p.ahead.state == stReady && !k.taken[p.ahead] {
			k.fail("invariant 7: %s: %q delivered while %q, ahead of it, stayed ready", p.ahead.q.name, p.m.body, p.ahead.body)
		}
	}
	k.passed = k.passed[:0]
	k.arrive()
	if _, isGet := op.(scenarios.Get); isGet && obs.Result.GetOK && !k.gotten {
		k.fail("basic.get-ok without its trace event")
	}
	for _, m := range k.msgs {
		if m.state == stRejected {
			k.fail("%q was rejected without a dead-letter event", m.body)
		}
		if m.state == stOverLimit {
			k.fail("%q passed the delivery limit of %s without a dead-letter event", m.body, m.q.name)
		}
	}
	k.checkDeliveries(obs)
	k.checkPlaces(obs)
	k.checkConsumers(obs)
	return k.bad
}

// event applies one trace event.
func (k *checker) event(obs observation, e sim.Event) {
	evBody := string(e.Body)
	// A routed message is enqueued unless the very next event says the
	// queue refused or discarded it, or the dead-lettering dropped it.
	if p := k.pending; p != nil {
		switch e.Kind {
		case sim.EventPublishRejected:
			if e.Queue != p.q.name || evBody != p.m.body {
				k.fail("%s: not the message arriving (%q into %s)", e, p.m.body, p.q.name)
			}
			a := p.q.args
			if a.dropHead() || !(a.HasMaxLen && len(p.q.ready)+1 > a.MaxLen || a.HasMaxBytes && bytesOf(p.q.ready)+len(p.m.body) > a.MaxBytes) {
				k.fail("%s: %s (%s) refused a message that fits", e, p.q.name, argsLabel(a))
			}
			p.m.state, p.m.q, k.pending = stRefused, p.q, nil
			return
		case sim.EventDiscarded:
			if e.Queue != p.q.name || evBody != p.m.body {
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
		o := k.op.(scenarios.Publish)
		q := k.queues[o.Key]
		if o.Exchange != "" || q == nil { // only the default exchange exists
			return
		}
		b := body(o) // one per step
		if k.msgs[b] != nil {
			k.fail("%s published twice", b)
		}
		m := &cMsg{body: b, key: o.Key, pubPrio: o.Props.Priority, exp: o.Props.Expiration, state: stArriving}
		k.msgs[b] = m
		k.pending = &arrival{m: m, q: q, at: k.now}
		k.pending.ttl, k.pending.hasTTL = expiration(o)

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
		k.get(obs)
		get := k.op.(scenarios.Get)
		if q := k.queues[get.Queue]; e.Count > len(q.ready) || e.Count < len(q.ready)-k.expiredByGet(q, get) {
			k.fail("%s: %d left, %d ready", e, e.Count, len(q.ready))
		}

	case e.Kind == sim.EventPush && e.Method == protocol.BasicGetEmpty:
		// Invariant 3: basic.get is never limited.
		if q := k.queues[k.op.(scenarios.Get).Queue]; q != nil && len(q.ready) > 0 {
			k.fail("invariant 3: %s returned get-empty with %d ready messages", k.op, len(q.ready))
		}

	case e.Kind == sim.EventSettle:
		h := k.channel(e)
		if h < 0 {
			return
		}
		ch := k.chans[h]
		tag := e.DeliveryTag
		i := slices.IndexFunc(ch.unacked, func(x cEntry) bool { return x.tag == tag })
		if i < 0 || ch.unacked[i].msg.body != evBody {
			k.fail("%s: no such unacked delivery", e)
			return
		}
		x := ch.unacked[i]
		ch.unacked = slices.Delete(slices.Clone(ch.unacked), i, i+1)
		s, isSettle := k.op.(scenarios.Settle)
		k.settle(x, e.Requeue, isSettle && s.Method == "ack", false)

	case e.Kind == sim.EventDeadLetter:
		k.deadLetter(obs, e)

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
		q := k.queues[k.op.(scenarios.Purge).Queue]
		if obs.Result.Err != nil || q == nil {
			return
		}
		for _, m := range q.ready {
			m.state = stPurged
		}
		if len(q.ready) != obs.Result.N {
			k.fail("%s: purge-ok says %d messages, %d were ready", k.op, obs.Result.N, len(q.ready))
		}
		q.ready, q.returns = nil, 0

	case e.Kind == sim.EventQueueDeleted:
		q := k.queues[e.Queue]
		if q == nil {
			k.fail("%s: no such queue", e)
			return
		}
		if n := e.Count; n != len(q.ready) {
			k.fail("%s: %d were ready", e, len(q.ready))
		}
		if d, isDelete := k.op.(scenarios.DeleteQueue); isDelete && d.Queue == q.name && obs.Result.Err == nil && obs.Result.N != len(q.ready) {
			k.fail("%s: delete-ok says %d messages, %d were ready", k.op, obs.Result.N, len(q.ready))
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

// expiredByGet bounds the messages a quorum queue's no-ack basic.get
// expires before its count and dead-letters after get-ok
// (quorum-get-noack-expires.txt), whose events follow get-ok's: the
// expired ones at the head of the checker's order, which ignores 4.x's
// quorum priorities, so the count may lie between.
func (k *checker) expiredByGet(q *cQueue, get scenarios.Get) int {
	if !q.args.Quorum || !get.NoAck {
		return 0
	}
	n := 0
	for n < len(q.ready) && q.ready[n].expires && q.ready[n].expiry <= k.now {
		n++
	}
	return n
}
