package queue

import (
	"slices"

	"github.com/amqpsim/amqpsim/protocol"
)

// consumerArgs are the consumer arguments RabbitMQ 3.10.8 knows, and the
// queue types that take each (each type's capabilities/0,
// consumer_arguments). A known argument that the queue's type does not
// take is refused: "invalid arg 'x-stream-offset' for queue 'c' in vhost
// '/' of queue type rabbit_classic_queue" (stream-consume-args.txt).
// Unknown arguments are ignored, 3.13's x-stream-filter among them.
var consumerArgs = []struct {
	key   string
	types []string
}{
	{"x-cancel-on-ha-failover", []string{"classic"}},
	{"x-priority", []string{"classic", "quorum"}},
	{"x-stream-offset", []string{"stream"}},
}

// typeModules are the Erlang modules RabbitMQ's texts name queue types by.
var typeModules = map[string]string{
	"classic": "rabbit_classic_queue",
	"quorum":  "rabbit_quorum_queue",
	"stream":  "rabbit_stream_queue",
}

// CheckConsumeArgs checks a basic.consume's arguments against the queue
// type that takes them, as RabbitMQ 3.10.8 does: x-cancel-on-ha-failover
// must be a bool on a classic queue, and a known argument of another queue
// type is refused (the first in key order; RabbitMQ reports the first in
// the table's wire order). The caller checks x-priority's value; on a
// classic or quorum queue that comes first, on a stream the refusal does
// (stream-consume-args.txt).
func CheckConsumeArgs(queueType, resource string, args protocol.Table) error {
	if v, ok := args["x-cancel-on-ha-failover"]; ok && queueType == "classic" {
		if _, isBool := v.(bool); !isBool {
			return protocol.Errorf(protocol.PreconditionFailed, protocol.BasicConsume,
				"invalid arg 'x-cancel-on-ha-failover' for %s: %s", resource, unacceptable(v))
		}
	}
	for _, a := range consumerArgs {
		if _, ok := args[a.key]; ok && !slices.Contains(a.types, queueType) {
			return protocol.Errorf(protocol.PreconditionFailed, protocol.BasicConsume,
				"invalid arg '%s' for %s of queue type %s", a.key, resource, typeModules[queueType])
		}
	}
	return nil
}
