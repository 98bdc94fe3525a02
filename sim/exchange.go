package sim

import (
	"fmt"
	"strings"

	"github.com/amqpsim/amqpsim/protocol"
)

// vhost is one virtual host: its exchanges, queues and policies.
type vhost struct {
	name        string
	description string
	tags        []string
	exchanges   map[string]*exchange
	queues      map[string]*brokerQueue
	policies    map[string]*policy
	opPolicies  map[string]*policy // operator policies
	// perms are the users' permissions by user name; topicPerms their
	// topic permissions by user and exchange name.
	perms      map[string]*permission
	topicPerms map[string]map[string]*topicPermission
	// direct is the default exchange, which is never deleted; routed is
	// the queue the default exchange last routed to, unless deleted since:
	// lookups the publish path makes without the maps.
	direct *exchange
	routed *brokerQueue
}

// exchange is one exchange and the bindings it is the source of, in
// binding order.
type exchange struct {
	name       string
	kind       string
	durable    bool
	autoDelete bool
	internal   bool
	args       Table
	// alternate is the alternate-exchange argument: where a message goes
	// that the exchange's bindings route nowhere.
	alternate    string
	hasAlternate bool
	bindings     []binding
	toExchanges  int                      // bindings whose destination is an exchange
	direct       map[string][]destination // direct exchanges: routing key → destinations
}

// destination is a binding's destination: a queue or an exchange.
type destination struct {
	q *brokerQueue
	x *exchange
}

type binding struct {
	dest destination
	key  string
	args Table
}

var exchangeKinds = map[string]bool{"direct": true, "fanout": true, "topic": true, "headers": true}

func newExchange(name, kind string, o ExchangeOptions) *exchange {
	x := &exchange{name: name, kind: kind, durable: o.Durable, autoDelete: o.AutoDelete, internal: o.Internal,
		args: o.Args, direct: map[string][]destination{}}
	x.alternate, x.hasAlternate = o.Args["alternate-exchange"].(string)
	return x
}

func (b *Broker) addVhost(name string) {
	if _, ok := b.vhosts[name]; ok {
		return
	}
	v := &vhost{name: name, exchanges: map[string]*exchange{}, queues: map[string]*brokerQueue{}, policies: map[string]*policy{}, opPolicies: map[string]*policy{},
		perms: map[string]*permission{}, topicPerms: map[string]map[string]*topicPermission{}}
	for _, x := range []struct{ name, kind string }{
		{"", "direct"}, {"amq.direct", "direct"}, {"amq.fanout", "fanout"},
		{"amq.topic", "topic"}, {"amq.headers", "headers"}, {"amq.match", "headers"},
		{"amq.rabbitmq.trace", "topic"},
	} {
		v.exchanges[x.name] = newExchange(x.name, x.kind, ExchangeOptions{Durable: true, Internal: x.name == "amq.rabbitmq.trace"})
	}
	v.direct = v.exchanges[""]
	b.vhosts[name] = v
}

func exchangeResource(name, vhost string) string {
	return fmt.Sprintf("exchange '%s' in vhost '%s'", name, vhost)
}

func (v *vhost) exchange(name string, m protocol.Method) (*exchange, error) {
	if name == "" {
		return v.direct, nil
	}
	x, ok := v.exchanges[name]
	if !ok {
		return nil, protocol.Errorf(protocol.NotFound, m, "no %s", exchangeResource(name, v.name))
	}
	return x, nil
}

func (x *exchange) equivalent(v *vhost, kind string, o ExchangeOptions) error {
	ineq := func(key, received, current string) error {
		return protocol.Errorf(protocol.PreconditionFailed, protocol.ExchangeDeclare,
			"inequivalent arg '%s' for %s: received %s but current is %s", key, exchangeResource(x.name, v.name), received, current)
	}
	quote := func(v any) string { return fmt.Sprintf("'%v'", v) }
	switch {
	case kind != x.kind:
		return ineq("type", quote(kind), quote(x.kind))
	case o.Durable != x.durable:
		return ineq("durable", quote(o.Durable), quote(x.durable))
	case o.AutoDelete != x.autoDelete:
		return ineq("auto_delete", quote(o.AutoDelete), quote(x.autoDelete))
	case o.Internal != x.internal:
		return ineq("internal", quote(o.Internal), quote(x.internal))
	}
	// rabbit_exchange:assert_equivalence compares alternate-exchange alone
	// among the arguments, as queues compare theirs.
	nv, nok := o.Args["alternate-exchange"]
	ov, ook := x.args["alternate-exchange"]
	switch {
	case nok && ook && !sameFieldValue(nv, ov):
		return ineq("alternate-exchange", quote(nv), quote(ov))
	case nok != ook:
		return ineq("alternate-exchange", describeArg(nv, nok), describeArg(ov, ook))
	}
	return nil
}

// describeArg renders one side of an inequivalent argument as RabbitMQ
// does when the other side is missing.
func describeArg(v any, present bool) string {
	if !present {
		return "none"
	}
	return fmt.Sprintf("the value '%v' of type '%s'", v, protocol.TypeName(v))
}

func (x *exchange) bind(d destination, key string, args Table) {
	for _, bd := range x.bindings {
		if bd.dest == d && bd.key == key && sameTable(bd.args, args) {
			return
		}
	}
	x.bindings = append(x.bindings, binding{dest: d, key: key, args: args})
	if d.x != nil {
		x.toExchanges++
	}
	if x.kind == "direct" {
		x.direct[key] = append(x.direct[key], d)
	}
}

func (x *exchange) unbind(d destination, key string, args Table) (removed bool) {
	for i, bd := range x.bindings {
		if bd.dest == d && bd.key == key && sameTable(bd.args, args) {
			x.bindings = append(x.bindings[:i], x.bindings[i+1:]...)
			if d.x != nil {
				x.toExchanges--
			}
			if x.kind == "direct" {
				x.direct[key] = removeDestination(x.direct[key], d)
				if len(x.direct[key]) == 0 {
					delete(x.direct, key)
				}
			}
			return true
		}
	}
	return false
}

// unbindAll drops every binding to d (its queue or exchange was deleted)
// and reports whether there was one.
func (x *exchange) unbindAll(d destination) bool {
	kept := x.bindings[:0]
	for _, bd := range x.bindings {
		if bd.dest != d {
			kept = append(kept, bd)
		} else if d.x != nil {
			x.toExchanges--
		}
	}
	dropped := len(kept) < len(x.bindings)
	clear(x.bindings[len(kept):])
	x.bindings = kept
	for k, ds := range x.direct {
		if ds = removeDestination(ds, d); len(ds) == 0 {
			delete(x.direct, k)
		} else {
			x.direct[k] = ds
		}
	}
	return dropped
}

func removeDestination(ds []destination, d destination) []destination {
	for i, e := range ds {
		if e == d {
			return append(ds[:i], ds[i+1:]...)
		}
	}
	return ds
}

// match appends the destinations x's bindings give a message with routing
// key key; the default exchange reaches the queue named key.
func (x *exchange) match(v *vhost, key string, headers Table, out []destination) []destination {
	switch {
	case x.name == "":
		if q, ok := v.queues[key]; ok {
			out = append(out, destination{q: q})
		}
	case x.kind == "direct":
		out = append(out, x.direct[key]...)
	case x.kind == "fanout":
		for _, bd := range x.bindings {
			out = append(out, bd.dest)
		}
	case x.kind == "topic":
		for _, bd := range x.bindings {
			if topicMatch(bd.key, key) {
				out = append(out, bd.dest)
			}
		}
	case x.kind == "headers":
		for _, bd := range x.bindings {
			if headersMatch(bd.args, headers) {
				out = append(out, bd.dest)
			}
		}
	}
	return out
}

// topicMatch reports whether a routing key matches a binding pattern: words
// are separated by dots, "*" matches exactly one word and "#" zero or more.
func topicMatch(pattern, key string) bool {
	return matchWords(topicWords(pattern), topicWords(key))
}

// topicWords splits a key or pattern into words. An empty string has no
// words at all (RabbitMQ's split_topic_key(<<>>) is []), while "." is two
// empty words: "*" does not match the empty key, "*.*" matches "."
// (checked against RabbitMQ 3.10.8). strings.Split gave "" one empty word.
func topicWords(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ".")
}

func matchWords(p, k []string) bool {
	for len(p) > 0 {
		switch p[0] {
		case "#":
			for len(p) > 0 && p[0] == "#" {
				p = p[1:]
			}
			if len(p) == 0 {
				return true
			}
			for i := 0; i <= len(k); i++ {
				if matchWords(p, k[i:]) {
					return true
				}
			}
			return false
		case "*":
			if len(k) == 0 {
				return false
			}
		default:
			if len(k) == 0 || k[0] != p[0] {
				return false
			}
		}
		p, k = p[1:], k[1:]
	}
	return len(k) == 0
}

// headersMatch applies a headers-exchange binding: x-match "all" (the
// default) or "any"; "all-with-x" and "any-with-x" also compare x- keys.
// A binding value of type void matches the key's mere presence.
func headersMatch(binding, headers Table) bool {
	mode, _ := binding["x-match"].(string)
	if mode == "" {
		mode = "all"
	}
	withX := strings.HasSuffix(mode, "-with-x")
	any := strings.HasPrefix(mode, "any")
	for k, want := range binding {
		if strings.HasPrefix(k, "x-") && (!withX || k == "x-match") {
			continue
		}
		got, present := headers[k]
		ok := present && (want == nil || sameClassValue(want, got))
		if any && ok {
			return true
		}
		if !any && !ok {
			return false
		}
	}
	return !any
}

// sameClassValue compares a header with a binding value as the headers
// exchange does: types of one rabbit_misc:type_class (every integer type is
// one class, float and double another) with equal values match, so a
// signedint 1 binding matches a long 1 header (checked against RabbitMQ
// 3.10.8). Binding identity (sameTable) still compares exact types.
func sameClassValue(a, b any) bool {
	if n, ok := protocol.Int(a); ok {
		m, ok := protocol.Int(b)
		return ok && n == m
	}
	if x, ok := asFloat(a); ok {
		y, ok := asFloat(b)
		return ok && x == y
	}
	return sameFieldValue(a, b)
}

func asFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case float32:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

func sameFieldValue(a, b any) bool {
	if protocol.TypeName(a) != protocol.TypeName(b) {
		return false
	}
	return fmt.Sprint(a) == fmt.Sprint(b)
}

func sameTable(a, b Table) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w, ok := b[k]
		if !ok || !sameFieldValue(v, w) {
			return false
		}
	}
	return true
}
