package queue

import (
	"slices"

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
// transient message lives in memory only. After a crash every message is
// possibly delivered: it is redelivered at its next fetch, and in 4.3
// (Rules.ClassicDeliveryCount) it counts a failed delivery if it had none
// (rabbit_variable_queue:annotate_delivery_count/3: a seq_id below
// redeliver_seq_id), which a dead letter of it carries
// (classic-ttl-passes-while-home-killed.txt). The queue is a new process:
// it has no TTL timer, and drops the messages that expired while it was
// down as it starts (rabbit_amqqueue_process:init_it2 applies the
// arguments and policy, whose init_ttl runs drop_expired_msgs),
// dead-lettering them.
func (q *classic[T]) Restart(crashed bool) {
	if crashed {
		for _, m := range q.Messages() {
			m.Delivered = true
			if q.opts.Rules.ClassicDeliveryCount && m.Failures == 0 {
				m.Failures = 1
			}
		}
	}
	q.retain(func(m *Message) bool { return m.Properties != nil && m.Properties.DeliveryMode == 2 })
	q.ttlSet = false
	q.dropExpired()
}

// classicUnsupportedPolicies are, of the policy keys amqpsim models, those
// RS@v3.10.8 rabbit_classic_queue:capabilities/0 lists as unsupported: the
// stream and quorum ones; from 3.12 also the quorum memory limits.
var (
	classicUnsupportedPolicies    = []string{"max-age", "stream-max-segment-size-bytes", "delivery-limit"}
	classicUnsupportedPolicies312 = append(slices.Clip(classicUnsupportedPolicies), "max-in-memory-length", "max-in-memory-bytes")
)

// classicCaps are a classic queue's answers: it lives on its home node
// (not replicated, no leader to register with, a delete that waits for no
// other node); rabbit_amqqueue_process asks rabbit_limiter:can_send
// before each delivery and delivers at once; a durable queue confirms a
// persistent message after its write; the channel's consumer timeout
// applies but where only quorum queues have one
// (Rules.ConsumerTimeoutQuorumOnly). The declaration that timed out is
// rabbit_amqqueue's text, measured on a 4.3.6 cluster (docs/cluster.md
// section 4).
func (d *declared) classicCaps() Caps {
	c := Caps{ChannelLimited: true, ConsumerTimeout: !d.opts.Rules.ConsumerTimeoutQuorumOnly,
		declareTimedOut: declareTimedOutText("Could not declare " + d.Resource())}
	c.SingleActive, _ = d.opts.Args["x-single-active-consumer"].(bool)
	c.unsupportedPolicies = classicUnsupportedPolicies
	if d.opts.Rules.ClassicRefusesMemoryPolicies {
		c.unsupportedPolicies = classicUnsupportedPolicies312
	}
	if d.opts.Durable {
		c.LateConfirms = PersistentLate
	}
	return c
}

// Stats counts the consumers as declare-ok does.
func (q *classic[T]) Stats() Stats { return Stats{Consumers: len(q.consumers)} }
