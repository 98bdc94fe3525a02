package fuzz

import (
	"slices"
	"strconv"
	"time"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/scenarios"
)

func (g *gen) qos() {
	ch := g.anyChan()
	op := scenarios.Qos{Channel: ch.name, Count: oneOf(g, 0, 1, 1, 2, 2, 3, 5), Global: g.chance(25)}
	if g.chance(1) {
		op.Size = 1000 // RabbitMQ refuses a prefetch size (540)
	}
	g.add(op)
}

// quorumByteLimit reports whether a quorum queue may count bytes: from
// 4.3 it counts a message's headers, and the recorder puts the run's
// prefix in the queue names of CC headers, which the simulator never sees.
func (g *gen) quorumByteLimit() bool {
	for _, p := range g.policies {
		if _, ok := p.def["max-length-bytes"]; ok {
			return true
		}
	}
	for _, q := range g.queues {
		if _, ok := q.args["x-max-length-bytes"]; ok && q.kind == "quorum" {
			return true
		}
	}
	return false
}

// consumedQueues returns the live queues with consumers.
func (g *gen) consumedQueues() []*gqueue {
	var out []*gqueue
	for _, q := range g.liveQueues() {
		if g.view.consumed[q.name] > 0 && (g.cluster == nil || g.cluster.reachable(q)) {
			out = append(out, q)
		}
	}
	return out
}

// declaredStream reports whether a stream of that name was declared by
// an earlier step.
func (g *gen) declaredStream(name string) bool {
	for _, q := range g.queues {
		if q.name == name {
			return q.kind == "stream" && q.declared
		}
	}
	return false
}

// anyStream reports whether a stream is declared and not deleted.
func (g *gen) anyStream() bool {
	for _, q := range g.queues {
		if q.kind == "stream" && q.declared && !q.deleted {
			return true
		}
	}
	return false
}

func (g *gen) consume() {
	ch := g.anyChan()
	q := g.someQueue()
	tag := g.name("T")
	if g.chance(3) && len(g.view.consumers[ch.name]) > 0 {
		tag = oneOf(g, g.view.consumers[ch.name]...) // reused: 530, the connection closes
	}
	op := scenarios.Consume{Channel: ch.name, Queue: q.name, Tag: tag, NoAck: g.chance(20), Exclusive: g.chance(6)}
	if q.kind == "stream" {
		if g.chance(85) {
			// A stream needs a prefetch and acks; set it first, as clients do.
			if g.chance(90) {
				g.add(scenarios.Qos{Channel: ch.name, Count: 1 + g.r.IntN(3)})
			}
			op.NoAck = false
		}
		if g.chance(70) {
			op.Args = protocol.Table{"x-stream-offset": oneOf[any](g, "first", "last", "next", int32(0), int32(1), int32(3), "bad")}
		}
	} else if g.chance(10) {
		op.Args = protocol.Table{"x-priority": int32(g.r.IntN(6) - 1)}
	}
	if !slices.Contains(ch.tags, tag) {
		ch.tags = append(ch.tags, tag)
	}
	for _, d := range g.queueExpiries(q) {
		g.timer(d)
	}
	if ch.closed || !g.open(ch) { // the qos above closed it
		return
	}
	if q.kind == "stream" && !q.deleted && g.streamWrite >= 0 {
		// A reader's attach can open a segment, whose snapshot chunk
		// the count includes, and start retention: a change of the
		// count, as a write is (seed 13286).
		g.streamWrite = g.clock.now
	}
	g.add(op)
}

func (g *gen) cancel() {
	var chans []*gchan
	for _, ch := range g.openChans() {
		if len(g.view.consumers[ch.name]) > 0 {
			chans = append(chans, ch)
		}
	}
	ch := oneOf(g, chans...)
	tag := oneOf(g, g.view.consumers[ch.name]...)
	if g.chance(5) {
		tag = "nobody"
	}
	g.add(scenarios.Cancel{Channel: ch.name, Tag: tag})
}

func (g *gen) get() {
	ch := g.anyChan()
	q := g.someQueue()
	for _, d := range g.queueExpiries(q) {
		g.timer(d)
	}
	g.add(scenarios.Get{Channel: ch.name, Queue: q.name, NoAck: g.chance(35)})
}

// publish publishes one to three messages: to a queue through the default
// exchange, or to an exchange with a key its bindings may match, with the
// properties and headers applications set.
func (g *gen) publish() {
	ch := g.anyChan()
	op := scenarios.Publish{Channel: ch.name}
	for range 1 + g.r.IntN(3) {
		op.Bodies = append(op.Bodies, g.name("m"))
	}
	var targets []*gqueue // the queues the messages may reach
	if len(g.exchanges) == 0 || g.chance(60) {
		op.Key = g.someQueueName()
		if c := g.consumedQueues(); len(c) > 0 && g.chance(50) {
			op.Key = oneOf(g, c...).name
		}
		for _, q := range g.queues {
			if q.name == op.Key {
				targets = append(targets, q)
			}
		}
	} else {
		x := g.someExchange()
		op.Exchange = x.name
		op.Key = g.routingKey(x)
		targets = g.queues
		if x.kind == "headers" || g.chance(10) {
			op.Props.Headers = g.headers(x)
		}
	}
	op.Mandatory = g.chance(20)
	g.properties(&op.Props, ch)
	if op.Props.Headers == nil && g.chance(15) {
		op.Props.Headers = g.headers(nil)
	}
	if g.chance(8) && !g.quorumByteLimit() {
		var x *gexchange
		if op.Exchange != "" {
			for _, e := range g.exchanges {
				if e.name == op.Exchange {
					x = e
				}
			}
		}
		op.Props.Headers = g.ccHeaders(op.Props.Headers, x)
		g.ccSent = true
		targets = g.queues
	}
	if ch.tx && slices.ContainsFunc(targets, func(q *gqueue) bool { return q.kind == "stream" && !q.deleted }) {
		// One publish to a stream a transaction: the commit hands the
		// writer its publishes together, which it puts in one chunk (on
		// 3.10 a reader takes a chunk whole, whatever its credit: seed
		// 20083), where the simulator writes a chunk per message.
		if ch.txStream {
			return
		}
		ch.txStream = true
	}
	if op.Props.Expiration == "0" {
		for _, q := range targets {
			if q.kind == "quorum" {
				// A quorum queue expires a TTL of 0 "a moment later",
				// on a clock the step's real time moves and the
				// simulator's does not (quorum-ttl-zero.txt).
				op.Props.Expiration = strconv.Itoa(int(ms(g.unit)))
			}
		}
	}
	g.messageTimers(op.Props.Expiration, targets)
	for _, q := range targets {
		if q.kind == "stream" && !q.deleted {
			g.streamWrite = g.clock.now
			// One message a step: RabbitMQ's osiris writer puts the
			// messages that reach it together in one chunk, which a
			// reader takes whole whatever its credit; the simulator
			// writes a chunk per message (queue/stream.go).
			op.Bodies = op.Bodies[:1]
		}
		if q.kind == "quorum" && !q.deleted {
			// One message a step: a burst reaches rabbit_fifo faster than
			// its answers come back (a no-ack consumer's credit, a
			// reject-publish notice), so what it takes of a burst
			// depends on timing; the simulator takes one publish after
			// the other (seeds 1053 and 1115).
			op.Bodies = op.Bodies[:1]
		}
	}
	g.add(op)
}

// properties sets message properties; a few values RabbitMQ refuses.
func (g *gen) properties(p *protocol.Properties, ch *gchan) {
	if g.chance(30) {
		p.DeliveryMode = 2
	}
	if g.chance(12) {
		p.Priority = uint8(g.r.IntN(11))
	}
	if g.chance(10) {
		p.Expiration = strconv.Itoa(int(ms(g.ttl())))
		switch {
		case g.chance(10):
			p.Expiration = "0"
		case g.chance(5):
			p.Expiration = oneOf(g, "-1", "soon", "1.5")
		}
	}
	if g.chance(10) {
		p.MessageID = g.name("id")
	}
	if g.chance(5) {
		p.CorrelationID = "corr"
	}
	if g.chance(8) {
		p.ContentType = oneOf(g, "text/plain", "application/json")
	}
	if g.chance(4) {
		p.Type = "order"
	}
	if g.chance(4) {
		p.AppID = "app"
	}
	if g.chance(4) {
		p.UserID = "guest"
		if ch.conn.user != nil || g.chance(30) {
			p.UserID = "someone-else" // 406 unless the user is an impersonator
		}
	}
}

// messageTimers starts the timers a publish may start: each message TTL
// of the queues it may reach, its expiration, and the TTL of a queue a
// dead-lettered copy may go to next.
func (g *gen) messageTimers(expiration string, targets []*gqueue) {
	var ttls []time.Duration
	if n, err := strconv.Atoi(expiration); err == nil && n > 0 {
		ttls = append(ttls, time.Duration(n)*time.Millisecond)
	}
	for _, q := range targets {
		ttls = append(ttls, g.queueTTLs(q)...)
	}
	var next []time.Duration
	for _, q := range g.queues {
		next = append(next, g.queueTTLs(q)...)
	}
	for _, d := range ttls {
		g.timer(d)
		for _, d2 := range next {
			g.timer(d + d2)
		}
	}
}

// settle acks, nacks or rejects a delivery the channel holds: by its
// message or its tag, one or with multiple, requeued or not.
func (g *gen) settle() {
	var chans []*gchan
	for _, ch := range g.openChans() {
		if len(g.view.held[ch.name]) > 0 {
			chans = append(chans, ch)
		}
	}
	ch := oneOf(g, chans...)
	h := oneOf(g, g.view.held[ch.name]...)
	op := scenarios.Settle{Channel: ch.name, Method: "ack", Msg: h.msg, Requeue: true}
	switch n := g.r.IntN(100); {
	case n < 55:
	case n < 80:
		op.Method = "nack"
	default:
		op.Method = "reject"
	}
	if g.chance(30) {
		op.Msg, op.Tag = "", h.tag
	}
	if op.Method != "reject" && g.chance(25) {
		op.Multiple = true
		if g.chance(30) {
			op.Msg, op.Tag = "", 0
		}
	}
	if op.Method != "ack" {
		op.Requeue = g.chance(60)
		if !op.Requeue {
			for _, q := range g.queues {
				for _, d := range g.queueTTLs(q) {
					g.timer(d) // dead-lettered to a queue with a TTL
				}
			}
		}
	}
	g.add(op)
}

// settleOdd sends what clients get wrong: an unknown tag, a settlement of
// a message already settled or delivered without acks.
func (g *gen) settleOdd() {
	ch := g.anyChan()
	op := scenarios.Settle{Channel: ch.name, Method: oneOf(g, "ack", "nack", "reject"), Tag: uint64(50 + g.r.IntN(50)), Requeue: true}
	if d := g.view.delivered[ch.name]; len(d) > 0 && g.chance(60) {
		op.Tag, op.Msg = 0, oneOf(g, d...)
	}
	g.add(op)
}

func (g *gen) recover() {
	var chans []*gchan
	for _, ch := range g.openChans() {
		if len(g.view.held[ch.name]) > 0 {
			chans = append(chans, ch)
		}
	}
	g.add(scenarios.Recover{Channel: oneOf(g, chans...).name, Requeue: !g.chance(15)})
}

func (g *gen) confirmSelect() {
	ch := g.anyChan()
	ch.confirm = true
	g.add(scenarios.Confirm{Channel: ch.name})
}

func (g *gen) tx() {
	ch := g.anyChan()
	switch {
	case !ch.tx:
		ch.tx = true
		g.add(scenarios.Tx{Channel: ch.name, Method: scenarios.TxSelect})
	case g.chance(60):
		ch.txStream = false
		g.add(scenarios.Tx{Channel: ch.name, Method: scenarios.TxCommit})
	default:
		ch.txStream = false
		g.add(scenarios.Tx{Channel: ch.name, Method: scenarios.TxRollback})
	}
}

// smallAdvance lets a little time pass, unless that would leave a timer
// between the two clocks.
func (g *gen) smallAdvance() {
	a := time.Duration(1+g.r.IntN(8)) * 100 * time.Millisecond
	if g.clock.straddles(a) {
		a = g.clock.advanceFor()
		if len(g.clock.deadlines) == 0 {
			return
		}
	}
	g.add(scenarios.Advance{D: a})
}

// observe shows a queue's counts, what consumers hold, or a delivered
// message's headers or envelope.
func (g *gen) observe() {
	ch := g.anyChan()
	switch n := g.r.IntN(100); {
	case n < 45 && len(g.pickable()) > 0:
		g.add(scenarios.ShowQueue{Queue: g.someQueue().name})
	case n < 70 && ch != nil && len(g.view.delivered[ch.name]) > 0:
		msg := oneOf(g, g.view.delivered[ch.name]...)
		if g.chance(50) {
			g.add(scenarios.ShowHeaders{Channel: ch.name, Msg: msg})
		} else {
			g.add(scenarios.ShowEnvelope{Channel: ch.name, Msg: msg})
		}
	default:
		g.add(scenarios.ShowHeld{})
	}
}

// directReplyTo uses amq.rabbitmq.reply-to as RPC clients do, and as
// they get it wrong: a consumer that acks, a request on a channel with
// no reply consumer.
func (g *gen) directReplyTo() {
	ch := g.anyChan()
	const q = "amq.rabbitmq.reply-to"
	switch g.r.IntN(4) {
	case 0:
		g.add(scenarios.DeclareQueue{Channel: ch.name, Queue: q, Passive: true})
	case 1:
		tag := g.name("R")
		ch.tags = append(ch.tags, tag)
		g.add(scenarios.Consume{Channel: ch.name, Queue: q, Tag: tag, NoAck: !g.chance(15)})
	default:
		op := scenarios.Publish{Channel: ch.name, Key: g.someQueueName(), Bodies: []string{g.name("m")}}
		op.Props.ReplyTo = q
		g.add(op)
	}
}
