package modeltest

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/amqpsim/amqpsim/scenarios"
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
	// heldDead, while a settlement's group is settled, collects what its
	// rejects dead-letter: the queue dispatches first (recorded in
	// scenarios/library/dlx-reject-next-delivery-first.txt).
	heldDead *[]heldDead
	now      time.Duration // virtual time since the start
	seq      uint64        // timer scheduling order (breaks ties of equal due times)
	qids     int           // queues created so far
	rng      *rand.Rand
	conns    []*mConn // by connection handle
	chans    []*mChan // by channel handle; nil if the open failed
	cons     []*mCons // by consumer handle; nil if the consume failed
	connBy   map[string]*mConn
	chanBy   map[string]int
	queues   map[string]*mQueue
	dirty    []*mQueue
	blocks   int // blocking clock: orders consumers blocked at different times

	// mutant deliberately breaks the model, to show how a failure is
	// reported (TestModelFailureIsReadable).
	mutant bool
	// cover counts interesting situations reached (TestModelCoverage).
	cover map[string]int
}

type mConn struct {
	name   string // the scenario's name for it
	closed bool
	cause  *errInfo // the hard error that closed it
	open   map[uint16]*mChan
}

type mChan struct {
	conn   *mConn
	id     uint16
	name   string // the scenario's name for it
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
	args        sim.Table // basic.consume's arguments, shown in ConsumerStats
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
	autoDel   bool // auto-delete: deleted when its last consumer goes
	hadCons   bool // it has had a consumer (auto-delete waits for one)
	maxPrio   int
	sac       bool
	deleted   bool
	ttl       mTimer  // for the head's expiry
	expires   mTimer  // x-expires
	ready     []*mMsg // sorted by (priority desc, seq asc)
	unacked   int
	seq       int
	consumers []*mCons         // live, in registration order (the order of basic.consume-ok)
	bands     map[int][]*mCons // live, unblocked consumers per priority, head first
	active    *mCons           // the single active consumer
	exclusive bool             // an exclusive consumer holds the queue
	// quorum is x-queue-type=quorum (model_quorum.go); returns counts the
	// ready messages at the head that are returns, served first.
	quorum  bool
	returns int
	// requeued: a settlement requeued messages to the tail (3.10 without
	// a delivery limit), each checked out on its own: the next checkout
	// is not grouped by consumer (handOut).
	requeued bool
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
	count     int64 // a quorum queue's delivery count (x-delivery-count)
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
	return &model{rng: rand.New(rand.NewPCG(seed, 0x616d717073696d)), queues: map[string]*mQueue{}, cover: map[string]int{},
		connBy: map[string]*mConn{}, chanBy: map[string]int{}}
}

func (m *model) resource(q string) string { return fmt.Sprintf("queue '%s' in vhost '/'", q) }

func protoErr(code int, method, format string, args ...any) *errInfo {
	names := map[int]string{403: "ACCESS_REFUSED", 404: "NOT_FOUND", 405: "RESOURCE_LOCKED", 406: "PRECONDITION_FAILED", 530: "NOT_ALLOWED", 540: "NOT_IMPLEMENTED"}
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
func (m *model) apply(op scenarios.Op) result {
	var r result
	switch o := op.(type) {
	case scenarios.Conn:
		c := &mConn{name: o.Name, open: map[uint16]*mChan{}}
		m.conns = append(m.conns, c)
		m.connBy[o.Name] = c
		return r
	case scenarios.OpenChannel:
		c := m.connBy[o.Conn]
		m.chanBy[o.Name] = len(m.chans)
		if c.closed {
			m.chans = append(m.chans, nil)
			r.Err = closedErr(c.cause)
			return r
		}
		// A channel gets the lowest free number on its connection.
		id := uint16(1)
		for c.open[id] != nil {
			id++
		}
		ch := &mChan{conn: c, id: id, name: o.Name, live: map[string]*mCons{}, suspended: map[*mQueue]bool{}}
		c.open[id] = ch
		m.chans = append(m.chans, ch)
		r.Channel = id
		return r
	case scenarios.Close:
		if c := m.connBy[o.Name]; c != nil {
			if c.closed {
				r.Err = closedErr(c.cause)
				return r
			}
			m.closeConn(c, nil)
			m.flush()
			return r
		}
	case scenarios.Publish:
		if o.Channel == BrokerChannel {
			m.publish(o)
			m.flush()
			return r
		}
	case scenarios.Advance:
		m.advance(o.D)
		return r
	case scenarios.ShowQueue, scenarios.ShowHeld:
		return r
	}

	// Channel methods.
	if _, ok := op.(scenarios.Consume); ok {
		m.cons = append(m.cons, nil) // the handle exists even if the consume fails
	}
	ch := m.chanOf(op)
	if ch.closed {
		r.Err = closedErr(ch.cause)
		return r
	}
	if err := m.method(ch, op, &r); err != nil {
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

// chanOf returns the channel a channel method runs on.
func (m *model) chanOf(op scenarios.Op) *mChan {
	var name string
	switch o := op.(type) {
	case scenarios.Close:
		name = o.Name
	case scenarios.DeclareQueue:
		name = o.Channel
	case scenarios.Publish:
		name = o.Channel
	case scenarios.Confirm:
		name = o.Channel
	case scenarios.Qos:
		name = o.Channel
	case scenarios.Consume:
		name = o.Channel
	case scenarios.Cancel:
		name = o.Channel
	case scenarios.Get:
		name = o.Channel
	case scenarios.Settle:
		name = o.Channel
	case scenarios.Recover:
		name = o.Channel
	case scenarios.Purge:
		name = o.Channel
	case scenarios.DeleteQueue:
		name = o.Channel
	default:
		panic(fmt.Sprintf("modeltest: the model cannot run %T (%s)", op, op))
	}
	return m.chans[m.chanBy[name]]
}

func (m *model) method(ch *mChan, op scenarios.Op, r *result) *errInfo {
	switch o := op.(type) {
	case scenarios.Close:
		m.closeChannel(ch, nil)
	case scenarios.DeclareQueue:
		args := argsOf(o.Args)
		q := m.queues[o.Queue]
		if o.Passive {
			if q == nil {
				return protoErr(404, "queue.declare", "no queue '%s' in vhost '/'", o.Queue)
			}
		} else if q == nil {
			m.qids++
			q = &mQueue{id: m.qids, name: o.Queue, args: args, autoDel: o.AutoDelete, maxPrio: args.MaxPrio, sac: args.SAC, bands: map[int][]*mCons{}, quorum: args.Quorum}
			m.queues[o.Queue] = q
		} else if err := inequivalent(q, o.AutoDelete, args); err != nil {
			return err
		}
		r.Info = &sim.QueueInfo{Name: q.name, Ready: len(q.ready), Consumers: m.consumerCount(q)}
		m.touchExpires(q) // any declare, passive or not, restarts x-expires
	case scenarios.Publish:
		if o.Exchange != "" {
			return protoErr(404, "basic.publish", "no exchange '%s' in vhost '/'", o.Exchange)
		}
		routed, rejected := m.publish(o)
		if !routed && o.Mandatory {
			m.cover["unroutable mandatory message returned"]++
			ch.returns = append(ch.returns, sim.Return{ReplyCode: 312, ReplyText: "NO_ROUTE", RoutingKey: o.Key, Message: message(o)})
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
	case scenarios.Confirm:
		ch.confirming = true
	case scenarios.Qos:
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
	case scenarios.Consume:
		return m.consume(ch, o)
	case scenarios.Cancel:
		if c := ch.live[o.Tag]; c != nil {
			m.cancel(c)
		}
	case scenarios.Get:
		q := m.queues[o.Queue]
		if q == nil {
			return protoErr(404, "basic.get", "no queue '%s' in vhost '/'", o.Queue)
		}
		if q.quorum && q.sac {
			m.cover["quorum basic.get refused: single active consumer"]++
			return protoErr(405, "basic.get", "cannot obtain access to locked queue '%s' in vhost '/'. basic.get operations are not supported by quorum queues with single active consumer", q.name)
		}
		m.touchExpires(q) // basic.get restarts x-expires
		if q.quorum {
			m.expireQuorum(q) // a quorum queue's expired head goes first
		}
		// The head is taken even if it has expired.
		if len(q.ready) == 0 {
			return nil
		}
		if q.quorum {
			m.getQuorum(ch, q, o, r)
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
	case scenarios.Settle:
		if o.Msg != "" {
			panic(fmt.Sprintf("modeltest: %q: the harness settles by delivery tag", o))
		}
		method := "basic." + o.Method
		ack := o.Method == "ack"
		ds, err := m.take(ch, method, o.Tag, o.Multiple && o.Method != "reject")
		if err != nil {
			return err
		}
		m.settle(ch, ds, !ack && o.Requeue, !ack && !o.Requeue)
	case scenarios.Recover:
		if !o.Requeue {
			return protoErr(540, "basic.recover", "requeue=false")
		}
		ds := ch.ledger
		ch.ledger = nil
		m.settle(ch, ds, true, false)
	case scenarios.Purge:
		q := m.queues[o.Queue]
		if q == nil {
			return protoErr(404, "queue.purge", "no queue '%s' in vhost '/'", o.Queue)
		}
		r.N = len(q.ready)
		q.ready, q.returns = nil, 0
		if q.quorum {
			m.syncQuorumTTL(q)
		}
	case scenarios.DeleteQueue:
		q := m.queues[o.Queue]
		if q == nil {
			return nil // deleting a missing queue is not an error
		}
		if err := quorumDeleteFlags(q, o); err != nil {
			return err
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

// inequivalent compares a redeclaration with the queue, in RabbitMQ's
// order (rabbit_amqqueue:assert_equivalence: durable, auto_delete, then
// the arguments), and returns its 406 for the first difference.
func inequivalent(q *mQueue, autoDelete bool, args qArgs) *errInfo {
	if autoDelete != q.autoDel {
		return protoErr(406, "queue.declare", "inequivalent arg 'auto_delete' for queue '%s' in vhost '/': received '%t' but current is '%t'",
			q.name, autoDelete, q.autoDel)
	}
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
		"x-max-length", "x-max-length-bytes", "x-max-priority", "x-overflow", "x-single-active-consumer",
		"x-queue-type", "x-delivery-limit"} {
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
