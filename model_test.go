package amqpsim_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/amqpsim/amqpsim/sim"
)

// model is the reference model: a deliberately naive re-statement of
// RabbitMQ 3.10's consumer-side rules (docs/rabbitmq-semantics.md sections
// 1-5 and 9, the consumer timeout of section 6, TTL, queue expiry and
// max-length of section 7, dead-lettering of section 8), written for
// obviousness, not speed. A queue is a slice of
// messages kept sorted by (priority desc, sequence asc); a queue's consumers
// are one slice per priority band in rotation order plus a "blocked" flag
// with the time they were blocked; a channel's unacked deliveries are a slice
// in tag order; a message's x-death is a slice, most recent first.
//
// Time: every timer is a (due, scheduling order) pair; Advance scans all
// channels and queues for the earliest one due, fires it at its own time,
// and repeats. Expired heads are dropped only where RabbitMQ's
// drop_expired_msgs runs: after every fetch (delivery or basic.get; the
// fetch itself takes the head, expired or not), after a requeue, after a
// publish that leaves one message queued (or drops from the head), and when
// the TTL timer fires. Each drop then sets the TTL timer for the new head's
// expiry if it is not set, or moves it earlier if that expiry is more than
// 1 ms before it; a firing timer is cleared first. Nothing else touches
// that timer. A queue's x-expires timer restarts on declare, basic.get, and
// whenever it is left without consumers.
//
// Where RabbitMQ is concurrent and the simulator had to pick an order, the
// model follows the simulator's documented choice:
//   - queues touched by one method are dispatched in the order it touched
//     them (a closing channel: its consumers' queues, then its unacked
//     deliveries' queues);
//   - the release of a channel-wide limit resumes the refused queues starting
//     at a position drawn from the broker's seeded RNG (RabbitMQ's
//     notify_queues draws it with rand:uniform); the model owns a copy of
//     that RNG (see newModel);
//   - a settlement's (queue, consumer tag) groups are processed queue by
//     queue in creation order (RabbitMQ sends them to different queue
//     processes, which run concurrently);
//   - the limiter hears of a settlement before the queues do, and resumes
//     the queues it released after them;
//   - a channel's consumer-timeout tick runs every 60 s from its first
//     unacked delivery while it has any;
//   - a dead-lettered message is enqueued in its target queue at once,
//     inside whatever step dropped it (RabbitMQ sends it to another queue
//     process); a message that reaches an empty queue with consumers is
//     offered to them at once, before the queue is dispatched.
type model struct {
	now    time.Duration // virtual time since the start
	seq    uint64        // timer scheduling order (breaks ties of equal due times)
	qids   int           // queues created so far
	rng    *rand.Rand
	conns  []*mConn
	chans  []*mChan
	cons   []*mCons
	queues map[string]*mQueue
	dirty  []*mQueue
	blocks int // blocking clock: orders consumers blocked at different times

	// mutant deliberately breaks the model, to show how a failure is
	// reported (TestModelFailureIsReadable).
	mutant bool
	// cover counts interesting situations reached (TestModelCoverage).
	cover map[string]int
}

type mConn struct {
	name   string
	closed bool
	cause  *errInfo // the hard error that closed it
	open   map[uint16]*mChan
}

type mChan struct {
	conn   *mConn
	id     uint16
	label  string
	closed bool
	cause  *errInfo // the error that closed it (its own, or its connection's)

	tick       mTimer // the consumer-timeout tick
	prefetch   int    // for consumers created from now on
	limit      int    // channel-wide (global) limit; 0: none
	volume     int    // RabbitMQ's limiter volume
	lastTag    uint64
	ledger     []mEntry // unacked deliveries in tag order
	consumers  []*mCons // creation order, cancelled ones included
	live       map[string]*mCons
	suspended  map[*mQueue]bool // the limiter refused this channel on that queue
	refused    []*mQueue        // queues to resume when the limit is no longer reached
	confirming bool
	pubTag     uint64
	returns    []sim.Return
	confirms   []sim.Confirmation
	cancels    []sim.Cancellation
}

type mEntry struct {
	at   time.Duration // when it was delivered
	tag  uint64
	q    *mQueue
	msg  *mMsg
	cons *mCons // nil for basic.get
}

type mCons struct {
	tag         string
	ch          *mChan
	q           *mQueue
	noAck       bool
	exclusive   bool
	prio        int
	prefetch    int
	outstanding int
	blocked     bool
	blockedAt   int
	cancelled   bool
	inbox       []sim.Delivery
}

// mTimer is a timer: whether it is set, when it fires, and its scheduling
// order, which breaks ties.
type mTimer struct {
	on  bool
	due time.Duration
	seq uint64
}

type mQueue struct {
	id        int // creation order
	name      string
	args      qArgs
	maxPrio   int
	sac       bool
	deleted   bool
	ttl       mTimer  // for the head's expiry
	expires   mTimer  // x-expires
	ready     []*mMsg // sorted by (priority desc, seq asc)
	unacked   int
	seq       int
	consumers []*mCons         // live, in registration order
	bands     map[int][]*mCons // live, unblocked consumers per priority, head first
	active    *mCons           // the single active consumer
	exclusive bool             // an exclusive consumer holds the queue
}

type mMsg struct {
	body      string
	key       string // routing key it was published or dead-lettered with
	prio      int    // effective priority in its queue
	pubPrio   uint8  // priority property as published
	exp       string // expiration property ("" once dead-lettered)
	expires   bool   // expiry is set
	expiry    time.Duration
	deaths    []mDeath // x-death, most recent first
	first     mDeath   // the first death (x-first-death-*)
	seq       int
	delivered bool
}

// mDeath is an x-death entry. Dead-lettering always uses the default
// exchange, so every exchange is "".
type mDeath struct {
	queue, reason string
	count         int64
	at            time.Duration // of the first death of this (queue, reason)
	key           string
	exp           string // original-expiration
}

// newModel makes a model whose RNG is the broker's: sim.New seeds
// rand.NewPCG(cfg.Seed, 0x616d717073696d) ("amqpsim"), see sim/broker.go.
func newModel(seed uint64) *model {
	return &model{rng: rand.New(rand.NewPCG(seed, 0x616d717073696d)), queues: map[string]*mQueue{}, cover: map[string]int{}}
}

// nextChannel returns the number the connection's next channel gets (the
// lowest free one) and the label the test prints for it: "conn1.ch2", or
// "conn1.ch2~3" for the third channel numbered 2 on conn1.
func (m *model) nextChannel(conn int) (uint16, string) {
	c := m.conns[conn]
	id := uint16(1)
	for c.open[id] != nil {
		id++
	}
	label := fmt.Sprintf("%s.ch%d", c.name, id)
	n := 1
	for _, ch := range m.chans {
		if ch != nil && ch.conn == c && ch.id == id {
			n++
		}
	}
	if n > 1 {
		label += fmt.Sprintf("~%d", n)
	}
	return id, label
}

func (m *model) resource(q string) string { return fmt.Sprintf("queue '%s' in vhost '/'", q) }

func protoErr(code int, method, format string, args ...any) *errInfo {
	names := map[int]string{403: "ACCESS_REFUSED", 404: "NOT_FOUND", 406: "PRECONDITION_FAILED", 530: "NOT_ALLOWED", 540: "NOT_IMPLEMENTED"}
	return &errInfo{Code: code, Text: names[code] + " - " + fmt.Sprintf(format, args...), Method: method, Hard: code >= 500}
}

func closedErr(cause *errInfo) *errInfo {
	e := &errInfo{Closed: true}
	if cause != nil {
		e.Code, e.Text, e.Method, e.Hard = cause.Code, cause.Text, cause.Method, cause.Hard
	}
	return e
}

// apply performs one operation and returns what the client sees.
func (m *model) apply(o op) result {
	var r result
	switch o.Kind {
	case opConnect:
		m.conns = append(m.conns, &mConn{name: fmt.Sprintf("conn%d", len(m.conns)+1), open: map[uint16]*mChan{}})
		return r
	case opCloseConn:
		c := m.conns[o.Conn]
		if c.closed {
			r.Err = closedErr(c.cause)
			return r
		}
		m.closeConn(c, nil)
		m.flush()
		return r
	case opOpenChannel:
		c := m.conns[o.Conn]
		if c.closed {
			m.chans = append(m.chans, nil)
			r.Err = closedErr(c.cause)
			return r
		}
		id, label := m.nextChannel(o.Conn)
		ch := &mChan{conn: c, id: id, label: label, live: map[string]*mCons{}, suspended: map[*mQueue]bool{}}
		c.open[id] = ch
		m.chans = append(m.chans, ch)
		r.Channel = id
		return r
	case opBrokerPublish:
		m.publish(o)
		m.flush()
		return r
	case opAdvance:
		m.advance(o.D)
		return r
	}

	// Channel methods.
	ch := m.chans[o.Ch]
	if o.Kind == opConsume {
		m.cons = append(m.cons, nil) // the handle exists even if the consume fails
	}
	if ch.closed {
		r.Err = closedErr(ch.cause)
		return r
	}
	if err := m.method(ch, o, &r); err != nil {
		m.cover[fmt.Sprintf("error %d %s", err.Code, err.Method)]++
		r.Err = err
		if err.Hard {
			m.closeConn(ch.conn, err)
		} else {
			m.closeChannel(ch, err)
		}
	}
	m.flush()
	return r
}

func (m *model) method(ch *mChan, o op, r *result) *errInfo {
	switch o.Kind {
	case opCloseChannel:
		m.closeChannel(ch, nil)
	case opDeclare:
		q := m.queues[o.Queue]
		if o.Passive {
			if q == nil {
				return protoErr(404, "queue.declare", "no queue '%s' in vhost '/'", o.Queue)
			}
		} else if q == nil {
			m.qids++
			q = &mQueue{id: m.qids, name: o.Queue, args: o.Args, maxPrio: o.Args.MaxPrio, sac: o.Args.SAC, bands: map[int][]*mCons{}}
			m.queues[o.Queue] = q
		} else if err := inequivalent(q, o.Args); err != nil {
			return err
		}
		r.Info = &sim.QueueInfo{Name: q.name, Ready: len(q.ready), Consumers: len(q.consumers)}
		m.touchExpires(q) // any declare, passive or not, restarts x-expires
	case opPublish:
		if o.Exchange != "" {
			return protoErr(404, "basic.publish", "no exchange '%s' in vhost '/'", o.Exchange)
		}
		routed, rejected := m.publish(o)
		if !routed && o.Mandatory {
			m.cover["unroutable mandatory message returned"]++
			ch.returns = append(ch.returns, sim.Return{ReplyCode: 312, ReplyText: "NO_ROUTE", RoutingKey: o.Queue, Message: publishMessage(o)})
		}
		if ch.confirming {
			// A queue that refused the message (reject-publish) makes the
			// confirm a nack.
			ch.pubTag++
			// RabbitMQ 3.10 sends a lone nack with multiple set
			// (send_nacks has no single-tag clause; measured).
			ch.confirms = append(ch.confirms, sim.Confirmation{DeliveryTag: ch.pubTag, Nack: rejected, Multiple: rejected})
			if rejected {
				m.cover["reject-publish nack"]++
			}
		}
	case opConfirm:
		ch.confirming = true
	case opQos:
		if o.Size != 0 {
			return protoErr(540, "basic.qos", "prefetch_size!=0 (%d)", o.Size)
		}
		if o.Global {
			m.setLimit(ch, o.Count)
		} else {
			// global=false sets the prefetch of future consumers and
			// removes any channel-wide limit (section 1).
			ch.prefetch = o.Count
			m.setLimit(ch, 0)
		}
	case opConsume:
		return m.consume(ch, o)
	case opCancel:
		if c := ch.live[o.Tag]; c != nil {
			m.removeConsumer(c)
			m.touchExpires(c.q)
			m.markDirty(c.q)
		}
	case opGet:
		q := m.queues[o.Queue]
		if q == nil {
			return protoErr(404, "basic.get", "no queue '%s' in vhost '/'", o.Queue)
		}
		m.touchExpires(q) // basic.get restarts x-expires
		// The head is taken even if it has expired.
		if len(q.ready) == 0 {
			return nil
		}
		msg := q.ready[0]
		q.ready = q.ready[1:]
		redelivered := msg.delivered
		msg.delivered = true
		ch.lastTag++
		if !o.NoAck {
			q.unacked++
			ch.ledger = append(ch.ledger, mEntry{at: m.now, tag: ch.lastTag, q: q, msg: msg})
			m.syncTick(ch)
		}
		d := delivery("", ch.lastTag, redelivered, q.name, msg)
		// Like RabbitMQ's fetch, what expired behind the message goes
		// before the count.
		m.dropExpired(q)
		m.markDirty(q)
		d.MessageCount = len(q.ready)
		r.GetOK, r.Get = true, &d
		m.noteDelivery(msg)
	case opAck, opNack, opReject:
		method := map[opKind]string{opAck: "basic.ack", opNack: "basic.nack", opReject: "basic.reject"}[o.Kind]
		ds, err := m.take(ch, method, o.DTag, o.Multiple && o.Kind != opReject)
		if err != nil {
			return err
		}
		m.settle(ch, ds, o.Kind != opAck && o.Requeue, o.Kind != opAck && !o.Requeue)
	case opRecover:
		if !o.Requeue {
			return protoErr(540, "basic.recover", "requeue=false")
		}
		ds := ch.ledger
		ch.ledger = nil
		m.settle(ch, ds, true, false)
	case opPurge:
		q := m.queues[o.Queue]
		if q == nil {
			return protoErr(404, "queue.purge", "no queue '%s' in vhost '/'", o.Queue)
		}
		r.N = len(q.ready)
		q.ready = nil
	case opDelete:
		q := m.queues[o.Queue]
		if q == nil {
			return nil // deleting a missing queue is not an error
		}
		if o.IfEmpty && len(q.ready) > 0 { // if-empty is checked first
			return protoErr(406, "queue.delete", "%s not empty", m.resource(q.name))
		}
		if o.IfUnused && len(q.consumers) > 0 {
			return protoErr(406, "queue.delete", "%s in use", m.resource(q.name))
		}
		r.N = len(q.ready)
		m.deleteQueue(q)
	}
	return nil
}

// inequivalent compares a redeclaration's arguments with the queue's, in
// RabbitMQ's order, and returns its 406 for the first difference.
func inequivalent(q *mQueue, args qArgs) *errInfo {
	received, current := map[string]any{}, map[string]any{}
	for _, kv := range argList(args) {
		received[kv.key] = kv.val
	}
	for _, kv := range argList(q.args) {
		current[kv.key] = kv.val
	}
	describe := func(v any, ok bool) string {
		if !ok {
			return "none"
		}
		t := "signedint"
		switch v.(type) {
		case string:
			t = "longstr"
		case bool:
			t = "bool"
		}
		return fmt.Sprintf("the value '%v' of type '%s'", v, t)
	}
	for _, key := range []string{"x-expires", "x-message-ttl", "x-dead-letter-exchange", "x-dead-letter-routing-key",
		"x-max-length", "x-max-length-bytes", "x-max-priority", "x-overflow", "x-single-active-consumer"} {
		r, rok := received[key]
		c, cok := current[key]
		if !rok && !cok || rok && cok && r == c {
			continue
		}
		text := fmt.Sprintf("received %s but current is %s", describe(r, rok), describe(c, cok))
		if rok && cok {
			// Both set: rabbit_misc:assert_field_equivalence prints the
			// bare values; "the value ... of type" only when one is missing.
			text = fmt.Sprintf("received '%v' but current is '%v'", r, c)
		}
		return protoErr(406, "queue.declare", "inequivalent arg '%s' for queue '%s' in vhost '/': %s", key, q.name, text)
	}
	return nil
}

// publish routes through the default exchange: to the queue named by the
// routing key, if there is one. It reports whether the message was routed,
// and whether the queue refused it (reject-publish).
func (m *model) publish(o op) (routed, rejected bool) {
	q := m.queues[o.Queue]
	if q == nil {
		return false, false
	}
	msg := &mMsg{body: o.Body, key: o.Queue, pubPrio: o.Priority, exp: o.Expire}
	ttl, hasTTL := 0, o.Expire != ""
	if hasTTL {
		ttl, _ = strconv.Atoi(o.Expire)
	}
	return true, !m.enqueue(q, msg, ttl, hasTTL)
}

// enqueue puts a message that reached q into it (RabbitMQ's
// deliver_or_enqueue), ttl being the message's own TTL in ms. It reports
// false if q refused it (reject-publish).
func (m *model) enqueue(q *mQueue, msg *mMsg, ttl int, hasTTL bool) bool {
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
	if len(q.ready) == 0 {
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

func (m *model) consume(ch *mChan, o op) *errInfo {
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
	if q.exclusive || o.Exclusive && (len(q.consumers) > 0 || q.sac) {
		return protoErr(403, "basic.consume", "%s in exclusive use", m.resource(q.name))
	}
	c := &mCons{tag: o.Tag, ch: ch, q: q, noAck: o.NoAck, exclusive: o.Exclusive, prio: o.XPrio}
	if !o.NoAck { // no-ack consumers get no credit entry: unlimited
		c.prefetch = ch.prefetch
		if m.mutant {
			c.prefetch++
		}
	}
	q.consumers = append(q.consumers, c)
	q.bands[c.prio] = append(q.bands[c.prio], c)
	if q.exclusive = q.exclusive || o.Exclusive; q.sac && q.active == nil {
		q.active = c
	}
	ch.consumers = append(ch.consumers, c)
	ch.live[c.tag] = c
	m.cons[len(m.cons)-1] = c
	m.touchExpires(q) // stops it
	m.markDirty(q)
	return nil
}

// removeConsumer takes a consumer off its queue and its channel. A single
// active consumer queue that loses its active consumer promotes the waiting
// one with the highest priority, earliest registered first.
func (m *model) removeConsumer(c *mCons) {
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
		for _, w := range q.consumers {
			if q.active == nil || w.prio > q.active.prio {
				q.active = w
			}
		}
		if q.active != nil {
			m.cover["single active consumer promoted"]++
		}
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
		for _, d := range g.ds {
			q.unacked--
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
		if requeue {
			m.dropOverLimit(q)
			m.dropExpired(q)
		}
		m.markDirty(q)
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
	for {
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
		msg.delivered = true
		ch := c.ch
		ch.lastTag++
		if !c.noAck {
			q.unacked++
			c.outstanding++
			ch.ledger = append(ch.ledger, mEntry{at: m.now, tag: ch.lastTag, q: q, msg: msg, cons: c})
			m.syncTick(ch)
		}
		c.inbox = append(c.inbox, delivery(c.tag, ch.lastTag, redelivered, q.name, msg))
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
		if expire {
			m.dropExpired(q)
		}
	}
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

// closeChannel closes a channel: its consumers go, its unacked deliveries
// return to their places (section 5), queue by queue; a drop-head queue
// drops what that put over its limit, and a queue left without consumers
// restarts its x-expires.
func (m *model) closeChannel(ch *mChan, cause *errInfo) {
	ch.closed, ch.cause, ch.tick.on = true, cause, false
	delete(ch.conn.open, ch.id)
	ds := ch.ledger
	ch.ledger = nil
	var touched []*mQueue
	for _, c := range ch.consumers {
		if !c.cancelled {
			m.removeConsumer(c)
			if !slices.Contains(touched, c.q) {
				touched = append(touched, c.q)
			}
		}
	}
	for _, d := range ds {
		if !slices.Contains(touched, d.q) {
			touched = append(touched, d.q)
		}
	}
	for _, q := range touched {
		if q.deleted {
			continue
		}
		for _, d := range ds {
			if d.q == q {
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
		m.removeConsumer(c)
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
		st := sim.QueueStats{Vhost: "/", Name: n, Ready: len(q.ready), Unacked: q.unacked, Consumers: len(q.consumers)}
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
