package sim

import (
	"errors"
	"fmt"
	"slices"
	"time"

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

// NodeState is a node's state.
type NodeState uint8

const (
	// NodeRunning is a node that runs.
	NodeRunning NodeState = iota
	// NodeStopped is a node stopped gracefully (StopNode).
	NodeStopped
	// NodeKilled is a node that crashed (KillNode).
	NodeKilled
)

// String returns "running", "stopped" or "killed".
func (s NodeState) String() string {
	switch s {
	case NodeStopped:
		return "stopped"
	case NodeKilled:
		return "killed"
	}
	return "running"
}

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
	// graceful stop hands leadership over with no gap).
	LeaderElection = 400 * time.Millisecond
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

// ErrPending is returned by a method RabbitMQ answers only later (see the
// cluster rules above), and by every method of its channel meanwhile: the
// channel waits in a call to another node, as RabbitMQ's channel process
// does. The call ends at a timeout, which pushes its error (a
// channel.close or connection.close) or nacks what it held, or earlier
// when the cluster answers it; either way the channel then pushes
// Push.Resumed, and the methods that returned ErrPending can be called
// again, in order: the pending one then succeeds, unless the channel
// closed.
var ErrPending = errors.New("sim: no answer yet (the channel waits in a call to another node)")

// node is one node of the cluster.
type node struct {
	name  string
	state NodeState
	// side is the node's side of a partition: nodes on different sides
	// cannot reach each other.
	side int
	// paused: it runs but is hung (PauseNode).
	paused bool
}

// clusterQueue is what a queue is in a cluster: where it leads, and what
// waits on its leader.
type clusterQueue struct {
	// leader is the number of the node that leads it (a classic queue's
	// home).
	leader int
	// down is why a classic queue's process is gone (its home stopped or
	// crashed): NodeRunning when it runs.
	down NodeState
	// election is the timer that ends a quorum queue's leader election;
	// electing is set while it runs.
	election *timer
	electing bool
	// elections counts its leader elections, for pickLeader.
	elections uint64
	// held are the publishes waiting for the queue to be reachable from
	// their node, in order.
	held []waitingPublish
	// suspects are the consumers kept since their node crashed, and
	// absent the nodes (bits 1 << n) whose member of the queue never
	// started (cluster_consumers.go).
	suspects []*suspect
	absent   uint64
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
	b.nodes = make([]node, n)
	for i := range b.nodes {
		name := fmt.Sprintf("rabbit@node%d", i+1)
		if n == 1 {
			name = "rabbit@localhost"
		}
		if len(b.cfg.NodeNames) > 0 {
			name = b.cfg.NodeNames[i]
		}
		b.nodes[i] = node{name: name}
	}
	return nil
}

// clustered reports whether the broker has more than one node.
func (b *Broker) clustered() bool { return len(b.nodes) > 1 }

// nodeAt returns node number n, or an error naming the valid numbers.
func (b *Broker) nodeAt(n int) (*node, error) {
	if n < 1 || n > len(b.nodes) {
		return nil, fmt.Errorf("sim: no node %d (the cluster has nodes 1 to %d)", n, len(b.nodes))
	}
	return &b.nodes[n-1], nil
}

// running reports whether node n runs.
func (b *Broker) running(n int) bool { return b.nodes[n-1].state == NodeRunning }

// reaches reports whether node from can reach node to: both run, on the
// same side of every partition.
func (b *Broker) reaches(from, to int) bool {
	return b.running(from) && b.running(to) && b.nodes[from-1].side == b.nodes[to-1].side
}

// reachable returns the nodes node from reaches, itself included.
func (b *Broker) reachable(from int) []int {
	var out []int
	for n := 1; n <= len(b.nodes); n++ {
		if b.reaches(from, n) {
			out = append(out, n)
		}
	}
	return out
}

// majority reports whether node from reaches a majority of the cluster.
func (b *Broker) majority(from int) bool { return 2*len(b.reachable(from)) > len(b.nodes) }

// majoritySide returns the nodes of the side that holds a majority, nil
// when none does.
func (b *Broker) majoritySide() []int {
	for n := 1; n <= len(b.nodes); n++ {
		if side := b.reachable(n); 2*len(side) > len(b.nodes) {
			return side
		}
	}
	return nil
}

// Nodes returns the cluster's nodes in number order; a broker of one node
// has one.
func (b *Broker) Nodes() []NodeInfo {
	b.mu.Lock()
	defer b.mu.unlockView()
	out := make([]NodeInfo, len(b.nodes))
	for i, nd := range b.nodes {
		out[i] = NodeInfo{Number: i + 1, Name: nd.name, State: nd.state, Reaches: b.reachable(i + 1), Hung: nd.paused}
	}
	return out
}

// NodeName returns the name of node n ("rabbit@node2" unless
// Config.NodeNames names it), "" for no such node.
func (b *Broker) NodeName(n int) string {
	b.mu.Lock()
	defer b.mu.unlockView()
	if nd, err := b.nodeAt(n); err == nil {
		return nd.name
	}
	return ""
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
	nd, err := b.nodeAt(n)
	if err != nil {
		return err
	}
	if nd.state != NodeRunning {
		return fmt.Errorf("sim: node %d (%s) is %v", n, nd.name, nd.state)
	}
	if len(b.nodes) == 1 {
		return fmt.Errorf("sim: a broker of one node cannot lose it (Restart restarts it)")
	}
	nd.state = how
	b.record(Event{Kind: EventNode, Reason: map[NodeState]string{NodeStopped: "stop", NodeKilled: "kill"}[how], Node: n})
	var forced *protocol.Error
	if how == NodeStopped {
		forced = protocol.Errorf(protocol.ConnectionForced, protocol.Method{}, "%s", ShutdownText)
		b.eachQueue(func(q *brokerQueue) {
			if q.cluster.leader == n && !q.Replicated() {
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
		if q.cluster.leader == n && !q.Replicated() {
			q.cluster.down = how
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
	b.topologyChanged(how == NodeStopped)
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
	nd, err := b.nodeAt(n)
	if err != nil {
		return err
	}
	if nd.state == NodeRunning {
		return fmt.Errorf("sim: node %d (%s) is running", n, nd.name)
	}
	b.startNode(n)
	return nil
}

// startNode starts node n, which is down; caller holds the lock.
func (b *Broker) startNode(n int) {
	nd := &b.nodes[n-1]
	crashed := nd.state == NodeKilled
	nd.state = NodeRunning
	b.record(Event{Kind: EventNode, Reason: "start", Node: n})
	b.releaseSuspects(n)
	b.startMembers(n)
	b.eachQueue(func(q *brokerQueue) {
		if q.cluster.leader != n || q.cluster.down == NodeRunning {
			return
		}
		q.cluster.down = NodeRunning
		if !q.Options().Durable {
			b.deleteQueue(q)
			return
		}
		// The recovered queue is a new process reading its store: the
		// transient messages are gone, and after a crash every message
		// is marked redelivered (measured on 4.3.6, docs/cluster.md
		// section 2); after a clean stop each keeps its flag.
		q.Restart()
		if crashed {
			for _, m := range q.Messages() {
				m.Delivered = true
			}
		}
		q.Touch()
	})
	b.topologyChanged(true)
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
	sides := make([]int, len(b.nodes))
	for g, group := range groups {
		for _, n := range group {
			if _, err := b.nodeAt(n); err != nil {
				return err
			}
			if sides[n-1] != 0 {
				return fmt.Errorf("sim: node %d is in two groups of the partition", n)
			}
			sides[n-1] = g + 1
		}
	}
	for i := range b.nodes {
		b.nodes[i].side = sides[i]
	}
	kept := make([][]int, len(groups)) // the caller's slices may change
	for i, g := range groups {
		kept[i] = slices.Clone(g)
	}
	b.record(Event{Kind: EventNode, Reason: "partition", Nodes: kept})
	b.cutLinks()
	b.topologyChanged(false)
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
	for i := range b.nodes {
		b.nodes[i].side = 0
	}
	b.record(Event{Kind: EventNode, Reason: "heal"})
	b.topologyChanged(false)
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
			for n := 1; n <= len(b.nodes); n++ {
				if !b.running(n) {
					b.startNode(n)
				}
				if b.nodes[n-1].paused {
					b.resumeNode(n)
				}
			}
			b.heal()
		})
	}
	b.schedule(b.recovery, b.now.Add(max(d, 0)))
}
