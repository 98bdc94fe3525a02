package queue

import (
	"slices"

	"github.com/amqpsim/amqpsim/protocol"
)

// consumerArgs are the consumer arguments RabbitMQ knows, and the queue
// types that take each (each type's capabilities/0, consumer_arguments).
// A known argument that the queue's type does not take is refused:
// "invalid arg 'x-stream-offset' for queue 'c' in vhost '/' of queue type
// rabbit_classic_queue" (stream-consume-args.txt). Unknown arguments are
// ignored. Which are known depends on the release: 3.10.8 knows the first
// three; 3.13 adds the stream filter's (Rules.StreamFiltering), 4.0 drops
// x-cancel-on-ha-failover (Rules.NoHAFailoverArg), 4.3 adds
// x-consumer-timeout (Rules.QuorumConsumerTimeout; RS@v4.3.6
// rabbit_quorum_queue:capabilities/0).
var consumerArgs = []struct {
	key   string
	types []Type
	known func(Rules) bool
}{
	{"x-cancel-on-ha-failover", []Type{Classic}, func(r Rules) bool { return !r.NoHAFailoverArg }},
	{"x-consumer-timeout", []Type{Quorum}, func(r Rules) bool { return r.QuorumConsumerTimeout }},
	{"x-priority", []Type{Classic, Quorum}, nil},
	{"x-stream-filter", []Type{Stream}, func(r Rules) bool { return r.StreamFiltering }},
	{"x-stream-match-unfiltered", []Type{Stream}, func(r Rules) bool { return r.StreamFiltering }},
	{"x-stream-offset", []Type{Stream}, nil},
}

// checkConsumeArgs checks a basic.consume's arguments against the queue
// type t that takes them, as the release of its rules does:
// x-cancel-on-ha-failover, while known, must be a bool on a classic
// queue, x-consumer-timeout a non-negative integer on a quorum queue
// (4.3: rabbit_amqqueue:consume_args/0), and a known argument of another
// queue type is refused (the first in key order; RabbitMQ reports the
// first in the table's wire order). On a classic or quorum queue
// x-priority's value is checked before (consumerPriority), on a stream
// the refusal comes first (stream-consume-args.txt).
func (d *declared) checkConsumeArgs(t Type, args protocol.Table) error {
	r := d.opts.Rules
	if v, ok := args["x-cancel-on-ha-failover"]; ok && t == Classic && !r.NoHAFailoverArg {
		if _, isBool := v.(bool); !isBool {
			return protocol.Errorf(protocol.PreconditionFailed, protocol.BasicConsume,
				"invalid arg 'x-cancel-on-ha-failover' for %s: %s", d.Resource(), unacceptable(v))
		}
	}
	if v, ok := args["x-consumer-timeout"]; ok && t == Quorum && r.QuorumConsumerTimeout {
		if bad := checkNonNegInt(v, args); bad != "" {
			return protocol.Errorf(protocol.PreconditionFailed, protocol.BasicConsume,
				"invalid arg 'x-consumer-timeout' for %s: %s", d.Resource(), bad)
		}
	}
	for _, a := range consumerArgs {
		if a.known != nil && !a.known(r) {
			continue
		}
		if _, ok := args[a.key]; ok && !slices.Contains(a.types, t) {
			return protocol.Errorf(protocol.PreconditionFailed, protocol.BasicConsume,
				"invalid arg '%s' for %s of queue type %s", a.key, d.Resource(), t.module())
		}
	}
	return nil
}

// consumerPriority reads a consumer's x-priority, 0 when it has none, as
// classic and quorum queues do: a value that is no integer is refused
// (rabbit_amqqueue:check_int_arg formats "expected integer, got <type>"
// and the channel prints it with ~p, quotes included; checked against
// RabbitMQ 3.10.8).
func (d *declared) consumerPriority(args protocol.Table) (int, error) {
	v, ok := args["x-priority"]
	if !ok {
		return 0, nil
	}
	n, isInt := protocol.Int(v)
	if !isInt {
		return 0, protocol.Errorf(protocol.PreconditionFailed, protocol.BasicConsume,
			"invalid arg 'x-priority' for %s: \"expected integer, got %s\"", d.Resource(), protocol.TypeName(v))
	}
	return int(n), nil
}
