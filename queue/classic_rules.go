package queue

import (
	"fmt"
	"github.com/amqpsim/amqpsim/consumer"
	"github.com/amqpsim/amqpsim/protocol"
)

// What the AMQP methods mean for a classic queue (rabbit_classic_queue
// with rabbit_amqqueue_process), where the broker asks the queue.

// Type returns Classic.
func (q *classic[T]) Type() Type { return Classic }

// Consume checks x-priority's value, then the other consumer arguments,
// then whether the consumer may join (AdmitConsumer), and registers it.
func (q *classic[T]) Consume(r ConsumeRequest, join func(priority int) *consumer.Consumer[T]) error {
	priority, err := q.consumerPriority(r.Args)
	if err != nil {
		return err
	}
	if err := q.checkConsumeArgs(Classic, r.Args); err != nil {
		return err
	}
	if err := q.AdmitConsumer(r.Exclusive); err != nil {
		return err
	}
	q.AddConsumer(join(priority))
	return nil
}

// CheckSettle takes every settlement.
func (q *classic[T]) CheckSettle(protocol.Method, Settlement) error { return nil }

// CheckDelete is rabbit_amqqueue:delete/4's checks: if-empty before
// if-unused, unacked messages making a queue neither used nor non-empty;
// delete-ok counts the ready messages.
func (q *classic[T]) CheckDelete(ifUnused, ifEmpty bool) (int, error) {
	return q.checkDelete(ifUnused, ifEmpty, q.readyCount, len(q.consumers))
}

// checkDelete is queue.delete's if-empty and if-unused checks of a queue
// with ready messages and consumers.
func (d *declared) checkDelete(ifUnused, ifEmpty bool, ready, consumers int) (int, error) {
	if ifEmpty && ready > 0 {
		return 0, protocol.Errorf(protocol.PreconditionFailed, protocol.QueueDelete, "%s not empty", d.Resource())
	}
	if ifUnused && consumers > 0 {
		return 0, protocol.Errorf(protocol.PreconditionFailed, protocol.QueueDelete, "%s in use", d.Resource())
	}
	return ready, nil
}

// Delete drops the ready messages.
func (q *classic[T]) Delete() { q.Purge() }

// Restart keeps only the persistent messages (delivery mode 2): a
// transient message lives in memory only.
func (q *classic[T]) Restart() {
	q.retain(func(m *Message) bool { return m.Properties != nil && m.Properties.DeliveryMode == 2 })
}

// HasConsumerTimeout reports true but where only quorum queues have a
// consumer timeout (Rules.ConsumerTimeoutQuorumOnly).
func (q *classic[T]) HasConsumerTimeout() bool { return !q.opts.Rules.ConsumerTimeoutQuorumOnly }

// ConfirmsLate reports whether a persistent message goes to a durable
// queue's store before its confirm.
func (q *classic[T]) ConfirmsLate(persistent bool) bool { return persistent && q.opts.Durable }

// DeliversAfterConsensus reports false: a classic queue delivers at once.
func (q *classic[T]) DeliversAfterConsensus() bool { return false }

// ChannelLimited reports true: rabbit_amqqueue_process asks
// rabbit_limiter:can_send before each delivery.
func (q *classic[T]) ChannelLimited() bool { return true }

// Stats counts the consumers as declare-ok does.
func (q *classic[T]) Stats() Stats { return Stats{Consumers: len(q.consumers)} }

// Replicated reports false: a classic queue lives on its home node.
func (q *classic[T]) Replicated() bool { return false }

// RegistersEnqueuers reports false: a classic queue has no leader to register with.
func (q *classic[T]) RegistersEnqueuers() bool { return false }

// DeleteWaitsForMembers reports false: queue.delete does not wait for other nodes.
func (q *classic[T]) DeleteWaitsForMembers() bool { return false }

// RaftConsumers reports false: a classic queue's process monitors its consumers' channels and takes their deliveries back when they go (measured on a 4.3.6 cluster: kill-node-resets-connections.txt).
func (q *classic[T]) RaftConsumers() bool { return false }

// DeclareTimedOut is rabbit_amqqueue's text, measured on a 4.3.6 cluster (docs/cluster.md section 4).
func (q *classic[T]) DeclareTimedOut(node string) string {
	return fmt.Sprintf("Could not declare %s on node '%s' because the metadata store operation timed out", q.Resource(), node)
}
