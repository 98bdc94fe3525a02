package fuzz

import (
	"github.com/amqpsim/amqpsim/scenarios"
)

// action is one kind of step the generator can take, with a weight that
// depends on the state: 0 when it cannot be taken. The weights favour what
// applications do (publish, consume, settle) over the odd sequences, which
// still come up (an unknown tag, a redeclare with other arguments, a
// method after a close), so that most scenarios do something meaningful
// and few are a stream of errors.
type action struct {
	name   string
	weight func(g *gen) int
	do     func(g *gen)
}

// actions are every kind of step, in a fixed order (the pick is seeded).
var actions = []action{
	{"conn", func(g *gen) int { return when(len(g.openConns()) < 3, 1+20*b2i(len(g.openConns()) == 0)) }, (*gen).openConn},
	{"channel", func(g *gen) int {
		return when(len(g.openConns()) > 0 && len(g.openChans()) < 4, 2+20*b2i(len(g.openChans()) == 0))
	}, (*gen).openChannel},
	{"close-channel", func(g *gen) int { return when(len(g.openChans()) > 0, 3) }, (*gen).closeChannel},
	{"close-conn", func(g *gen) int { return when(len(g.openConns()) > 0, 1) }, (*gen).closeConn},
	{"declare-queue", func(g *gen) int { return chanWhen(g, len(g.liveQueues()) < 4, 2+6*b2i(len(g.liveQueues()) == 0)) }, (*gen).declareQueue},
	{"redeclare-queue", func(g *gen) int { return chanWhen(g, len(g.pickable()) > 0, 2) }, (*gen).redeclareQueue},
	{"declare-exchange", func(g *gen) int { return chanWhen(g, len(g.liveExchanges()) < 3, 2) }, (*gen).declareExchange},
	{"bind", func(g *gen) int { return chanWhen(g, len(g.pickable()) > 0 && len(g.exchanges) > 0, 5) }, (*gen).bindQueue},
	{"bind-exchange", func(g *gen) int { return chanWhen(g, len(g.exchanges) > 1, 2) }, (*gen).bindExchange},
	{"unbind", func(g *gen) int { return chanWhen(g, len(g.pickable()) > 0 && len(g.exchanges) > 0, 1) }, (*gen).unbind},
	{"delete-queue", func(g *gen) int { return chanWhen(g, len(g.pickable()) > 0, 1) }, (*gen).deleteQueue},
	{"delete-exchange", func(g *gen) int { return chanWhen(g, len(g.exchanges) > 0, 1) }, (*gen).deleteExchange},
	{"purge", func(g *gen) int { return chanWhen(g, len(g.pickable()) > 0, 1) }, (*gen).purge},
	{"qos", func(g *gen) int { return chanWhen(g, true, 4) }, (*gen).qos},
	{"consume", func(g *gen) int { return chanWhen(g, len(g.pickable()) > 0, 6+6*b2i(len(g.consumedQueues()) == 0)) }, (*gen).consume},
	{"cancel", func(g *gen) int { return chanWhen(g, g.anyConsumer(), 2) }, (*gen).cancel},
	{"publish", func(g *gen) int { return chanWhen(g, true, 16) }, (*gen).publish},
	{"get", func(g *gen) int { return chanWhen(g, len(g.pickable()) > 0, 5) }, (*gen).get},
	{"settle", func(g *gen) int { return chanWhen(g, g.anyHeld(), 16) }, (*gen).settle},
	{"settle-odd", func(g *gen) int { return chanWhen(g, true, 1) }, (*gen).settleOdd},
	{"recover", func(g *gen) int { return chanWhen(g, g.anyHeld(), 2) }, (*gen).recover},
	{"confirm", func(g *gen) int { return chanWhen(g, true, 2) }, (*gen).confirmSelect},
	{"tx", func(g *gen) int { return chanWhen(g, true, 3) }, (*gen).tx},
	{"advance", func(g *gen) int { return 2 }, (*gen).smallAdvance},
	{"observe", func(g *gen) int { return 4 }, (*gen).observe},
	{"policy", func(g *gen) int { return when(len(g.policies) < 3 && !g.expiring(), 2) }, (*gen).policy},
	{"clear-policy", func(g *gen) int { return when(len(g.policies) > 0 && !g.expiring(), 1) }, (*gen).clearPolicy},
	{"user", func(g *gen) int { return when(len(g.users) < 2 && !g.expiring(), 1) }, (*gen).user},
	{"permissions", func(g *gen) int { return when(len(g.liveUsers()) > 0 && !g.expiring(), 3) }, (*gen).permissions},
	{"direct-reply-to", func(g *gen) int { return chanWhen(g, true, 1) }, (*gen).directReplyTo},
	{"closed-channel", func(g *gen) int { return when(g.anyClosedChan(), 1) }, (*gen).onClosedChannel},
	{"node-fault", func(g *gen) int { return when(g.cluster != nil && !g.expiring(), 5) }, (*gen).nodeFault},
}

// pick chooses an action by weight.
func (g *gen) pick() action {
	total := 0
	ws := make([]int, len(actions))
	for i, a := range actions {
		ws[i] = a.weight(g)
		total += ws[i]
	}
	n := g.r.IntN(total)
	for i, w := range ws {
		if n < w {
			return actions[i]
		}
		n -= w
	}
	return actions[len(actions)-1]
}

func when(ok bool, w int) int {
	if ok {
		return w
	}
	return 0
}

// chanWhen is when for an action that needs an open channel.
func chanWhen(g *gen, ok bool, w int) int { return when(ok && len(g.openChans()) > 0, w) }

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// anyChan returns an open channel, preferring the one used last.
func (g *gen) anyChan() *gchan {
	open := g.openChans()
	if len(open) == 0 {
		return nil
	}
	return open[g.r.IntN(len(open))]
}

func (g *gen) hasOpenChan(c *gconn) bool {
	for _, ch := range g.openChans() {
		if ch.conn == c {
			return true
		}
	}
	return false
}

// someQueue returns a queue, usually one no step deleted.
func (g *gen) someQueue() *gqueue {
	if c := g.consumedQueues(); len(c) > 0 && g.chance(40) {
		return oneOf(g, c...)
	}
	pick := g.pickable()
	var live []*gqueue
	for _, q := range pick {
		if !q.deleted {
			live = append(live, q)
		}
	}
	if len(live) > 0 && g.chance(90) {
		return oneOf(g, live...)
	}
	return oneOf(g, pick...)
}

// pickable returns the queues a step may name: on a cluster, not a
// classic queue whose home node crashed or is cut off, which RabbitMQ
// answers only after 60 s or more (docs/cluster.md, section 2).
func (g *gen) pickable() []*gqueue {
	if g.cluster == nil {
		return g.queues
	}
	var out []*gqueue
	for _, q := range g.queues {
		if g.cluster.reachable(q) {
			out = append(out, q)
		}
	}
	return out
}

// someExchange returns an exchange, usually one no step deleted.
func (g *gen) someExchange() *gexchange {
	if live := g.liveExchanges(); len(live) > 0 && g.chance(90) {
		return oneOf(g, live...)
	}
	return oneOf(g, g.exchanges...)
}

func (g *gen) anyHeld() bool {
	for _, ch := range g.openChans() {
		if len(g.view.held[ch.name]) > 0 {
			return true
		}
	}
	return false
}

func (g *gen) anyConsumer() bool {
	for _, ch := range g.openChans() {
		if len(g.view.consumers[ch.name]) > 0 {
			return true
		}
	}
	return false
}

func (g *gen) anyClosedChan() bool {
	for _, ch := range g.chans {
		if !g.open(ch) {
			return true
		}
	}
	return false
}

// wrongPassword is the password of a connection whose login is to be
// refused.
const wrongPassword = "wrong"

func (g *gen) openConn() {
	c := &gconn{name: g.name("c")}
	op := scenarios.Conn{Name: c.name}
	if live := g.liveUsers(); len(live) > 0 && g.chance(30) {
		u := oneOf(g, live...)
		c.user = u
		op.User, op.Password = u.name, u.password
		if g.chance(10) {
			op.Password = wrongPassword
		}
	}
	if g.cluster != nil {
		c.node = g.cluster.pickNode(g)
		op.Node = c.node
	}
	g.conns = append(g.conns, c)
	g.add(op)
}

func (g *gen) openChannel() {
	conns := g.openConns()
	if len(conns) == 0 {
		g.openConn()
		conns = g.openConns()
		if len(conns) == 0 {
			return
		}
	}
	c := conns[g.r.IntN(len(conns))]
	for _, cc := range conns {
		if !g.hasOpenChan(cc) && g.chance(80) {
			c = cc
		}
	}
	ch := &gchan{name: g.name("ch"), conn: c}
	g.chans = append(g.chans, ch)
	g.add(scenarios.OpenChannel{Conn: c.name, Name: ch.name})
}

func (g *gen) closeChannel() {
	ch := g.anyChan()
	ch.closed = true
	g.add(scenarios.Close{Name: ch.name})
}

func (g *gen) closeConn() {
	conns := g.openConns()
	c := conns[g.r.IntN(len(conns))]
	c.closed = true
	g.add(scenarios.Close{Name: c.name})
}

// onClosedChannel sends a method on a channel that is closed, as clients
// do after they missed a close: the client refuses it, or the broker
// answers it on a connection that never heard of the channel.
func (g *gen) onClosedChannel() {
	var closed []*gchan
	for _, ch := range g.chans {
		if !g.open(ch) {
			closed = append(closed, ch)
		}
	}
	ch := oneOf(g, closed...)
	switch g.r.IntN(3) {
	case 0:
		g.add(scenarios.Qos{Channel: ch.name, Count: 1})
	case 1:
		g.add(scenarios.Publish{Channel: ch.name, Key: "nowhere", Bodies: []string{g.name("m")}})
	default:
		g.add(scenarios.Settle{Method: "ack", Channel: ch.name, Tag: 1})
	}
}
