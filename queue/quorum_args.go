package queue

import (
	"math"

	"github.com/amqpsim/amqpsim/protocol"
)

// quorumArgs are the arguments a RabbitMQ 3.10.8 quorum queue accepts
// (rabbit_quorum_queue:capabilities/0, queue_arguments) with the value
// checks rabbit_amqqueue:declare_args/0 has for them, in declare_args'
// order; x-delivery-limit has no check (the broker accepts
// x-delivery-limit=lots: quorum-declare-checks.txt). The
// list is also what a redeclaration compares (quorum-redeclare.txt,
// quorum-declare-order.txt).
var quorumArgs = []argSpec{
	{"x-expires", checkTimeout(checkPositiveInt)},
	{"x-message-ttl", checkTimeout(checkNonNegInt)},
	{"x-dead-letter-exchange", nil},
	{"x-dead-letter-routing-key", checkDLRK},
	{"x-max-length", checkNonNegInt},
	{"x-max-length-bytes", checkNonNegInt},
	{"x-max-in-memory-length", checkNonNegInt},
	{"x-max-in-memory-bytes", checkNonNegInt},
	{"x-overflow", checkOverflow},
	{"x-single-active-consumer", checkBool},
	{"x-queue-type", checkQueueType},
	{"x-quorum-initial-group-size", checkPositiveInt},
	{"x-queue-leader-locator", nil},
	{"x-delivery-limit", func(any, protocol.Table) string { return "" }},
	{"x-dead-letter-strategy", checkDLXStrategy},
}

// notQuorum are the arguments of classic queues and streams a RabbitMQ
// 3.10.8 quorum queue refuses whatever their value, "invalid arg '<k>' for
// queue '<q>' in vhost '<v>' of queue type rabbit_quorum_queue"
// (quorum-declare-checks.txt; x-ha-policy, not an argument of any type,
// is ignored).
var notQuorum = []string{
	"x-max-priority", "x-queue-mode", "x-queue-version", "x-queue-master-locator",
	"x-max-age", "x-stream-max-segment-size-bytes", "x-initial-cluster-size",
}

// validateQuorum is the declaration of a quorum queue in RabbitMQ 3.10.8's
// order, as measured (quorum-declare-order.txt): the values of the
// arguments it accepts, then the arguments of other queue types, then the
// properties rabbit_quorum_queue:declare/2 checks (check_auto_delete,
// check_exclusive, check_non_durable).
func (d *declared) validateQuorum() error {
	// x-queue-leader-locator is a string; RabbitMQ's own check of its
	// value is not modelled, so validateArgs only checks its type.
	if err := d.validateArgs(quorumArgs); err != nil {
		return err
	}
	if err := d.refuse(notQuorum, "rabbit_quorum_queue"); err != nil {
		return err
	}
	return d.checkReplicatedProperties()
}

// checkReplicatedProperties refuses what quorum queues and streams cannot
// be: auto-delete, exclusive, non-durable, in that order
// (rabbit_queue_type_util:check_auto_delete, check_exclusive,
// check_non_durable).
func (d *declared) checkReplicatedProperties() error {
	for _, p := range []struct {
		bad  bool
		name string
	}{{d.opts.AutoDelete, "auto-delete"}, {d.opts.Exclusive, "exclusive-owner"}, {!d.opts.Durable, "non-durable"}} {
		if p.bad {
			return protocol.Errorf(protocol.PreconditionFailed, protocol.QueueDeclare, "invalid property '%s' for %s", p.name, d.Resource())
		}
	}
	return nil
}

// deliveryLimit reads x-delivery-limit: RabbitMQ 3.10's rabbit_quorum_queue
// takes whatever value it has (rabbit_queue_type_util:args_policy_lookup)
// and there is no default. rabbit_fifo:return_one/6 dead-letters when
// delivery_count > Limit in Erlang's term order, so a negative limit
// dead-letters at every return and a non-integer one (a binary, above
// every number) never does; either way a limit is set, which sends
// returns to the head (the 3.10 aux handler turns returns into
// re-enqueues only when delivery_limit is undefined).
func deliveryLimit(args protocol.Table) (limit int64, set bool) {
	v, ok := args["x-delivery-limit"]
	if !ok {
		return 0, false
	}
	if n, isInt := protocol.Int(v); isInt {
		return n, true
	}
	return math.MaxInt64, true
}

// withCounts returns p with the x-delivery-count header set to dc when
// hasDC, and x-acquired-count to ac when hasAC, as
// rabbit_fifo_client:add_delivery_count_header/2 adds them; p is not
// modified.
func withCounts(p *protocol.Properties, dc int64, hasDC bool, ac int64, hasAC bool) *protocol.Properties {
	var c protocol.Properties
	if p != nil {
		c = *p
	}
	c.Headers = countHeaders(c.Headers, countKey{dc: dc, hasDC: hasDC, ac: ac, hasAC: hasAC})
	return &c
}

// countHeaders returns a copy of headers with the counts of k added.
func countHeaders(headers protocol.Table, k countKey) protocol.Table {
	h := make(protocol.Table, len(headers)+2)
	for name, v := range headers {
		h[name] = v
	}
	if k.hasDC {
		h["x-delivery-count"] = k.dc
	}
	if k.hasAC {
		h["x-acquired-count"] = k.ac
	}
	return h
}

// resolveLimit is the delivery limit from the x-delivery-limit argument
// and the definition of the policy that applies (nil for none). In 3.10
// (no Rules.DefaultDeliveryLimit) the policy's delivery-limit wins when
// smaller (args_policy_lookup with min/2) and there is no default. From
// 4.0 the default is 20, and an argument and a policy combine as the
// smaller unless either is negative, then the larger; a negative result
// disables the limit (RS@v4.0.9 rabbit_quorum_queue:
// resolve_delivery_limit/2; rabbit_fifo:update_config/2 maps it to
// undefined).
func (q *quorum[T]) resolveLimit(definition protocol.Table) (limit int64, set bool) {
	if q.opts.Rules.DefaultDeliveryLimit == 0 {
		limit, set = deliveryLimit(q.opts.Args)
		if n, ok := protocol.Int(definition["delivery-limit"]); ok && (!set || n < limit) {
			limit, set = n, true
		}
		return limit, set
	}
	a, hasA := protocol.Int(q.opts.Args["x-delivery-limit"])
	p, hasP := protocol.Int(definition["delivery-limit"])
	switch {
	case hasA && hasP && (a < 0 || p < 0):
		limit = max(a, p)
	case hasA && hasP:
		limit = min(a, p)
	case hasA:
		limit = a
	case hasP:
		limit = p
	default:
		limit = q.opts.Rules.DefaultDeliveryLimit
	}
	return limit, limit >= 0
}
