package queue

import (
	"cmp"
	"slices"

	"github.com/amqpsim/amqpsim/consumer"
	"github.com/amqpsim/amqpsim/protocol"
)

// A quorum queue's own consumer timeout (Rules.QuorumConsumerTimeout,
// RabbitMQ 4.3; rabbit_fifo machine version 8, read in 4.3.6's
// rabbit_fifo, rabbit_queue_type, rabbit_channel and ra_server_proc).
//
// Each delivery to a consumer that must ack, and each basic.get that
// must, is due back at its checkout plus the consumer's timeout
// (assign_to_consumer/6, checkout_one/4). The queue keeps one timer at
// the earliest due time (next_consumer_timeout, armed by handle_aux/5 as
// an absolute Ra timer); when it fires, evaluate_consumer_timeout takes
// back every checked-out message whose time has come, consumer by
// consumer in key order, and tells each consumer's channel
// ({released, QName, Tag, MsgIds, timeout}). Measured on 4.3.6: the
// channel hears of it a few milliseconds after the due time, with a
// 2 s timeout and with the global consumer_timeout at 3 s.

// checkout is a delivery the queue times out, and when it is due back.
type checkout struct {
	m   *Message
	due int64
}

// timing is what the queue keeps of a consumer for its timeout.
type timing struct {
	// timeout is the consumer's timeout on the Env.Now clock, fixed at
	// basic.consume; on is false when it has none.
	timeout int64
	on      bool
	// out are its deliveries in delivery order from head on, so in the
	// order they are due; a settled one (no longer owned by the
	// consumer) is dropped when it reaches the head.
	out  []checkout
	head int
	// stale counts its timed-out deliveries that its channel has not
	// settled yet (timed_out_msg_ids): while it is above 0 the consumer
	// is paused (status {timeout, up}).
	stale int
}

// push adds a delivery due at due. live is how many of the listed
// deliveries are still out, and isLive whether one is. The list is kept
// as short as what is out: the dropped head is reused once it is as long
// as the rest, and when the settled deliveries behind the head (which a
// consumer that keeps one old delivery while it settles many newer ones
// leaves) outnumber those out, only those out are kept.
func (t *timing) push(m *Message, due int64, live int, isLive func(*Message) bool) {
	switch n := len(t.out) - t.head; {
	case n >= 2*live+32:
		kept := t.out[:0]
		for _, e := range t.out[t.head:] {
			if isLive(e.m) {
				kept = append(kept, e)
			}
		}
		clear(t.out[len(kept):])
		t.out, t.head = kept, 0
	case t.head > 0 && t.head >= n:
		k := copy(t.out, t.out[t.head:])
		clear(t.out[k:])
		t.out, t.head = t.out[:k], 0
	}
	t.out = append(t.out, checkout{m, due})
}

// front drops the settled deliveries at the head (those live reports
// false for) and returns the first one still out, if any.
func (t *timing) front(live func(*Message) bool) (checkout, bool) {
	for t.head < len(t.out) {
		if e := t.out[t.head]; live(e.m) {
			return e, true
		}
		t.out[t.head] = checkout{}
		t.head++
	}
	return checkout{}, false
}

// consumerTimeout is the timeout, in nanoseconds, of a consumer without
// x-consumer-timeout of its own and of a basic.get
// (rabbit_queue_type:get_consumer_timeout/2): the smaller of the queue's
// x-consumer-timeout argument and consumer-timeout policy when either is
// set (rabbit_queue_type_util:args_policy_lookup/3 with min/2, under
// which an integer is below any binary), else the broker's
// consumer_timeout (Env.ConsumerTimeout). ok is false for none: a value
// that is no integer (RabbitMQ 4.3.6 fails the consume on it, which is
// not modelled).
func (q *quorum[T]) consumerTimeout() (int64, bool) {
	arg, hasArg := q.opts.Args["x-consumer-timeout"]
	var val any
	switch {
	case hasArg && q.hasPolicyTimeout:
		a, aInt := protocol.Int(arg)
		p, pInt := protocol.Int(q.policyTimeout)
		switch {
		case aInt && pInt:
			val = min(a, p)
		case aInt:
			val = a
		case pInt:
			val = p
		}
	case hasArg:
		val = arg
	case q.hasPolicyTimeout:
		val = q.policyTimeout
	default:
		return q.env.ConsumerTimeout()
	}
	n, ok := protocol.Int(val)
	if !ok {
		return 0, false
	}
	return n * 1_000_000, true
}

// startTiming gives a new consumer that must ack its timeout: its
// x-consumer-timeout argument, an integer (basic.consume checked it),
// which wins over the queue's whatever its value
// (rabbit_queue_type:consume/3), else the queue's (consumerTimeout),
// both read now. args is nil for a consumer added without basic.consume.
func (q *quorum[T]) startTiming(c *consumer.Consumer[T], args protocol.Table) {
	if !q.opts.Rules.QuorumConsumerTimeout || c.NoAck {
		return
	}
	t := &timing{}
	if n, ok := protocol.Int(args["x-consumer-timeout"]); ok {
		t.timeout, t.on = n*1_000_000, true
	} else {
		t.timeout, t.on = q.consumerTimeout()
	}
	if q.timings == nil {
		q.timings = map[*consumer.Consumer[T]]*timing{}
	}
	q.timings[c] = t
}

// checkedOut starts the clock of a delivery to c.
func (q *quorum[T]) checkedOut(c *consumer.Consumer[T], m *Message) {
	t := q.timings[c]
	if t == nil || !t.on {
		return
	}
	due := q.env.Now() + t.timeout
	t.push(m, due, q.held[c], func(m *Message) bool { return q.owner[m] == c })
	q.armTimeout(due)
}

// gotOut starts the clock of an unsettled basic.get delivery: the
// queue's timeout at the get.
func (q *quorum[T]) gotOut(m *Message) {
	if !q.opts.Rules.QuorumConsumerTimeout {
		return
	}
	to, ok := q.consumerTimeout()
	if !ok {
		return
	}
	if q.getLive == nil {
		q.getLive = map[*Message]bool{}
	}
	q.getLive[m] = true
	due := q.env.Now() + to
	q.getOut.push(m, due, len(q.getLive), q.gotLive)
	q.armTimeout(due)
}

// settledOut forgets the settled delivery of m to c (nil for a
// basic.get) as far as the timer is concerned, dropping settled
// deliveries off the head of the consumer's list so that it stays as
// short as what is out.
func (q *quorum[T]) settledOut(c *consumer.Consumer[T], m *Message) {
	if c == nil {
		if q.getLive != nil {
			delete(q.getLive, m)
			q.getOut.front(q.gotLive)
		}
		return
	}
	if t := q.timings[c]; t != nil && t.on {
		t.front(func(m *Message) bool { return q.owner[m] == c })
	}
}

func (q *quorum[T]) gotLive(m *Message) bool { return q.getLive[m] }

// armTimeout makes the timer fire by due (maybe_add_consumer_timeout_effect/3:
// a timer for an earlier time replaces the one set).
func (q *quorum[T]) armTimeout(due int64) {
	if q.timeoutSet && q.timeoutDue <= due {
		return
	}
	q.timeoutDue, q.timeoutSet = due, true
	q.env.SetTimer(ConsumerTimeoutTimer, due)
}

// rearmTimeout sets the timer at the earliest due time of what is still
// out, or stops it (next_consumer_timeout/1 after an evaluation).
func (q *quorum[T]) rearmTimeout() {
	var next int64
	found := false
	consider := func(due int64) {
		if !found || due < next {
			next, found = due, true
		}
	}
	for c, t := range q.timings {
		if e, ok := t.front(func(m *Message) bool { return q.owner[m] == c }); ok {
			consider(e.due)
		}
	}
	for _, e := range q.getOut.out[q.getOut.head:] {
		if q.getLive[e.m] {
			consider(e.due)
		}
	}
	q.timeoutSet = false
	if !found {
		q.env.StopTimer(ConsumerTimeoutTimer)
		return
	}
	q.armTimeout(next)
}

// evaluateTimeouts is the timer's work (apply_/3 of {timeout,
// evaluate_consumer_timeout}). Consumer by consumer, in key order (the
// basic.get ones last, in get order: a get's key {Tag, Pid} sorts after
// the integer keys of consumers; rabbit_fifo orders the gets by their
// delivery tags as binaries, which amqpsim does not model), the
// deliveries due by now go back to the queue as returns, served first,
// their acquired count up but not their delivery count (return_multiple/8
// with delivery_failed false: x-acquired-count, and no x-delivery-count
// for it); each consumer gets its credit back and pauses until its
// channel has settled every delivery the queue took back from it. A
// single active consumer that holds nothing more waits, and the first
// waiting consumer that is not paused becomes active. Then each
// consumer's channel, and each basic.get's, is told, in the reverse
// order (rabbit_fifo prepends each {released, ...} effect to the list
// ra runs in order), after which the broker dispatches.
func (q *quorum[T]) evaluateTimeouts() {
	q.timeoutSet = false
	now := q.env.Now()
	cs := make([]*consumer.Consumer[T], 0, len(q.timings))
	for c := range q.timings {
		cs = append(cs, c)
	}
	slices.SortFunc(cs, func(a, b *consumer.Consumer[T]) int { return cmp.Compare(q.keys[a], q.keys[b]) })
	var told [][]Settled[T]
	for _, c := range cs {
		t := q.timings[c]
		var ds []Settled[T]
		for {
			e, ok := t.front(func(m *Message) bool { return q.owner[m] == c })
			if !ok || e.due > now {
				break
			}
			t.out[t.head] = checkout{}
			t.head++
			ds = append(ds, Settled[T]{Message: e.m, Consumer: c})
		}
		if len(ds) == 0 {
			continue
		}
		q.rotation.Pause(c)
		t.stale += len(ds)
		credit := make([]*consumer.Consumer[T], 0, len(ds))
		for _, d := range ds {
			q.takeBack(d)
			credit = append(credit, c)
		}
		q.rotation.Credit(credit)
		told = append(told, ds)
	}
	live := q.getOut.out[:0]
	for _, e := range q.getOut.out[q.getOut.head:] {
		switch {
		case !q.getLive[e.m]:
		case e.due > now:
			live = append(live, e)
		default:
			delete(q.getLive, e.m)
			d := Settled[T]{Message: e.m}
			q.takeBack(d)
			told = append(told, []Settled[T]{d})
		}
	}
	clear(q.getOut.out[len(live):])
	q.getOut.out, q.getOut.head = live, 0
	if q.caps.SingleActive && q.active != nil && q.active.Paused() && q.held[q.active] == 0 {
		q.quiescing = false
		q.active = nil
		q.activateNext()
	}
	q.rearmTimeout()
	if len(told) == 0 {
		return
	}
	q.maybeHandOver()
	q.evaluateLimit()
	for i := len(told) - 1; i >= 0; i-- {
		q.env.TimedOut(told[i])
	}
}

// takeBack returns a timed-out delivery to the queue, keeping it as
// stale until its channel settles it.
func (q *quorum[T]) takeBack(d Settled[T]) {
	q.unacked--
	if d.Consumer != nil {
		delete(q.owner, d.Message)
		q.release(d.Consumer)
	} else {
		q.getDone()
	}
	if q.stale == nil {
		q.stale = map[*Message]*consumer.Consumer[T]{}
	}
	q.stale[d.Message] = d.Consumer
	q.giveBack(d.Message, false, false)
}

// settleStale takes a channel's settlement of a delivery the queue timed
// out: the message is no longer the consumer's, so nothing happens to
// it, but once the consumer's channel has settled all of them, however
// (maybe_untimeout/2), the consumer is up again. It reports whether d
// was such a delivery. The record of a delivered message names one
// delivery only: the queue hands a message it took back out as a new
// copy (handOut), so d.Message finds d.
//
// A consumer up again takes messages at once after a basic.ack, or a
// basic.nack or basic.reject without requeue (complete_and_checkout/6
// puts it back in the service queue), but after a requeue only if the
// same settlement returned a message it still held: return/8 puts the
// consumer back without calling update_or_remove_con/4, so it waits for
// its next settlement (measured on 4.3.6: a basic.nack or basic.reject
// with requeue of the timed-out tag delivers nothing, a basic.ack of a
// delivery it still held then delivers; basic.recover, which returns
// both, delivers at once). A waiting single active consumer goes back
// among the waiting ones however it is settled
// (handle_waiting_timedout_consumers/4), and is activated if no consumer
// is active.
func (q *quorum[T]) settleStale(d Settled[T], how Settlement) bool {
	c, ok := q.stale[d.Message]
	if !ok || c != d.Consumer {
		return false
	}
	delete(q.stale, d.Message)
	t := q.timings[c]
	if c == nil || t == nil {
		return true // a basic.get, or a consumer the queue forgot
	}
	if t.stale--; t.stale > 0 {
		return true
	}
	waiting := q.caps.SingleActive && q.active != c
	q.rotation.Unpause(c, waiting || !how.Requeues())
	if waiting {
		q.activateNext()
	}
	return true
}

// activateNext is activate_next_consumer/2 for a single active consumer
// queue whose active consumer may have gone: with none active, the
// first waiting consumer that is not paused becomes active; with one
// active, a waiting one of higher priority (4.0+) takes over at once
// from an active one that holds nothing, or makes it quiesce.
func (q *quorum[T]) activateNext() {
	if next := q.nextActive(); next != nil && next != q.active {
		q.offerActive(next)
	}
}
