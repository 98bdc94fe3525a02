package queue

import (
	"fmt"
	"slices"

	"github.com/amqpsim/amqpsim/protocol"
)

// argCheck validates one queue argument the way rabbit_amqqueue:declare_args/0
// does in RabbitMQ 3.10. It returns the Erlang term RabbitMQ prints after the
// colon in "invalid arg", or "" when the value is acceptable.
type argCheck func(v any, args protocol.Table) string

// declareArgs are the arguments RabbitMQ 3.10 checks at declaration and
// compares on redeclaration, in RabbitMQ's order. Other arguments are stored
// and ignored, as RabbitMQ ignores them.
var declareArgs = []struct {
	key   string
	check argCheck
}{
	{"x-expires", checkPositiveInt},
	{"x-message-ttl", checkNonNegInt},
	{"x-dead-letter-exchange", checkString},
	{"x-dead-letter-routing-key", checkDLRK},
	{"x-max-length", checkNonNegInt},
	{"x-max-length-bytes", checkNonNegInt},
	{"x-max-in-memory-length", checkNonNegInt},
	{"x-max-in-memory-bytes", checkNonNegInt},
	{"x-max-priority", checkMaxPriority},
	{"x-overflow", checkOneOf("drop-head", "reject-publish", "reject-publish-dlx")},
	{"x-queue-mode", checkOneOf("default", "lazy")},
	{"x-single-active-consumer", checkBool},
	{"x-queue-type", checkOneOf("classic", "quorum", "stream")},
	{"x-quorum-initial-group-size", checkPositiveInt},
	{"x-max-age", checkString},
	{"x-stream-max-segment-size-bytes", checkNonNegInt},
	{"x-initial-cluster-size", checkPositiveInt},
	{"x-queue-leader-locator", checkOneOf("client-local", "balanced")},
}

// notYet are arguments RabbitMQ accepts that amqpsim does not model yet. It
// refuses them with 540 NOT_IMPLEMENTED rather than silently ignoring them.
var notYet = []string{
	"x-expires", "x-message-ttl", "x-dead-letter-exchange", "x-dead-letter-routing-key",
	"x-max-length", "x-max-length-bytes",
}

const maxPriority = 255

func checkInt(v any) (int64, string) {
	n, ok := protocol.Int(v)
	if !ok {
		return 0, fmt.Sprintf("{unacceptable_type,%s}", protocol.TypeName(v))
	}
	return n, ""
}

func checkNonNegInt(v any, _ protocol.Table) string {
	n, bad := checkInt(v)
	if bad == "" && n < 0 {
		return fmt.Sprintf("{value_negative,%d}", n)
	}
	return bad
}

func checkPositiveInt(v any, _ protocol.Table) string {
	n, bad := checkInt(v)
	switch {
	case bad != "":
		return bad
	case n == 0:
		return "{value_zero,0}"
	case n < 0:
		return fmt.Sprintf("{value_negative,%d}", n)
	}
	return ""
}

func checkMaxPriority(v any, args protocol.Table) string {
	if bad := checkNonNegInt(v, args); bad != "" {
		return bad
	}
	if n, _ := protocol.Int(v); n > maxPriority {
		return fmt.Sprintf("{max_value_exceeded,%d}", n)
	}
	return ""
}

func checkBool(v any, _ protocol.Table) string {
	if _, ok := v.(bool); !ok {
		return fmt.Sprintf("{unacceptable_type,%s}", protocol.TypeName(v))
	}
	return ""
}

func checkString(v any, _ protocol.Table) string {
	if _, ok := v.(string); !ok {
		return fmt.Sprintf("{unacceptable_type,%s}", protocol.TypeName(v))
	}
	return ""
}

func checkDLRK(v any, args protocol.Table) string {
	if bad := checkString(v, args); bad != "" {
		return bad
	}
	if _, ok := args["x-dead-letter-exchange"]; !ok {
		return "{missing_dead_letter_exchange}"
	}
	return ""
}

func checkOneOf(allowed ...string) argCheck {
	return func(v any, _ protocol.Table) string {
		s, ok := v.(string)
		if !ok {
			return fmt.Sprintf("{unacceptable_type,%s}", protocol.TypeName(v))
		}
		if !slices.Contains(allowed, s) {
			return fmt.Sprintf("{invalid_value,<<\"%s\">>}", s)
		}
		return ""
	}
}

func (q *Queue) applyArgs() error {
	if err := q.Args.Validate(); err != nil {
		return protocol.Errorf(protocol.PreconditionFailed, protocol.QueueDeclare, "invalid arguments for %s: %v", q.Resource(), err)
	}
	for _, a := range declareArgs {
		v, ok := q.Args[a.key]
		if !ok {
			continue
		}
		if bad := a.check(v, q.Args); bad != "" {
			return protocol.Errorf(protocol.PreconditionFailed, protocol.QueueDeclare, "invalid arg '%s' for %s: %s", a.key, q.Resource(), bad)
		}
	}
	for _, k := range notYet {
		if _, ok := q.Args[k]; ok {
			return protocol.Errorf(protocol.NotImplemented, protocol.QueueDeclare, "amqpsim does not implement the queue argument '%s' yet", k)
		}
	}
	if t, ok := q.Args["x-queue-type"].(string); ok && t != "classic" {
		return protocol.Errorf(protocol.NotImplemented, protocol.QueueDeclare, "amqpsim simulates classic queues only, not x-queue-type '%s'", t)
	}
	if v, ok := q.Args["x-max-priority"]; ok {
		n, _ := protocol.Int(v)
		q.maxPriority = int(n)
	}
	q.singleActive, _ = q.Args["x-single-active-consumer"].(bool)
	return nil
}

// Equivalent checks a redeclaration against the queue as declared, with
// RabbitMQ's "inequivalent arg" error for the first difference: durable,
// auto_delete, then the checked arguments. Exclusivity is checked by the
// broker, which knows connections.
func (q *Queue) Equivalent(opt Options) error {
	if opt.Durable != q.Durable {
		return q.inequivalent("durable", fmt.Sprintf("'%t'", opt.Durable), fmt.Sprintf("'%t'", q.Durable))
	}
	if opt.AutoDelete != q.AutoDelete {
		return q.inequivalent("auto_delete", fmt.Sprintf("'%t'", opt.AutoDelete), fmt.Sprintf("'%t'", q.AutoDelete))
	}
	for _, a := range declareArgs {
		nv, nok := opt.Args[a.key]
		ov, ook := q.Args[a.key]
		if nok == ook && (!nok || sameValue(nv, ov)) {
			continue
		}
		return q.inequivalent(a.key, describeArg(nv, nok), describeArg(ov, ook))
	}
	return nil
}

func (q *Queue) inequivalent(key, received, current string) error {
	return protocol.Errorf(protocol.PreconditionFailed, protocol.QueueDeclare,
		"inequivalent arg '%s' for %s: received %s but current is %s", key, q.Resource(), received, current)
}

func describeArg(v any, present bool) string {
	if !present {
		return "none"
	}
	return fmt.Sprintf("the value '%v' of type '%s'", v, protocol.TypeName(v))
}

// sameValue compares two argument values as RabbitMQ compares {Type, Value}
// pairs: the AMQP type must match too.
func sameValue(a, b any) bool {
	if protocol.TypeName(a) != protocol.TypeName(b) {
		return false
	}
	switch x := a.(type) {
	case []byte:
		return string(x) == string(b.([]byte))
	case []any, protocol.Table:
		return fmt.Sprint(a) == fmt.Sprint(b)
	}
	if n, ok := protocol.Int(a); ok {
		m, _ := protocol.Int(b)
		return n == m
	}
	return a == b
}
