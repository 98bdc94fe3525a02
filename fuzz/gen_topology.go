package fuzz

import (
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/scenarios"
)

// chanOrOpen returns an open channel, opening one when there is none.
func (g *gen) chanOrOpen() *gchan {
	if ch := g.anyChan(); ch != nil {
		return ch
	}
	g.openChannel()
	return g.anyChan()
}

// ms is a duration in milliseconds, as TTL arguments take it.
func ms(d time.Duration) int32 { return int32(d / time.Millisecond) }

// ttl returns a timer length: a multiple of the scenario's unit.
func (g *gen) ttl() time.Duration { return g.unit * time.Duration(1+g.r.IntN(2)) }

func (g *gen) declareQueue() {
	ch := g.chanOrOpen()
	if ch == nil {
		return
	}
	q := &gqueue{name: g.name("q"), args: map[string]any{}, node: ch.conn.node}
	switch n := g.r.IntN(100 - 15*b2i(g.cluster != nil)); { // no streams on a cluster
	case n < 55:
		q.kind = "classic"
		q.durable = g.chance(50)
		q.exclusive = g.chance(10)
		q.autoDelete = g.chance(10)
		g.classicArgs(q)
	case n < 85:
		q.kind = "quorum"
		q.durable = !g.chance(3)
		q.args["x-queue-type"] = "quorum"
		g.quorumArgs(q)
	default:
		q.kind = "stream"
		q.durable = !g.chance(3)
		q.args["x-queue-type"] = "stream"
		g.streamArgs(q)
	}
	if g.cluster != nil {
		// An exclusive queue whose owner's node crashed stays, and
		// RabbitMQ answers a look at it after 60 s (issue 29): none on a
		// cluster.
		q.exclusive = false
	}
	if q.exclusive {
		q.owner = ch.conn
	}
	if g.chance(3) {
		g.wrongArgType(q.args)
	}
	g.queues = append(g.queues, q)
	if e, ok := q.args["x-expires"].(int32); ok {
		g.timer(time.Duration(e) * time.Millisecond)
	}
	g.add(scenarios.DeclareQueue{Channel: ch.name, Queue: q.name, Durable: q.durable, Exclusive: q.exclusive,
		AutoDelete: q.autoDelete, NoWait: g.chance(3), Args: protocol.Table(maps.Clone(q.args))})
	q.declared = true
	if g.view.refused() { // never declared: later steps use other queues
		q.deleted = true
	}
}

func (g *gen) classicArgs(q *gqueue) {
	if g.chance(15) {
		q.args["x-message-ttl"] = ms(g.ttl())
		if g.chance(10) {
			q.args["x-message-ttl"] = int32(0)
		}
	}
	if g.chance(6) {
		q.args["x-expires"] = ms(g.unit * time.Duration(2+g.r.IntN(2)))
	}
	g.lengthArgs(q, "drop-head", "reject-publish", "reject-publish-dlx")
	g.deadLetterArgs(q)
	if g.chance(10) {
		q.args["x-max-priority"] = int32(1 + g.r.IntN(10))
	}
	if g.chance(8) {
		q.args["x-single-active-consumer"] = true
	}
	if g.chance(3) {
		q.args["x-queue-version"] = int32(1 + g.r.IntN(2))
	}
}

func (g *gen) quorumArgs(q *gqueue) {
	if g.chance(25) {
		q.args["x-delivery-limit"] = int32(g.r.IntN(4))
	}
	if g.chance(10) {
		q.args["x-message-ttl"] = ms(g.ttl())
	}
	// No x-expires: a quorum queue's expiry is decided at rabbit_fifo's
	// tick, every 5 s from the queue's start on the broker's clock, a
	// phase the simulator's clock does not share once steps have taken
	// real time; quorum-expires.txt covers it.
	g.lengthArgs(q, "drop-head", "reject-publish")
	g.deadLetterArgs(q)
	if _, ok := q.args["x-dead-letter-exchange"]; ok && g.chance(30) {
		q.args["x-dead-letter-strategy"] = "at-least-once"
		if g.chance(80) {
			q.args["x-overflow"] = "reject-publish"
		}
	}
	if g.chance(10) {
		q.args["x-single-active-consumer"] = true
	}
	if g.chance(5) {
		q.args["x-max-priority"] = int32(1 + g.r.IntN(5))
	}
}

// streamArgs sets a stream's retention. Its segments are never smaller
// than 500 bytes: on RabbitMQ 3.10.8 a stream whose every chunk rolls a
// segment, with a byte limit, queues a retention evaluation per chunk, and
// one of them finds its segment deleted by the last and crashes
// osiris_retention ({bad_return_value,missing_file}), and with it the
// osiris application and the whole node (seen here with 230-byte segments
// and a 77-byte limit).
func (g *gen) streamArgs(q *gqueue) {
	if g.chance(20) {
		q.args["x-max-length-bytes"] = int32(400 + g.r.IntN(2000))
	}
	if g.chance(20) {
		q.args["x-stream-max-segment-size-bytes"] = int32(500 + g.r.IntN(1500))
	}
	if g.chance(5) {
		q.args["x-max-age"] = oneOf(g, "1h", "1D", "10s0", "-1h")
	}
}

func (g *gen) lengthArgs(q *gqueue, overflows ...string) {
	if g.chance(15) {
		q.args["x-max-length"] = int32(g.r.IntN(4))
		if g.chance(50) {
			q.args["x-overflow"] = oneOf(g, overflows...)
		}
	}
	if g.chance(4) {
		q.args["x-max-length-bytes"] = int32(2 + g.r.IntN(12))
	}
}

// deadLetterArgs sets a dead-letter exchange: the default one with a
// queue's name for key, or an exchange (one that exists, or a name that
// may be declared later, or never).
func (g *gen) deadLetterArgs(q *gqueue) {
	if !g.chance(20) {
		return
	}
	if g.chance(50) {
		q.args["x-dead-letter-exchange"] = ""
		q.args["x-dead-letter-routing-key"] = g.someQueueName()
		return
	}
	q.args["x-dead-letter-exchange"] = g.someExchangeName()
	if g.chance(30) {
		q.args["x-dead-letter-routing-key"] = oneOf(g, "a", "b", "dead")
	}
}

// wrongArgType replaces an argument's value with one of a type RabbitMQ
// refuses, or adds an argument it does not know.
func (g *gen) wrongArgType(args map[string]any) {
	keys := slices.Sorted(maps.Keys(args))
	if len(keys) == 0 || g.chance(30) {
		args["x-unknown-arg"] = "ignored"
		return
	}
	k := oneOf(g, keys...)
	switch args[k].(type) {
	case string:
		args[k] = int32(7)
	default:
		args[k] = "seven"
	}
}

// someQueueName returns a queue's name, usually one declared.
func (g *gen) someQueueName() string {
	if len(g.pickable()) > 0 && g.chance(85) {
		return g.someQueue().name
	}
	return "q" + string(rune('1'+g.r.IntN(5)))
}

// someExchangeName returns an exchange's name, usually one declared.
func (g *gen) someExchangeName() string {
	if len(g.exchanges) > 0 && g.chance(80) {
		return g.someExchange().name
	}
	return "x" + string(rune('1'+g.r.IntN(4)))
}

func (g *gen) redeclareQueue() {
	ch := g.anyChan()
	q := g.someQueue()
	op := scenarios.DeclareQueue{Channel: ch.name, Queue: q.name, Durable: q.durable, Exclusive: q.exclusive,
		AutoDelete: q.autoDelete, Args: protocol.Table(maps.Clone(q.args))}
	switch n := g.r.IntN(100); {
	case n < 45: // the same declaration: declare-ok with the counts
	case n < 70:
		op = scenarios.DeclareQueue{Channel: ch.name, Queue: q.name, Passive: true}
		if g.chance(15) {
			op.Queue = "missing"
		}
	case n < 85:
		if len(op.Args) > 0 && g.chance(60) {
			g.wrongArgType(op.Args)
		} else {
			op.Args["x-max-length"] = int32(7)
		}
	default:
		op.Durable = !op.Durable
	}
	if e, ok := q.args["x-expires"].(int32); ok {
		g.timer(time.Duration(e) * time.Millisecond)
	}
	g.add(op)
}

var exchangeKinds = []string{"direct", "fanout", "topic", "headers"}

func (g *gen) declareExchange() {
	ch := g.chanOrOpen()
	if ch == nil {
		return
	}
	x := &gexchange{name: g.name("x"), kind: oneOf(g, exchangeKinds...), args: map[string]any{}}
	if g.chance(20) {
		x.args["alternate-exchange"] = g.someExchangeName()
	}
	op := scenarios.DeclareExchange{Channel: ch.name, Exchange: x.name, Kind: x.kind, Durable: g.chance(50),
		AutoDelete: g.chance(8), Internal: g.chance(4)}
	switch {
	case g.chance(2):
		op.Kind = "x-unknown" // 503: an unknown exchange type closes the connection
	case g.chance(2):
		op.Exchange = "amq.custom" // 403: the amq. prefix is reserved
	}
	g.exchanges = append(g.exchanges, x)
	op.Args = protocol.Table(maps.Clone(x.args))
	g.add(op)
	if g.view.refused() {
		x.deleted = true
	}
}

// bindQueue binds a queue to an exchange with a key (or headers
// arguments) that its kind can match.
func (g *gen) bindQueue() {
	ch := g.chanOrOpen()
	if ch == nil || len(g.pickable()) == 0 {
		return
	}
	if len(g.exchanges) == 0 {
		g.declareExchange()
		if len(g.exchanges) == 0 {
			return
		}
	}
	q, x := g.someQueue(), g.someExchange()
	key, args := g.bindingKey(x, q.name)
	g.add(scenarios.Bind{Channel: ch.name, Queue: q.name, Exchange: x.name, Key: key, Args: args})
}

func (g *gen) bindExchange() {
	ch := g.anyChan()
	dst, src := g.someExchange(), g.someExchange()
	key, args := g.bindingKey(src, dst.name)
	g.add(scenarios.ExchangeBind{Channel: ch.name, Destination: dst.name, Source: src.name, Key: key, Args: args})
}

func (g *gen) unbind() {
	ch := g.anyChan()
	q, x := g.someQueue(), g.someExchange()
	key := q.name
	if len(x.keys) > 0 {
		key = oneOf(g, x.keys...)
	}
	g.add(scenarios.Unbind{Channel: ch.name, Queue: q.name, Exchange: x.name, Key: key})
}

// bindingKey returns a binding's key and arguments for an exchange's kind,
// and remembers the key for publishes.
func (g *gen) bindingKey(x *gexchange, dest string) (string, protocol.Table) {
	var key string
	var args protocol.Table
	switch x.kind {
	case "topic":
		key = g.topicPattern()
	case "headers":
		args = g.headersMatch()
	case "fanout":
		key = oneOf(g, "", "ignored")
	default:
		key = oneOf(g, dest, "a", "b", "info", "")
	}
	if !slices.Contains(x.keys, key) {
		x.keys = append(x.keys, key)
	}
	return key, args
}

func (g *gen) deleteQueue() {
	ch := g.anyChan()
	q := g.someQueue()
	op := scenarios.DeleteQueue{Channel: ch.name, Queue: q.name, IfUnused: g.chance(20), IfEmpty: g.chance(20)}
	if q.kind != "classic" && g.chance(80) {
		op.IfUnused = false // 540 for a quorum queue or a stream, which closes the connection
	}
	was := q.deleted
	if !op.IfUnused && !op.IfEmpty {
		q.deleted = true
	}
	if !g.add(op) {
		q.deleted = was // add left the step out (seed 15358)
	}
}

func (g *gen) deleteExchange() {
	ch := g.anyChan()
	x := g.someExchange()
	op := scenarios.DeleteExchange{Channel: ch.name, Exchange: x.name, IfUnused: g.chance(30)}
	if !op.IfUnused {
		x.deleted = true
	}
	g.add(op)
}

func (g *gen) purge() {
	g.add(scenarios.Purge{Channel: g.anyChan().name, Queue: g.someQueue().name})
}

// policy sets a policy (or an operator policy) on one queue or all the
// scenario's queues, with the definitions applications use.
func (g *gen) policy() {
	p := &gpolicy{name: g.name("p"), pattern: "^q", def: map[string]any{}, operator: g.chance(20)}
	if len(g.pickable()) > 0 && g.chance(60) {
		p.pattern = "^" + g.someQueue().name + "$"
	}
	// No expires: a policy is set by rabbitmqctl, which takes seconds, at
	// a moment of them the simulator cannot know (adminStep).
	keys := []string{"message-ttl", "max-length", "dead-letter-exchange", "delivery-limit", "overflow", "max-length-bytes"}
	if p.operator {
		keys = []string{"message-ttl", "max-length", "max-length-bytes"}
	}
	if g.ccSent { // quorumByteLimit
		keys = slices.DeleteFunc(keys, func(k string) bool { return k == "max-length-bytes" })
	}
	for range 1 + g.r.IntN(2) {
		switch k := oneOf(g, keys...); k {
		case "message-ttl":
			p.def[k] = ms(g.ttl())
		case "max-length":
			p.def[k] = int32(g.r.IntN(4))
		case "max-length-bytes":
			p.def[k] = int32(2 + g.r.IntN(20))
		case "delivery-limit":
			p.def[k] = int32(g.r.IntN(3))
		case "overflow":
			p.def[k] = oneOf(g, "drop-head", "reject-publish")
		case "dead-letter-exchange":
			p.def[k] = ""
			p.def["dead-letter-routing-key"] = g.someQueueName()
		}
	}
	if len(p.def) == 0 {
		p.def["max-length"] = int32(2)
	}
	p.priority = g.policyPriority(p.operator)
	g.policies = append(g.policies, p)
	applyTo := oneOf(g, "", "queues", "queues", "all")
	def := protocol.Table(maps.Clone(p.def))
	if p.operator {
		g.add(scenarios.SetOperatorPolicy{Name: p.name, Pattern: p.pattern, ApplyTo: applyTo, Priority: p.priority, Definition: def})
		return
	}
	g.add(scenarios.SetPolicy{Name: p.name, Pattern: p.pattern, ApplyTo: applyTo, Priority: p.priority, Definition: def})
}

// policyPriority returns a priority no earlier policy of the kind has:
// of two policies of one priority that match a queue, RabbitMQ applies
// either, by its table's hash order (sim.Policy: measured on 3.10.8;
// seed 5177 recorded one on 3.10.8 and raced on 4.0.5 and 4.3.6).
func (g *gen) policyPriority(operator bool) int {
	for {
		n := g.r.IntN(3 + len(g.policies))
		if !slices.ContainsFunc(g.policies, func(p *gpolicy) bool { return p.operator == operator && p.priority == n }) {
			return n
		}
	}
}

// policyQueue returns the one queue a policy's pattern names (^q1$), or
// nil for a pattern that matches more.
func (g *gen) policyQueue(p *gpolicy) *gqueue {
	for _, q := range g.queues {
		if p.pattern == "^"+q.name+"$" {
			return q
		}
	}
	return nil
}

func (g *gen) clearPolicy() {
	i := g.r.IntN(len(g.policies))
	p := g.policies[i]
	g.policies = slices.Delete(g.policies, i, i+1)
	if p.operator {
		g.add(scenarios.ClearOperatorPolicy{Name: p.name})
		return
	}
	g.add(scenarios.ClearPolicy{Name: p.name})
}

// queueTTLs returns every message TTL that may apply to q's messages: its
// argument's and those of the policies that may match it.
func (g *gen) queueTTLs(q *gqueue) []time.Duration {
	var out []time.Duration
	if t, ok := q.args["x-message-ttl"].(int32); ok && t > 0 {
		out = append(out, time.Duration(t)*time.Millisecond)
	}
	for _, p := range g.policies {
		if t, ok := p.def["message-ttl"].(int32); ok && strings.HasPrefix(q.name, strings.TrimSuffix(strings.TrimPrefix(p.pattern, "^"), "$")) {
			out = append(out, time.Duration(t)*time.Millisecond)
		}
	}
	return out
}

// queueExpiries returns the queue-expiry timers that may apply to q.
func (g *gen) queueExpiries(q *gqueue) []time.Duration {
	var out []time.Duration
	if t, ok := q.args["x-expires"].(int32); ok {
		out = append(out, time.Duration(t)*time.Millisecond)
	}
	for _, p := range g.policies {
		if t, ok := p.def["expires"].(int32); ok && g.policyQueue(p) == q {
			out = append(out, time.Duration(t)*time.Millisecond)
		}
	}
	return out
}

func (g *gen) liveUsers() []*guser {
	var out []*guser
	for _, u := range g.users {
		if !u.deleted {
			out = append(out, u)
		}
	}
	return out
}

func (g *gen) user() {
	u := &guser{name: g.name("u"), password: "secret"}
	g.users = append(g.users, u)
	var tags []string
	if g.chance(30) {
		tags = []string{oneOf(g, "management", "monitoring", "administrator", "impersonator")}
	}
	g.add(scenarios.AddUser{Name: u.name, Password: u.password, Tags: tags})
	if g.chance(70) {
		g.add(scenarios.SetPermissions{User: u.name, Configure: ".*", Write: ".*", Read: ".*"})
	}
}

var permissionPatterns = []string{".*", "", "^q", "^x", "^q1$", "^(q1|x1)$", "^amq\\.default$"}

func (g *gen) permissions() {
	u := oneOf(g, g.liveUsers()...)
	switch n := g.r.IntN(100); {
	case n < 60:
		g.add(scenarios.SetPermissions{User: u.name, Configure: oneOf(g, permissionPatterns...),
			Write: oneOf(g, permissionPatterns...), Read: oneOf(g, permissionPatterns...)})
	case n < 75:
		g.add(scenarios.ClearPermissions{User: u.name})
	case n < 88 && len(g.exchanges) > 0:
		g.add(scenarios.SetTopicPermissions{User: u.name, Exchange: g.someExchange().name,
			Write: oneOf(g, "^a", ".*", "^$"), Read: oneOf(g, "^a", ".*")})
	case n < 90:
		g.add(scenarios.SetUserTags{Name: u.name, Tags: []string{oneOf(g, "impersonator", "management")}})
	default:
		u.deleted = true
		g.add(scenarios.DeleteUser{Name: u.name})
	}
}
