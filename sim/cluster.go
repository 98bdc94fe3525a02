package sim

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/amqpsim/amqpsim/cluster"
	"github.com/amqpsim/amqpsim/protocol"
)

// A broker of Config.Nodes nodes is a RabbitMQ cluster: each connection is
// attached to one node (ConnectOptions.Node), each queue has a leader node
// (a classic queue's home, where its process runs; a quorum queue's or a
// stream's Raft leader, with a member on every node), and a fault stops,
// kills or cuts off nodes. What clients then see follows RabbitMQ 4.3.6 as
// measured on a real 3-node cluster (docs/cluster.md):
//
//   - StopNode: the node's connections get connection.close 320
//     CONNECTION_FORCED (ShutdownText) and are dropped without waiting for
//     close-ok; KillNode drops them without a frame. Dialling a node that
//     is down fails (ErrNodeDown), as a refused TCP connection.
//   - A classic queue whose home is down, or cut off from a client's node,
//     cancels that client's consumers (basic.cancel; the channel stays
//     open and its unacked deliveries of the queue go back to the queue,
//     their later settlement ignored); publishes routed to it are nacked
//     (never returned); queue.declare, basic.get, basic.consume and
//     queue.purge of it fail with 404 (queue.delete, not measured, deletes
//     it): at once, "... process is stopped by supervisor", when its node
//     was stopped; after QueueOperationTimeout, "... due to timeout", when
//     it crashed or is cut off (rabbit_amqqueue:with/3's retries). When
//     its node starts again, a durable queue comes back with its
//     persistent messages (all redelivered after a crash; after a stop,
//     those closing channels requeued redelivered, those remote channels
//     held not), a non-durable one is gone.
//   - A quorum queue or stream keeps serving while a majority of the
//     nodes can reach each other and its leader: losing the leader's node
//     hands leadership over at once after a stop, after LeaderElection
//     after a crash or a cut; meanwhile publishes are neither confirmed
//     nor nacked and deliveries pause. Without a majority, publishes wait
//     unconfirmed and consumers wait uncancelled until it is back;
//     basic.get, basic.consume and queue.purge fail with 541
//     INTERNAL_ERROR, which closes the connection (at once, or after a
//     timeout when the leader is on the client's own side).
//   - The metadata store (Khepri) needs a majority too: a new queue
//     declared on a node without one fails with 541 after
//     MetadataTimeout.
//   - A partition is, for each side, the other side's nodes gone without
//     their connections closing; Heal brings them back with nothing
//     closed or redelivered. RabbitMQ 4.3 has no partition handling
//     strategy (its cluster_partition_handling is ignored), and neither
//     has the simulator.
//
// A broker of one node (the default) has none of this.

// NodeState is a node's state: NodeRunning, NodeStopped or NodeKilled.
type NodeState = cluster.State

const (
	// NodeRunning is a node that runs.
	NodeRunning = cluster.Running
	// NodeStopped is a node stopped gracefully (StopNode).
	NodeStopped = cluster.Stopped
	// NodeKilled is a node that crashed (KillNode).
	NodeKilled = cluster.Killed
)

// NodeInfo describes a node of the cluster.
type NodeInfo struct {
	Number int // 1-based, as ConnectOptions.Node
	Name   string
	State  NodeState
	// Reaches are the running nodes it can reach, itself included while
	// it runs, by number.
	Reaches []int
	// Hung is set while it runs but is hung (Broker.PauseNode).
	Hung bool
}

// The cluster's timings, on the virtual clock. RabbitMQ fixes none of
// them exactly; each is within the range measured on a real 4.3.6
// cluster (docs/cluster.md).
const (
	// LeaderElection is how long a quorum queue or stream is without a
	// leader after its leader's node crashed or was cut off (measured:
	// deliveries and confirms stalled 0.37-0.44 s after a kill; a
	// graceful stop hands leadership over with no gap): package cluster's.
	LeaderElection = cluster.LeaderElection
	// HungElection is how long a quorum queue or stream led by a hung
	// node waits before a new leader is elected (measured: confirms and
	// deliveries stalled 6.2-8.3 s): package cluster's.
	HungElection = cluster.HungElection
	// QueueOperationTimeout is how long an operation on a classic queue
	// whose home crashed or is cut off waits before its 404: the channel
	// retries 2000 times, 30 ms apart (rabbit_amqqueue:with/3, 4.3.6),
	// 65-88 s as measured.
	QueueOperationTimeout = 65 * time.Second
	// MetadataTimeout is how long a metadata write (declaring a new
	// queue) waits without a majority before its 541 (30.0 s measured).
	MetadataTimeout = 30 * time.Second
)

// ErrNodeDown is the error of a Dial to a node that is not running: a
// shell refuses the TCP connection.
var ErrNodeDown = errors.New("sim: node is down")

// clusterQueue is what a queue is in a cluster: where it stands (package
// cluster: its leader, a classic queue's home that went down, an
// election), and what waits on its leader.
type clusterQueue struct {
	cluster.Queue
	// election is the timer that ends a replicated queue's leader
	// election (Electing is set while it runs).
	election *timer
	// held are the publishes waiting for the queue to be reachable from
	// their node, in order.
	held []waitingPublish
	// elections counts its leader elections, for pickLeader.
	elections uint64
	// suspects are the consumers kept since their node crashed
	// (cluster_consumers.go).
	suspects []*suspect
}

// waitingPublish is a message routed to a quorum queue or stream that its
// publisher's node could not hand to a leader with a majority.
type waitingPublish struct {
	node    int
	publish func() bool
	ch      *Channel        // the publisher; nil for the broker's own
	confirm *waitingConfirm // nil when no confirm is owed
}

// waitingConfirm is a publisher confirm waiting for the queues that hold
// its message.
type waitingConfirm struct {
	ch      *Channel
	tag     uint64
	waiting int
	nack    bool
}

// initNodes makes the cluster's nodes. Caller is Open.
func (b *Broker) initNodes() error {
	n := max(b.cfg.Nodes, 1)
	if v := b.profile.Version; n > 1 && !v.atLeast(4, 3) {
		// Earlier releases keep their metadata in Mnesia, with partition
		// handling strategies (pause_minority, autoheal) that act; none
		// of that was measured.
		return fmt.Errorf("sim: Config.Nodes: a cluster is simulated as RabbitMQ 4.3 runs one (measured on a 4.3.6 cluster), not %v", v)
	}
	if len(b.cfg.NodeNames) > 0 && len(b.cfg.NodeNames) != n {
		return fmt.Errorf("sim: Config.NodeNames has %d names for %d nodes", len(b.cfg.NodeNames), n)
	}
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("rabbit@node%d", i+1)
		if n == 1 {
			names[i] = "rabbit@localhost"
		}
		if len(b.cfg.NodeNames) > 0 {
			names[i] = b.cfg.NodeNames[i]
		}
	}
	b.topo, b.multiNode = cluster.New(names), n > 1
	return nil
}

// clustered reports whether the broker has more than one node.
func (b *Broker) clustered() bool { return b.multiNode }

// Nodes returns the cluster's nodes in number order; a broker of one node
// has one.
func (b *Broker) Nodes() []NodeInfo {
	b.mu.Lock()
	defer b.mu.unlockView()
	out := make([]NodeInfo, b.topo.Len())
	for i := range out {
		n := i + 1
		out[i] = NodeInfo{Number: n, Name: b.topo.Name(n), State: b.topo.State(n), Reaches: b.topo.Reachable(n), Hung: b.topo.Hung(n)}
	}
	return out
}

// NodeName returns the name of node n ("rabbit@node2" unless
// Config.NodeNames names it), "" for no such node.
func (b *Broker) NodeName(n int) string {
	b.mu.Lock()
	defer b.mu.unlockView()
	if b.topo.Check(n) != nil {
		return ""
	}
	return b.topo.Name(n)
}

// Node returns the number of the node the connection is attached to.
func (c *Connection) Node() int { return c.node }

// StopNode stops node n gracefully, as `rabbitmqctl stop` does: its
// connections are closed with 320 CONNECTION_FORCED (ShutdownText) and
// dropped without waiting for close-ok (Push.Drop); the quorum queues and
// streams it leads hand leadership to another node at once if a majority
// is left; its classic queues stop (see the package's cluster rules). It
// fails for an unknown node or one that is not running.
func (b *Broker) StopNode(n int) error { return b.downNode(n, NodeStopped) }

// KillNode crashes node n: its connections are dropped without a frame
// (Push.Drop); the quorum queues and streams it leads elect a new leader
// after LeaderElection if a majority is left; its classic queues are
// gone until it starts again. It fails for an unknown node or one that is
// not running.
func (b *Broker) KillNode(n int) error { return b.downNode(n, NodeKilled) }

func (b *Broker) downNode(n int, how NodeState) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.topo.Down(n, how); err != nil {
		return err
	}
	b.nodeChanged(NodeEvent{Kind: NodeDown, Node: n, State: how}, map[NodeState]string{NodeStopped: "stop", NodeKilled: "kill"}[how])
	var forced *protocol.Error
	if how == NodeStopped {
		forced = protocol.Errorf(protocol.ConnectionForced, protocol.Method{}, "%s", ShutdownText)
		b.eachQueue(func(q *brokerQueue) {
			if q.cluster.Leader == n && !q.cluster.Replicated {
				// A classic queue's ready messages come back from a
				// clean stop not redelivered, even those a nack
				// requeued (classic-nack-requeued-restart.txt, 4.3.6);
				// only what its node's closing channels requeue below
				// keeps the flag.
				for _, m := range q.Messages() {
					m.Delivered = false
				}
			}
		})
	}
	for _, c := range slices.Clone(b.conns) {
		if c.node == n {
			c.drop(forced)
		}
	}
	b.flush()
	b.eachQueue(func(q *brokerQueue) {
		if q.cluster.Leader == n && !q.cluster.Replicated {
			q.cluster.Down = how
			held := b.loseQueue(q, func(*Channel) bool { return true })
			if how == NodeStopped {
				// The queue stops with these still delivered and
				// unacked, and its store has them as never delivered:
				// they come back not redelivered, unlike the messages
				// that closing channels requeued before the queue
				// stopped (classic-home-stopped-recovers.txt,
				// classic-consumer-on-home-stopped.txt, 4.3.6).
				for _, m := range held {
					m.Delivered = false
				}
			}
		}
	})
	change := cluster.KilledNode
	if how == NodeStopped {
		change = cluster.StoppedNode
	}
	b.topologyChanged(change)
	return nil
}

// StartNode starts node n again: it rejoins the cluster; the classic
// queues it is home to recover (durable ones with their persistent
// messages, redelivered after a crash; non-durable ones are gone); quorum
// queues and streams regain their member. It fails for an unknown node or
// one that runs.
func (b *Broker) StartNode(n int) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.topo.Check(n); err != nil {
		return err
	}
	return b.startNode(n)
}

// startNode starts node n; it fails for one that runs. Caller holds the
// lock.
func (b *Broker) startNode(n int) error {
	crashed := b.topo.State(n) == NodeKilled
	if err := b.topo.Up(n); err != nil {
		return err
	}
	b.nodeChanged(NodeEvent{Kind: NodeUp, Node: n}, "start")
	b.releaseSuspects(n)
	b.startMembers(n)
	b.eachQueue(func(q *brokerQueue) {
		if q.cluster.Leader != n || q.cluster.Down == NodeRunning {
			return
		}
		q.cluster.Down = NodeRunning
		if !q.Options().Durable {
			b.deleteQueue(q)
			return
		}
		// The recovered queue is a new process reading its store: the
		// transient messages are gone, and after a crash every message
		// is marked redelivered (measured on 4.3.6, docs/cluster.md
		// section 2); after a clean stop each keeps its flag.
		q.Restart(crashed)
		q.Touch()
	})
	b.topologyChanged(cluster.StartedNode)
	return nil
}

// Partition cuts the cluster into sides that cannot reach each other: each
// group lists node numbers, and the nodes no group lists form one more
// side. It replaces the previous partition. For each side, the other
// side's nodes are down without their connections closing: classic queues
// homed across the cut cancel the side's consumers and nack its
// publishes; quorum queues and streams serve the side with a majority
// (electing a leader there after LeaderElection if theirs is across the
// cut) and make the other side wait.
func (b *Broker) Partition(groups ...[]int) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.topo.Partition(groups); err != nil {
		return err
	}
	kept := make([][]int, len(groups)) // the caller's slices may change
	for i, g := range groups {
		kept[i] = slices.Clone(g)
	}
	b.nodeChanged(NodeEvent{Kind: NodesPartitioned, Sides: kept}, "partition")
	b.cutLinks()
	b.topologyChanged(cluster.Partitioned)
	return nil
}

// Heal ends a partition: the nodes reach each other again; nothing is
// closed or redelivered, held confirms and deliveries flow, and the
// consumers cancelled at the cut stay cancelled.
func (b *Broker) Heal() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.heal()
}

// heal is Heal; caller holds the lock.
func (b *Broker) heal() {
	b.topo.Heal()
	b.nodeChanged(NodeEvent{Kind: NodesHealed}, "heal")
	b.topologyChanged(cluster.Healed)
}

// RecoverAfter ends every outage once the virtual clock has moved d: the
// nodes that are down start again, in number order (StartNode), hung ones
// run again (ResumeNode), and a partition heals (Heal). A later call
// replaces the earlier one's time. It suits fault schedules, which stop a
// node for a while.
func (b *Broker) RecoverAfter(d time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.recovery == nil {
		b.recovery = newTimer(func() {
			for n := 1; n <= b.topo.Len(); n++ {
				if !b.topo.Running(n) {
					_ = b.startNode(n) // it is down
				}
				if b.topo.Hung(n) {
					_ = b.resumeNode(n) // it is hung
				}
			}
			b.heal()
		})
	}
	b.schedule(b.recovery, b.now.Add(max(d, 0)))
}
