package queue

import (
	"github.com/amqpsim/amqpsim/consumer"
	"github.com/amqpsim/amqpsim/protocol"
)

// What the AMQP methods mean for a quorum queue (rabbit_quorum_queue),
// where the broker asks the queue.

// Type returns Quorum.
func (q *quorum[T]) Type() Type { return Quorum }

// Consume checks x-priority's value, then the other consumer arguments,
// then refuses a channel-wide limit as rabbit_quorum_queue:consume/3 does,
// and registers the consumer; a quorum queue ignores the exclusive flag
// (AdmitConsumer).
func (q *quorum[T]) Consume(r ConsumeRequest, join func(priority int) *consumer.Consumer[T]) error {
	priority, err := q.consumerPriority(r.Args)
	if err != nil {
		return err
	}
	if err := q.checkConsumeArgs(Quorum, r.Args); err != nil {
		return err
	}
	if r.GlobalLimit > 0 {
		return q.globalQosRefused()
	}
	if err := q.AdmitConsumer(r.Exclusive); err != nil {
		return err
	}
	c := join(priority)
	q.AddConsumer(c)
	if _, ok := r.Args["x-consumer-timeout"]; ok {
		q.startTiming(c, r.Args)
	}
	return nil
}

// sacGetRefused is basic.get's refusal on a single active consumer queue,
// rabbit_quorum_queue:dequeue/4 in 3.10 (quorum-single-active-consumer.txt);
// the 4.2+ channel prints the type's short alias, a binary, with ~p
// (Rules.SACGetNamesQueueType).
func (q *quorum[T]) sacGetRefused() error {
	kind := Quorum.String()
	if q.opts.Rules.SACGetNamesQueueType {
		kind = "<<\"" + kind + "\">>"
	}
	return protocol.Errorf(protocol.ResourceLocked, protocol.BasicGet,
		"cannot obtain access to locked %s. basic.get operations are not supported by %s queues with single active consumer", q.Resource(), kind)
}

// CheckSettle takes every settlement.
func (q *quorum[T]) CheckSettle(protocol.Method, Settlement) error { return nil }

// CheckDelete refuses both flags, if-unused first, with a hard error, as
// rabbit_quorum_queue:delete/4 does (quorum-errors.txt); delete-ok counts
// the ready messages.
func (q *quorum[T]) CheckDelete(ifUnused, ifEmpty bool) (int, error) {
	for _, f := range []struct {
		set  bool
		name string
	}{{ifUnused, "if-unused"}, {ifEmpty, "if-empty"}} {
		if f.set {
			return 0, protocol.Errorf(protocol.NotImplemented, protocol.QueueDelete,
				"cannot delete %s. queue.delete operations with %s flag set are not supported by quorum queues", q.Resource(), f.name)
		}
	}
	return q.Ready(), nil
}

// Delete drops the ready messages.
func (q *quorum[T]) Delete() { q.Purge() }

// Restart keeps every message, persistent or not: they are all in the
// queue's Raft log.
func (q *quorum[T]) Restart(bool) {}

// quorumCaps are a quorum queue's answers: a member on every node and a
// Raft leader, which rabbit_fifo_client registers a channel's first
// publish with (partition-held-register-*.txt) and queue.delete waits for
// the members out of its reach for (ra:delete_cluster,
// partition-quorum-delete-member-cut.txt); it confirms after consensus
// and rabbit_fifo delivers once the enqueue is committed; it never asks
// the channel's limiter (only rabbit_amqqueue_process calls
// rabbit_limiter:can_send), though the channel still counts its acks
// against the volume (quorum-global-qos-after-consume.txt); the channel's
// consumer timeout applies before 4.3, whose quorum queue times its
// deliveries out itself (Rules.QuorumConsumerTimeout, quorum_timeout.go).
// The declaration that timed out is rabbit_quorum_queue's text, measured
// on a 4.3.6 cluster (docs/cluster.md section 4).
func (d *declared) quorumCaps() Caps {
	c := Caps{Replicated: true, RegistersEnqueuers: true, DeleteWaitsForMembers: true,
		ConsumerTimeout: !d.opts.Rules.QuorumConsumerTimeout, LateConfirms: AllLate, DeliversAfterConsensus: true, RaftConsumers: true,
		declareTimedOut: declareTimedOutText("Could not declare quorum " + d.Resource()),
		// Of the keys amqpsim models, rabbit_quorum_queue's
		// unsupported_policies has the stream ones (RS@v3.10.8, v4.3.5).
		unsupportedPolicies: []string{"max-age", "stream-max-segment-size-bytes"}}
	c.SingleActive, _ = d.opts.Args["x-single-active-consumer"].(bool)
	return c
}

// Stats counts the consumers as declare-ok does, and the timed-out
// deliveries channels still hold.
func (q *quorum[T]) Stats() Stats { return Stats{Consumers: q.ConsumerCount(), TimedOut: len(q.stale)} }
