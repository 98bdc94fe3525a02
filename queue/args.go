package queue

import (
	"fmt"
	"slices"

	"github.com/amqpsim/amqpsim/protocol"
)

// argCheck validates one queue argument the way rabbit_amqqueue:declare_args/0
// does in RabbitMQ 3.10. It returns the reason RabbitMQ prints after the colon
// in "invalid arg" (an Erlang term), or "" when the value is acceptable.
type argCheck func(v any, args protocol.Table) string

// declareArgs are the arguments RabbitMQ 3.10 checks at declaration and
// compares on redeclaration, in RabbitMQ's order. Other arguments are stored
// and ignored, as RabbitMQ ignores them. Every reason was read off RabbitMQ
// 3.10.8.
var declareArgs = []argSpec{
	{"x-expires", checkTimeout(checkPositiveInt)},
	{"x-message-ttl", checkTimeout(checkNonNegInt)},
	{"x-dead-letter-exchange", nil}, // its own text: see applyArgs
	{"x-dead-letter-routing-key", checkDLRK},
	{"x-max-length", checkNonNegInt},
	{"x-max-length-bytes", checkNonNegInt},
	{"x-max-priority", checkMaxPriority},
	{"x-overflow", checkOverflow},
	{"x-queue-mode", checkQueueMode},
	{"x-queue-version", checkQueueVersion},
	{"x-single-active-consumer", checkBool},
	{"x-queue-type", checkQueueType},
}

const maxPriority = 255

// checkQueueVersion is x-queue-version's check: an integer, 1 or 2
// (declare-queue-version.txt, RabbitMQ 3.10.8; rabbit_amqqueue:
// check_queue_version/2 at v3.13.7 and v4.0.9 alike).
func checkQueueVersion(v any, _ protocol.Table) string {
	n, bad := checkInt(v)
	if bad == "" && n != 1 && n != 2 {
		return fmt.Sprintf("\"unsupported queue version '%d'\"", n)
	}
	return bad
}

func checkInt(v any) (int64, string) {
	n, ok := protocol.Int(v)
	if !ok {
		return 0, fmt.Sprintf("\"expected integer, got %s\"", protocol.TypeName(v))
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

// MaxTimeout is the longest x-message-ttl and x-expires RabbitMQ accepts,
// in milliseconds (?MAX_EXPIRY_TIMER, ten years).
const MaxTimeout = 315360000000

// checkTimeout adds RabbitMQ's upper bound to a check of a time argument:
// above it, {value_too_large,N} (measured on RabbitMQ 3.10.8).
func checkTimeout(check argCheck) argCheck {
	return func(v any, args protocol.Table) string {
		if bad := check(v, args); bad != "" {
			return bad
		}
		if n, _ := protocol.Int(v); n > MaxTimeout {
			return fmt.Sprintf("{value_too_large,%d}", n)
		}
		return ""
	}
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

func unacceptable(v any) string { return fmt.Sprintf("{unacceptable_type,%s}", protocol.TypeName(v)) }

func checkBool(v any, _ protocol.Table) string {
	if _, ok := v.(bool); !ok {
		return unacceptable(v)
	}
	return ""
}

func checkDLRK(v any, args protocol.Table) string {
	if _, ok := v.(string); !ok {
		return unacceptable(v)
	}
	if _, ok := args["x-dead-letter-exchange"]; !ok {
		return "routing_key_but_no_dlx_defined"
	}
	return ""
}

// checkString returns a check for a string argument with a fixed set of
// values; bad formats the reason for any other string.
func checkString(allowed []string, bad func(s string) string) argCheck {
	return func(v any, _ protocol.Table) string {
		s, ok := v.(string)
		if !ok {
			return unacceptable(v)
		}
		if !slices.Contains(allowed, s) {
			return bad(s)
		}
		return ""
	}
}

var (
	checkOverflow = checkString([]string{"drop-head", "reject-publish", "reject-publish-dlx"},
		func(string) string { return "invalid_overflow" })
	// checkDLXStrategy is rabbit_amqqueue:check_dlxstrategy_arg/2
	// (RS@v3.10.8, v4.0.5; fuzz seed 9228 recorded its type refusal).
	checkDLXStrategy = checkString([]string{"at-most-once", "at-least-once"},
		func(string) string { return "invalid_dlx_strategy" })
	checkQueueMode = checkString([]string{"default", "lazy"},
		func(s string) string { return fmt.Sprintf("\"unsupported queue mode '%s'\"", s) })
	checkQueueType = checkString([]string{"classic", "quorum", "stream"},
		func(s string) string { return fmt.Sprintf("\"unsupported queue type '%s'\"", s) })
)

// declared is what every queue type keeps of its declaration.
type declared struct {
	vhost, name string
	opts        Options
	caps        Caps
}

// Name returns the queue's name.
func (d *declared) Name() string { return d.name }

// Vhost returns the queue's virtual host.
func (d *declared) Vhost() string { return d.vhost }

// Options returns the queue's declaration settings.
func (d *declared) Options() Options { return d.opts }

// Resource names the queue as RabbitMQ does in error texts.
func (d *declared) Resource() string { return ResourceName(d.vhost, d.name) }

// Caps returns the queue's answers about its type, fixed at declare.
func (d *declared) Caps() Caps { return d.caps }

// argSpec is one argument a queue type checks at declaration.
type argSpec = struct {
	key   string
	check argCheck
}

// validate checks the arguments every queue type checks, with RabbitMQ's
// texts; x-queue-mode's not where Rules.QueueModeUnchecked says so.
func (d *declared) validate() error {
	if d.opts.Rules.QueueModeUnchecked {
		return d.validateArgs(declareArgsModeUnchecked)
	}
	return d.validateArgs(declareArgs)
}

// declareArgsModeUnchecked is declareArgs without x-queue-mode's check.
var declareArgsModeUnchecked = slices.DeleteFunc(slices.Clone(declareArgs), func(a argSpec) bool { return a.key == "x-queue-mode" })

// validateArgs checks the arguments of list, in its order, with RabbitMQ's
// texts. A nil check is x-dead-letter-exchange's, which must be a string.
func (d *declared) validateArgs(list []argSpec) error {
	args := d.opts.Args
	if err := args.Validate(); err != nil {
		return protocol.Errorf(protocol.PreconditionFailed, protocol.QueueDeclare, "invalid arguments for %s: %v", d.Resource(), err)
	}
	for _, a := range list {
		v, ok := args[a.key]
		switch {
		case !ok:
		case a.check == nil:
			if _, isString := v.(string); !isString {
				return protocol.Errorf(protocol.PreconditionFailed, protocol.QueueDeclare,
					"invalid type '%s' for arg '%s' in %s", protocol.TypeName(v), a.key, d.Resource())
			}
		default:
			if bad := a.check(v, args); bad != "" {
				return protocol.Errorf(protocol.PreconditionFailed, protocol.QueueDeclare,
					"invalid arg '%s' for %s: %s", a.key, d.Resource(), bad)
			}
		}
	}
	return nil
}

// refuse fails for the first argument in keys that is set: arguments of
// other queue types, "invalid arg '<k>' for queue '<q>' in vhost '<v>' of
// queue type <module>" (RabbitMQ 3.10.8).
func (d *declared) refuse(keys []string, module string) error {
	for _, k := range keys {
		if _, ok := d.opts.Args[k]; ok {
			return protocol.Errorf(protocol.PreconditionFailed, protocol.QueueDeclare,
				"invalid arg '%s' for %s of queue type %s", k, d.Resource(), module)
		}
	}
	return nil
}

// Equivalent checks a redeclaration against the queue as declared, with
// RabbitMQ's "inequivalent arg" error for the first difference: durable,
// auto_delete, then the checked arguments. Exclusivity is checked by the
// broker, which knows connections.
func (d *declared) Equivalent(opt Options) error { return d.equivalent(opt, declareArgs) }

// equivalent is Equivalent comparing the arguments of list, in its order.
func (d *declared) equivalent(opt Options, list []argSpec) error {
	cur := d.opts
	if opt.Durable != cur.Durable {
		return d.inequivalent("durable", fmt.Sprintf("'%t'", opt.Durable), fmt.Sprintf("'%t'", cur.Durable))
	}
	if opt.AutoDelete != cur.AutoDelete {
		return d.inequivalent("auto_delete", fmt.Sprintf("'%t'", opt.AutoDelete), fmt.Sprintf("'%t'", cur.AutoDelete))
	}
	for _, a := range list {
		if a.key == "x-queue-type" {
			// RabbitMQ takes a missing x-queue-type as "classic" here
			// (quorum-declare-order.txt: a classic queue redeclared without it
			// is fine), but a classic queue declared without one and
			// redeclared as quorum is "received the value 'quorum' of
			// type 'longstr' but current is none" (quorum-redeclare.txt).
			nt, ot := queueTypeText(opt.Args), queueTypeText(cur.Args)
			if nt == "classic" && ot == "classic" {
				continue
			}
			if cur.Rules.ImplicitQueueType {
				if nt != ot {
					return d.inequivalent(a.key, "'"+nt+"'", "'"+ot+"'")
				}
				continue
			}
		}
		nv, nok := opt.Args[a.key]
		ov, ook := cur.Args[a.key]
		switch {
		case !nok && !ook:
		case nok && ook:
			// Both set: RabbitMQ prints the bare values ("received '10' but
			// current is '5'"); "the value ... of type" is only for a side
			// that is missing (checked against RabbitMQ 3.10.8).
			if !sameValue(nv, ov) {
				return d.inequivalent(a.key, fmt.Sprintf("'%v'", nv), fmt.Sprintf("'%v'", ov))
			}
		default:
			return d.inequivalent(a.key, describeArg(nv, nok), describeArg(ov, ook))
		}
	}
	return nil
}

// queueTypeText is x-queue-type as a redeclaration compares and prints
// it: none (or "") is the default, classic; a value that is not a string
// is printed as it is ("received '7' but current is 'stream'", measured
// on 3.10.8, 4.0.5 and 4.3.6: declare-inequivalent-queue-type.txt).
func queueTypeText(args protocol.Table) string {
	switch v := args["x-queue-type"].(type) {
	case nil:
		return "classic"
	case string:
		if v == "" {
			return "classic"
		}
		return v
	default:
		return fmt.Sprint(v)
	}
}

func (d *declared) inequivalent(key, received, current string) error {
	return protocol.Errorf(protocol.PreconditionFailed, protocol.QueueDeclare,
		"inequivalent arg '%s' for %s: received %s but current is %s", key, d.Resource(), received, current)
}

func describeArg(v any, present bool) string {
	if !present {
		return "none"
	}
	return fmt.Sprintf("the value '%v' of type '%s'", v, protocol.TypeName(v))
}

// sameValue compares two argument values as RabbitMQ 3.10.8 does: integers
// of any width are equal when their values are (5 as 'I', 'l' or 'b'); other
// values need the same AMQP type and value.
func sameValue(a, b any) bool {
	if n, ok := protocol.Int(a); ok {
		m, ok := protocol.Int(b)
		return ok && n == m
	}
	return protocol.TypeName(a) == protocol.TypeName(b) && fmt.Sprint(a) == fmt.Sprint(b)
}
