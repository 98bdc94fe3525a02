package queue

import (
	"fmt"
	"slices"

	"github.com/amqpsim/amqpsim/protocol"
)

// Caps are a queue's answers to the broker's questions about what its type
// does, as data: fixed at declare by the type, the release's rules and the
// queue's arguments, read by the broker instead of asked of the type each
// time (Queue.Caps). The broker never tests a queue's type; it reads these.
type Caps struct {
	// SingleActive: x-single-active-consumer; one consumer at a time
	// takes the deliveries.
	SingleActive bool
	// Replicated: a member on every node of a cluster, one of them its
	// Raft leader (a quorum queue, a stream), rather than one home node
	// (a classic queue): it keeps serving while a majority of the nodes
	// is reachable.
	Replicated bool
	// RegistersEnqueuers: a channel's first publish to the queue
	// registers the channel as its enqueuer with a call to its leader,
	// which the channel waits for (a quorum queue: rabbit_fifo_client;
	// measured on a 4.3.6 cluster, partition-held-register-*.txt).
	RegistersEnqueuers bool
	// DeleteWaitsForMembers: queue.delete waits for the members out of
	// its leader's reach before it is answered (a quorum queue:
	// ra:delete_cluster; partition-quorum-delete-member-cut.txt).
	DeleteWaitsForMembers bool
	// LosesCutOffSide: on a cluster, a node cut off from the queue's
	// leader and from the majority loses the queue: what its channels
	// publish to it is lost, never confirmed, and its consumers of the
	// queue at the cut read nothing more, even after the heal (a stream:
	// its publishers write to the leader's writer, which does not retry
	// them, and its readers follow their node's replica, which the cut
	// stops; measured on a 4.3.6 cluster, partition-stream.txt).
	LosesCutOffSide bool
	// ConsumerTimeout: the channel's consumer timeout applies to
	// deliveries from the queue (every type before 4.3; from 4.3 a
	// classic queue's and a stream's do not, a quorum queue times its
	// deliveries out itself: Rules.ConsumerTimeoutQuorumOnly,
	// Rules.QuorumConsumerTimeout).
	ConsumerTimeout bool
	// ChannelLimited: the queue asks the channel-wide limiter before each
	// delivery (rabbit_limiter:can_send, which only classic queues call).
	ChannelLimited bool
	// LateConfirms is which messages the queue confirms only once they
	// are safely stored: such a confirm follows the channel's other
	// confirms of the same socket read (measured on 3.10.8, 4.0.5 and
	// 4.3.6; sim/confirms.go).
	LateConfirms Confirms
	// DeliversAfterConsensus: the queue's deliveries wait for consensus,
	// so that an error later in the same read closes the channel first
	// (a quorum queue's; measured on 3.10.8, 4.0.5 and 4.3.6).
	DeliversAfterConsensus bool
	// RefusesSettlements: CheckSettle may refuse a settlement (a 3.10
	// stream's nack, reject and recover: Rules.StreamAnySettlement). The
	// other types take every one, and the broker does not ask them.
	RefusesSettlements bool
	// RaftConsumers: the queue's consumers live in its Raft state
	// machine (a quorum queue: rabbit_fifo). On a cluster a consumer
	// whose node crashed stays, suspected down, with its deliveries until
	// the node is back, and a consumer gets its deliveries through the
	// queue's member on its own node: where that member never started,
	// they are checked out to it but never delivered (measured on a 4.3.6
	// cluster: quorum-consumer-node-killed.txt,
	// partition-quorum-declared-during-cut.txt; sim's
	// cluster_consumers.go).
	RaftConsumers bool
	// StoresAMQP10: the publishing channel converts each message to AMQP
	// 1.0 sections before the queue stores it (a stream), and a header
	// value the conversion has no clause for crashes that channel
	// (Rules.ConversionCrashes).
	StoresAMQP10 bool
	// unsupportedPolicies are the policy keys the type does not support:
	// a policy that sets any of them does not apply to the queue at all,
	// and the next policy that matches may (TakesPolicy).
	unsupportedPolicies []string
	// declareTimedOut is the text of the 541 a declaration of the queue
	// gets on a cluster node without a majority, around the node's name
	// (DeclareTimedOut).
	declareTimedOut [2]string
}

// Confirms is which messages a queue confirms late (Caps.LateConfirms).
type Confirms uint8

const (
	// NoneLate: every confirm as soon as the queue took the message.
	NoneLate Confirms = iota
	// PersistentLate: a persistent message's (delivery mode 2), after
	// its write (a durable classic queue).
	PersistentLate
	// AllLate: every message's, after consensus or the writer (a quorum
	// queue, a stream).
	AllLate
)

// ConfirmsLate reports whether the queue confirms a message that is
// persistent (delivery mode 2), or not, late.
func (c Caps) ConfirmsLate(persistent bool) bool {
	return c.LateConfirms == AllLate || c.LateConfirms == PersistentLate && persistent
}

// TakesPolicy reports whether a policy with definition can apply to the
// queue: not if it sets a key the queue's type does not support, such as
// delivery-limit on a classic queue or max-length on a stream
// (rabbit_policy:matches/2 asks rabbit_queue_type:is_policy_applicable/2,
// which checks the keys against the type's unsupported_policies; measured
// on 3.10.8, 4.0.5 and 4.3.6, policy-unsupported-key.txt). Exchanges take
// every policy.
func (c Caps) TakesPolicy(definition protocol.Table) bool {
	for k := range definition {
		if slices.Contains(c.unsupportedPolicies, k) {
			return false
		}
	}
	return true
}

// DeclareTimedOut returns the text of the 541 that a declaration of the
// queue gets on cluster node node when the metadata store's write times
// out, as the type's module words it (measured on a 4.3.6 cluster,
// docs/cluster.md section 4).
func (c Caps) DeclareTimedOut(node string) string {
	return c.declareTimedOut[0] + node + c.declareTimedOut[1]
}

// declareTimedOutText is the text of a declaration that timed out, what
// comes before the node's name: "Could not declare quorum queue 'q' in
// vhost '/' on node '" and the rest.
func declareTimedOutText(before string) [2]string {
	return [2]string{before + " on node '", "' because the metadata store operation timed out"}
}

// ResourceName names queue name of vhost as RabbitMQ's error texts do.
func ResourceName(vhost, name string) string {
	return fmt.Sprintf("queue '%s' in vhost '%s'", name, vhost)
}
