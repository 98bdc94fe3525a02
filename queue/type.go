package queue

import (
	"time"

	"github.com/amqpsim/amqpsim/protocol"
)

// Type is a queue type: what x-queue-type names.
type Type uint8

const (
	// Classic is RabbitMQ's default type (rabbit_classic_queue): a queue
	// declared without x-queue-type is one.
	Classic Type = iota
	// Quorum is x-queue-type=quorum (rabbit_quorum_queue).
	Quorum
	// Stream is x-queue-type=stream (rabbit_stream_queue).
	Stream
)

// String returns the type's name as x-queue-type and the management API
// write it: "classic", "quorum" or "stream".
func (t Type) String() string {
	switch t {
	case Quorum:
		return "quorum"
	case Stream:
		return "stream"
	}
	return "classic"
}

// module is the Erlang module RabbitMQ's texts name the type by.
func (t Type) module() string { return "rabbit_" + t.String() + "_queue" }

// parseType reads x-queue-type: the type it names, Classic when it is
// missing or empty; ok is false for a type amqpsim does not simulate.
func parseType(args protocol.Table) (t Type, name string, ok bool) {
	name, _ = args["x-queue-type"].(string)
	switch name {
	case "", "classic":
		return Classic, name, true
	case "quorum":
		return Quorum, name, true
	case "stream":
		return Stream, name, true
	}
	return Classic, name, false
}

// CheckServerNamed is rabbit_amqqueue:is_server_named_allowed/1, which
// rabbit_channel asks before anything else when queue.declare names no
// queue: a quorum queue's and a stream's capabilities say no
// (quorum-server-named-and-consumer-args.txt, stream-declare-checks.txt).
// args are the declaration's arguments.
func CheckServerNamed(args protocol.Table) error {
	if t, _, ok := parseType(args); ok && t != Classic {
		return protocol.Errorf(protocol.PreconditionFailed, protocol.QueueDeclare,
			"Cannot declare a server-named queue for type %s", t.module())
	}
	return nil
}

// DefinitionArgs returns the arguments of a queue in a definitions file
// with the type its "type" field names: the import adds x-queue-type
// from it when the arguments have none, except for the default type,
// which a queue without the argument is (so that an export imports back
// unchanged). args may be nil, and may be modified.
func DefinitionArgs(args protocol.Table, typeName string) protocol.Table {
	if _, ok := args["x-queue-type"]; ok || typeName == "" || typeName == Classic.String() {
		return args
	}
	if args == nil {
		args = protocol.Table{}
	}
	args["x-queue-type"] = typeName
	return args
}

// ConsumeRequest is a basic.consume as a queue's type checks it
// (Queue.Consume).
type ConsumeRequest struct {
	Args      protocol.Table
	NoAck     bool
	Exclusive bool
	// Prefetch is the channel's prefetch for new consumers (basic.qos
	// global=false) and GlobalLimit its channel-wide limit, 0 for none.
	Prefetch, GlobalLimit int
	// Now is the broker's wall-clock time, the base of a stream
	// consumer's x-stream-offset interval.
	Now time.Time
}

// Stats are what the management API shows of a queue beyond its ready,
// unacked and byte counts.
type Stats struct {
	// Consumers counts the consumers as the management API does: what
	// queue.declare-ok reports, except for a stream, whose declare-ok
	// says 0 and whose registered consumers are counted here.
	Consumers int
	// Stream describes a stream's log; nil for the other types.
	Stream *StreamStats
	// TimedOut counts the deliveries the queue timed out
	// (Rules.QuorumConsumerTimeout) that their channels still hold: not
	// in Unacked, as in RabbitMQ's messages_unacknowledged.
	TimedOut int
}

// globalQosRefused is rabbit_quorum_queue:consume/3's and
// rabbit_stream_queue:consume/3's refusal of a channel-wide limit
// (3.10: {error, global_qos_not_supported_for_queue_type}), a hard error
// (quorum-errors.txt, stream-consume-checks.txt).
func (d *declared) globalQosRefused() error {
	return protocol.Errorf(protocol.NotImplemented, protocol.BasicConsume, "%s does not support global qos", d.Resource())
}
