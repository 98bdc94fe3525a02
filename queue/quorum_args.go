package queue

import (
	"math"

	"github.com/amqpsim/amqpsim/protocol"
)

// quorumArgs are the arguments a RabbitMQ 3.10.8 quorum queue accepts
// (rabbit_quorum_queue:capabilities/0, queue_arguments) with the value
// checks rabbit_amqqueue:declare_args/0 has for them, in declare_args'
// order; x-delivery-limit and x-dead-letter-strategy have no check (the
// broker accepts x-delivery-limit=lots: quorum-declare-checks.txt). The
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
	{"x-dead-letter-strategy", func(any, protocol.Table) string { return "" }},
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

// withDeliveryCount returns p with the x-delivery-count header set to n,
// as rabbit_fifo_client:add_delivery_count_header/2 adds it in 3.10; p is
// not modified.
func withDeliveryCount(p *protocol.Properties, n int64) *protocol.Properties {
	var c protocol.Properties
	if p != nil {
		c = *p
	}
	h := make(protocol.Table, len(c.Headers)+1)
	for k, v := range c.Headers {
		h[k] = v
	}
	h["x-delivery-count"] = n
	c.Headers = h
	return &c
}
