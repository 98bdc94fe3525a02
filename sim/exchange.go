package sim

import (
	"fmt"
	"strconv"
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
	// the queue the default exchange last routed to, unless deleted since,
	// and routedName its name (a queue's name never changes): lookups the
	// publish path makes without the maps, or a call to the queue.
	direct     *exchange
	routed     *brokerQueue
	routedName string
}

// exchange is one exchange and the bindings it is the source of.
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
	bindings     bindingSet
	toExchanges  int // bindings whose destination is an exchange
	// direct holds a direct exchange's destinations by routing key, topic
	// a topic exchange's binding keys.
	direct map[string]*destList
	topic  *topicTrie
	// sources are the bindings to this exchange, by their source.
	sources sourceCounts
	// routeMark is the number of the last route that reached it.
	routeMark uint64
}

// destination is a binding's destination: a queue or an exchange.
type destination struct {
	q *brokerQueue
	x *exchange
}

var exchangeKinds = map[string]bool{"direct": true, "fanout": true, "topic": true, "headers": true}

func newExchange(name, kind string, o ExchangeOptions) *exchange {
	x := &exchange{name: name, kind: kind, durable: o.Durable, autoDelete: o.AutoDelete, internal: o.Internal, args: o.Args}
	switch kind {
	case "direct":
		x.direct = map[string]*destList{}
	case "topic":
		x.topic = &topicTrie{}
	}
	x.alternate, x.hasAlternate = o.Args["alternate-exchange"].(string)
	return x
}

// standardExchanges are the exchanges every vhost has.
var standardExchanges = []struct{ name, kind string }{
	{"", "direct"}, {"amq.direct", "direct"}, {"amq.fanout", "fanout"},
	{"amq.topic", "topic"}, {"amq.headers", "headers"}, {"amq.match", "headers"},
	{"amq.rabbitmq.trace", "topic"},
}

func (b *Broker) addVhost(name string) {
	if _, ok := b.vhosts[name]; ok {
		return
	}
	v := &vhost{name: name, exchanges: map[string]*exchange{}, queues: map[string]*brokerQueue{}, policies: map[string]*policy{}, opPolicies: map[string]*policy{},
		perms: map[string]*permission{}, topicPerms: map[string]map[string]*topicPermission{}}
	for _, x := range standardExchanges {
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
		// The default exchange, the most published to: small enough to
		// inline, this costs such a publish no call.
		return v.direct, nil
	}
	return v.namedExchange(name, m)
}

// namedExchange is exchange of a name that is not the default exchange's.
func (v *vhost) namedExchange(name string, m protocol.Method) (*exchange, error) {
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
// 3.10.8). Binding identity (argsIdentity) still compares exact types.
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
	if x, ok := a.(string); ok {
		return x == b.(string)
	}
	return fieldText(a) == fieldText(b)
}

// fieldText is a field value as fmt.Sprint writes it, without fmt for
// strings, booleans and integers, which bindings and headers hold most.
func fieldText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case int32:
		return strconv.FormatInt(int64(x), 10)
	case int64:
		return strconv.FormatInt(x, 10)
	case int:
		return strconv.Itoa(x)
	}
	return fmt.Sprint(v)
}
