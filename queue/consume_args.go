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
// x-cancel-on-ha-failover (Rules.NoHAFailoverArg).
var consumerArgs = []struct {
	key   string
	types []string
	known func(Rules) bool
}{
	{"x-cancel-on-ha-failover", []string{"classic"}, func(r Rules) bool { return !r.NoHAFailoverArg }},
	{"x-priority", []string{"classic", "quorum"}, nil},
	{"x-stream-filter", []string{"stream"}, func(r Rules) bool { return r.StreamFiltering }},
	{"x-stream-match-unfiltered", []string{"stream"}, func(r Rules) bool { return r.StreamFiltering }},
	{"x-stream-offset", []string{"stream"}, nil},
}

// typeModules are the Erlang modules RabbitMQ's texts name queue types by.
var typeModules = map[string]string{
	"classic": "rabbit_classic_queue",
	"quorum":  "rabbit_quorum_queue",
	"stream":  "rabbit_stream_queue",
}

// CheckConsumeArgs checks a basic.consume's arguments against the queue
// type that takes them, as the release of r does: x-cancel-on-ha-failover,
// while known, must be a bool on a classic queue, and a known argument of
// another queue type is refused (the first in key order; RabbitMQ reports
// the first in the table's wire order). The caller checks x-priority's
// value; on a classic or quorum queue that comes first, on a stream the
// refusal does (stream-consume-args.txt).
func CheckConsumeArgs(r Rules, queueType, resource string, args protocol.Table) error {
	if v, ok := args["x-cancel-on-ha-failover"]; ok && queueType == "classic" && !r.NoHAFailoverArg {
		if _, isBool := v.(bool); !isBool {
			return protocol.Errorf(protocol.PreconditionFailed, protocol.BasicConsume,
				"invalid arg 'x-cancel-on-ha-failover' for %s: %s", resource, unacceptable(v))
		}
	}
	for _, a := range consumerArgs {
		if a.known != nil && !a.known(r) {
			continue
		}
		if _, ok := args[a.key]; ok && !slices.Contains(a.types, queueType) {
			return protocol.Errorf(protocol.PreconditionFailed, protocol.BasicConsume,
				"invalid arg '%s' for %s of queue type %s", a.key, resource, typeModules[queueType])
		}
	}
	return nil
}
