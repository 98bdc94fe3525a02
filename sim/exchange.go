package sim

import (
	"fmt"
	"strings"

	"github.com/amqpsim/amqpsim/protocol"
)

// vhost is one virtual host: its exchanges and queues.
type vhost struct {
	name      string
	exchanges map[string]*exchange
	queues    map[string]*brokerQueue
}

// exchange is one exchange and its bindings, in binding order.
type exchange struct {
	name       string
	kind       string
	durable    bool
	autoDelete bool
	internal   bool
	args       Table
	bindings   []binding
	direct     map[string][]*brokerQueue // direct exchanges: routing key → queues
}

type binding struct {
	queue *brokerQueue
	key   string
	args  Table
}

var exchangeKinds = map[string]bool{"direct": true, "fanout": true, "topic": true, "headers": true}

func (b *Broker) addVhost(name string) {
	if _, ok := b.vhosts[name]; ok {
		return
	}
	v := &vhost{name: name, exchanges: map[string]*exchange{}, queues: map[string]*brokerQueue{}}
	for _, x := range []struct{ name, kind string }{
		{"", "direct"}, {"amq.direct", "direct"}, {"amq.fanout", "fanout"},
		{"amq.topic", "topic"}, {"amq.headers", "headers"}, {"amq.match", "headers"},
		{"amq.rabbitmq.trace", "topic"},
	} {
		v.exchanges[x.name] = &exchange{name: x.name, kind: x.kind, durable: true, internal: x.name == "amq.rabbitmq.trace", direct: map[string][]*brokerQueue{}}
	}
	b.vhosts[name] = v
}

func exchangeResource(name, vhost string) string {
	return fmt.Sprintf("exchange '%s' in vhost '%s'", name, vhost)
}

func (v *vhost) exchange(name string, m protocol.Method) (*exchange, error) {
	x, ok := v.exchanges[name]
	if !ok {
		return nil, protocol.Errorf(protocol.NotFound, m, "no %s", exchangeResource(name, v.name))
	}
	return x, nil
}

func (x *exchange) equivalent(v *vhost, kind string, o ExchangeOptions) error {
	ineq := func(key, received, current string) error {
		return protocol.Errorf(protocol.PreconditionFailed, protocol.ExchangeDeclare,
			"inequivalent arg '%s' for %s: received '%s' but current is '%s'", key, exchangeResource(x.name, v.name), received, current)
	}
	switch {
	case kind != x.kind:
		return ineq("type", kind, x.kind)
	case o.Durable != x.durable:
		return ineq("durable", fmt.Sprint(o.Durable), fmt.Sprint(x.durable))
	case o.AutoDelete != x.autoDelete:
		return ineq("auto_delete", fmt.Sprint(o.AutoDelete), fmt.Sprint(x.autoDelete))
	case o.Internal != x.internal:
		return ineq("internal", fmt.Sprint(o.Internal), fmt.Sprint(x.internal))
	}
	return nil
}

func (x *exchange) bind(q *brokerQueue, key string, args Table) {
	for _, bd := range x.bindings {
		if bd.queue == q && bd.key == key && sameTable(bd.args, args) {
			return
		}
	}
	x.bindings = append(x.bindings, binding{queue: q, key: key, args: args})
	if x.kind == "direct" {
		x.direct[key] = append(x.direct[key], q)
	}
}

func (x *exchange) unbind(q *brokerQueue, key string, args Table) {
	for i, bd := range x.bindings {
		if bd.queue == q && bd.key == key && sameTable(bd.args, args) {
			x.bindings = append(x.bindings[:i], x.bindings[i+1:]...)
			break
		}
	}
	if x.kind == "direct" {
		x.direct[key] = removeQueue(x.direct[key], q)
		if len(x.direct[key]) == 0 {
			delete(x.direct, key)
		}
	}
}

// unbindQueue drops every binding of q (the queue was deleted).
func (x *exchange) unbindQueue(q *brokerQueue) {
	kept := x.bindings[:0]
	for _, bd := range x.bindings {
		if bd.queue != q {
			kept = append(kept, bd)
		}
	}
	clear(x.bindings[len(kept):])
	x.bindings = kept
	for k, qs := range x.direct {
		if qs = removeQueue(qs, q); len(qs) == 0 {
			delete(x.direct, k)
		} else {
			x.direct[k] = qs
		}
	}
}

func removeQueue(qs []*brokerQueue, q *brokerQueue) []*brokerQueue {
	for i, e := range qs {
		if e == q {
			return append(qs[:i], qs[i+1:]...)
		}
	}
	return qs
}

// route appends the queues a message with routing key key reaches to out,
// each once (out may hold queues from other keys already), in binding
// order.
func (v *vhost) route(x *exchange, key string, headers Table, out []*brokerQueue) []*brokerQueue {
	add := func(q *brokerQueue) {
		for _, e := range out {
			if e == q {
				return
			}
		}
		out = append(out, q)
	}
	switch {
	case x.name == "":
		if q, ok := v.queues[key]; ok {
			add(q)
		}
	case x.kind == "direct":
		for _, q := range x.direct[key] {
			add(q)
		}
	case x.kind == "fanout":
		for _, bd := range x.bindings {
			add(bd.queue)
		}
	case x.kind == "topic":
		for _, bd := range x.bindings {
			if topicMatch(bd.key, key) {
				add(bd.queue)
			}
		}
	case x.kind == "headers":
		for _, bd := range x.bindings {
			if headersMatch(bd.args, headers) {
				add(bd.queue)
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
