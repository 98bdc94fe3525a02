package sim

import (
	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/queue"
)

// streamConsume runs the checks RabbitMQ 3.10.8 makes of a basic.consume
// on a stream, in its order (stream-consume-checks.txt, stream-offsets.txt): the
// x-stream-offset value, a per-consumer prefetch, manual acks, no
// channel-wide limit, then the offsets its reader crashes on. It returns
// where the consumer starts and its 3.13 filter.
func (ch *Channel) streamConsume(q *brokerQueue, o ConsumeOptions) (queue.Offset, *queue.Filter, error) {
	v, present := o.Args["x-stream-offset"]
	from, err := queue.ParseOffset(ch.b.profile.Queue, v, present, ch.b.now, q.Resource())
	if err != nil {
		return from, nil, err
	}
	// rabbit_stream_queue:consume/3, in 3.10's texts or, from 4.0,
	// naming a "stream queue" (queue.Rules.StreamQueueTexts).
	if ch.core.Prefetch() == 0 {
		if ch.b.profile.Queue.StreamQueueTexts {
			return from, nil, protocol.Errorf(protocol.PreconditionFailed, protocol.BasicConsume, "consumer prefetch count is not set for stream %s", q.Resource())
		}
		return from, nil, protocol.Errorf(protocol.PreconditionFailed, protocol.BasicConsume, "consumer prefetch count is not set for '%s'", q.Resource())
	}
	if o.NoAck {
		by := "stream queues"
		if ch.b.profile.Queue.StreamQueueTexts {
			by = "stream"
		}
		return from, nil, protocol.Errorf(protocol.NotImplemented, protocol.BasicConsume, "automatic acknowledgement not supported by %s %s", by, q.Resource())
	}
	if limit, _ := ch.core.GlobalLimit(); limit > 0 {
		return from, nil, protocol.Errorf(protocol.NotImplemented, protocol.BasicConsume, "%s does not support global qos", q.Resource())
	}
	if from.Crashes() {
		return from, nil, from.CrashError()
	}
	var filter *queue.Filter
	if f, ok := queue.ParseFilter(o.Args); ok {
		filter = &f
	}
	return from, filter, nil
}

// holdsStream reports whether the channel holds an unacked delivery from
// a stream that still exists. Caller holds the lock.
func (ch *Channel) holdsStream() bool {
	for _, d := range ch.core.Deliveries() {
		if d.Ref.q.stream && !d.Ref.q.deleted {
			return true
		}
	}
	return false
}
