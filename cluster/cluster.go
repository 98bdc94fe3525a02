// Package cluster is the topology of a RabbitMQ 4.3 cluster as the
// simulator models it, measured on a real 3-node 4.3.6 cluster
// (docs/cluster.md): the nodes and their states, the sides a partition
// cuts, which nodes reach which and where a majority is, how a queue
// answers a client on a node (Reach), who leads a replicated queue after
// a change of the nodes and when (Leadership, LeaderElection), and where a
// new queue is placed (Place).
//
// It is pure, as consumer's rotation and channel's ledger are: no clock,
// no random source of its own (Leadership's new leader comes from the
// caller's pick), no I/O. Package sim holds a Topology and keeps the
// reactions: the queues a node takes with it, the publishes held for a
// leader, the calls that wait, the timers.
//
// # Usage
//
//	t := cluster.New([]string{"rabbit@node1", "rabbit@node2", "rabbit@node3"})
//	t.Partition([][]int{{3}})
//	t.Majority(3)                                     // false: node 3 is alone
//	t.Reach(cluster.Queue{Replicated: true, Leader: 1}, 3) // NoLeader
//	t.Leadership(cluster.Queue{Replicated: true, Leader: 3}, cluster.Partitioned) // Elect: after LeaderElection
package cluster

import (
	"fmt"
	"slices"
	"time"
)

// State is a node's state.
type State uint8

const (
	// Running is a node that runs.
	Running State = iota
	// Stopped is a node stopped gracefully (rabbitmqctl stop).
	Stopped
	// Killed is a node that crashed.
	Killed
)

// String returns "running", "stopped" or "killed".
func (s State) String() string {
	switch s {
	case Stopped:
		return "stopped"
	case Killed:
		return "killed"
	}
	return "running"
}

// Topology is the cluster's nodes, numbered from 1, with their states and
// the sides of the current partition.
type Topology struct {
	nodes []node
}

// node is one node. side is its side of a partition: nodes on different
// sides cannot reach each other; 0 for all when there is none. hung is
// set while a running node is hung (Pause).
type node struct {
	name  string
	state State
	side  int
	hung  bool
}

// New returns a topology of running nodes with the given names, node 1
// first.
func New(names []string) *Topology {
	t := &Topology{nodes: make([]node, len(names))}
	for i, name := range names {
		t.nodes[i].name = name
	}
	return t
}

// Len returns the number of nodes.
func (t *Topology) Len() int { return len(t.nodes) }

// Check returns nil for a node number the cluster has, an error naming the
// valid numbers otherwise.
func (t *Topology) Check(n int) error {
	if n < 1 || n > len(t.nodes) {
		return fmt.Errorf("sim: no node %d (the cluster has nodes 1 to %d)", n, len(t.nodes))
	}
	return nil
}

// Name returns node n's name.
func (t *Topology) Name(n int) string { return t.nodes[n-1].name }

// State returns node n's state.
func (t *Topology) State(n int) State { return t.nodes[n-1].state }

// Running reports whether node n runs.
func (t *Topology) Running(n int) bool { return t.nodes[n-1].state == Running }

// Reaches reports whether node from can reach node to: both run, on the
// same side of every partition.
func (t *Topology) Reaches(from, to int) bool {
	return t.Running(from) && t.Running(to) && t.nodes[from-1].side == t.nodes[to-1].side
}

// Reachable returns the nodes node from reaches, itself included while it
// runs, in number order.
func (t *Topology) Reachable(from int) []int {
	var out []int
	for n := 1; n <= len(t.nodes); n++ {
		if t.Reaches(from, n) {
			out = append(out, n)
		}
	}
	return out
}

// Majority reports whether node from reaches a majority of the cluster's
// nodes, itself included.
func (t *Topology) Majority(from int) bool { return 2*len(t.Reachable(from)) > len(t.nodes) }

// MajoritySide returns the nodes of the side that holds a majority, nil
// when none does.
func (t *Topology) MajoritySide() []int {
	for n := 1; n <= len(t.nodes); n++ {
		if side := t.Reachable(n); 2*len(side) > len(t.nodes) {
			return side
		}
	}
	return nil
}

// Down takes running node n down, stopped or killed; it fails for an
// unknown node, one that is not running, or the only node.
func (t *Topology) Down(n int, how State) error {
	if err := t.Check(n); err != nil {
		return err
	}
	nd := &t.nodes[n-1]
	if nd.state != Running {
		return fmt.Errorf("sim: node %d (%s) is %v", n, nd.name, nd.state)
	}
	if len(t.nodes) == 1 {
		return fmt.Errorf("sim: a broker of one node cannot lose it (Restart restarts it)")
	}
	nd.state = how
	return nil
}

// Up starts node n, which is down; it fails for an unknown node or one
// that runs.
func (t *Topology) Up(n int) error {
	if err := t.Check(n); err != nil {
		return err
	}
	nd := &t.nodes[n-1]
	if nd.state == Running {
		return fmt.Errorf("sim: node %d (%s) is running", n, nd.name)
	}
	nd.state = Running
	return nil
}

// Pause hangs running node n (SIGSTOP on a real cluster): it runs, as far
// as the others know, and answers nothing. It fails for an unknown node,
// one that is down or hung already, or the only node.
func (t *Topology) Pause(n int) error {
	if err := t.Check(n); err != nil {
		return err
	}
	nd := &t.nodes[n-1]
	switch {
	case len(t.nodes) == 1:
		return fmt.Errorf("sim: a broker of one node cannot hang")
	case nd.state != Running:
		return fmt.Errorf("sim: node %d (%s) is %v", n, nd.name, nd.state)
	case nd.hung:
		return fmt.Errorf("sim: node %d (%s) is hung already", n, nd.name)
	}
	nd.hung = true
	return nil
}

// Resume lets hung node n run again; it fails for an unknown node or one
// that is not hung.
func (t *Topology) Resume(n int) error {
	if err := t.Check(n); err != nil {
		return err
	}
	nd := &t.nodes[n-1]
	if !nd.hung {
		return fmt.Errorf("sim: node %d (%s) is not hung", n, nd.name)
	}
	nd.hung = false
	return nil
}

// Hung reports whether node n is hung.
func (t *Topology) Hung(n int) bool { return t.nodes[n-1].hung }

// leads reports whether node n can lead a replicated queue: it runs and
// is not hung.
func (t *Topology) leads(n int) bool { return t.Running(n) && !t.nodes[n-1].hung }

// Partition cuts the cluster into sides: each group lists node numbers,
// and the nodes no group lists form one more side. It replaces the
// previous partition; it fails, changing nothing, for an unknown node or
// one in two groups.
func (t *Topology) Partition(groups [][]int) error {
	sides := make([]int, len(t.nodes))
	for g, group := range groups {
		for _, n := range group {
			if err := t.Check(n); err != nil {
				return err
			}
			if sides[n-1] != 0 {
				return fmt.Errorf("sim: node %d is in two groups of the partition", n)
			}
			sides[n-1] = g + 1
		}
	}
	for i := range t.nodes {
		t.nodes[i].side = sides[i]
	}
	return nil
}

// Heal ends the partition.
func (t *Topology) Heal() {
	for i := range t.nodes {
		t.nodes[i].side = 0
	}
}

// Queue is where a queue stands in the cluster.
type Queue struct {
	// Replicated is set for a quorum queue or a stream (a member on
	// every node, a Raft leader); a classic queue lives on its home.
	Replicated bool
	// Leader is the node that leads it: a classic queue's home.
	Leader int
	// Down is why a classic queue's process is gone (its home stopped or
	// crashed); Running while it runs.
	Down State
	// Electing is set while a replicated queue elects a leader.
	Electing bool
	// Absent are the nodes (bits 1 << n) whose member of a replicated
	// queue never started: those its declaring node did not reach
	// (measured on 4.3.6, partition-quorum-declared-during-cut.txt). They
	// cannot lead.
	Absent uint64
	// Stale is the node that led a replicated queue when a partition cut
	// it off from the side that elected another leader, while it runs on
	// that side of the cut; 0 otherwise. The nodes of its side still see
	// it lead: its Raft member stays leader in its own term, unable to
	// commit, and their copy of the metadata store still names it
	// (measured on 4.3.6, partition-stale-leader.txt). Succeed sets it,
	// Unstale clears it.
	Stale int
}

// MemberAbsent reports whether q's member on node n never started.
func (q Queue) MemberAbsent(n int) bool { return q.Absent&(1<<n) != 0 }

// Reach is how a queue answers a client on a node.
type Reach uint8

const (
	// Reachable: the queue answers.
	Reachable Reach = iota
	// StoppedHome: a classic queue whose home stopped (its process "is
	// stopped by supervisor").
	StoppedHome
	// Lost: a classic queue whose home crashed or is cut off from the
	// client's node (rabbit_amqqueue:with/3 retries until its timeout).
	Lost
	// Electing: a replicated queue without a leader on the majority
	// side, electing one.
	Electing
	// NoLeader: no majority on the client's side, and the leader across
	// the cut.
	NoLeader
	// LeaderOnly: no majority on the client's side, the leader with it,
	// or a stale leader (Queue.Stale).
	LeaderOnly
	// HungHome: a classic queue whose home is hung: it answers nothing
	// until its node runs again.
	HungHome
)

var reachNames = [...]string{Reachable: "reachable", StoppedHome: "stopped home", Lost: "lost",
	Electing: "electing", NoLeader: "no leader", LeaderOnly: "leader only", HungHome: "hung home"}

// String names the reach.
func (r Reach) String() string { return reachNames[r] }

// LeaderSeenFrom returns the node that node from sees lead replicated
// queue q: a stale leader on its side of the cut, or its leader.
func (t *Topology) LeaderSeenFrom(q Queue, from int) int {
	if q.Stale != 0 && t.Reaches(from, q.Stale) {
		return q.Stale
	}
	return q.Leader
}

// Succeed returns q led by leader, the node its election chose: its
// leader until then, if it runs cut off from leader, goes on leading
// for the nodes of its side (Stale).
func (t *Topology) Succeed(q Queue, leader int) Queue {
	if leader != q.Leader && t.Running(q.Leader) && !t.Reaches(q.Leader, leader) {
		q.Stale = q.Leader
	}
	q.Leader = leader
	return q
}

// Unstale returns q without its stale leader once that node no longer
// runs cut off from the leader: the cut healed, or the node went down.
func (t *Topology) Unstale(q Queue) Queue {
	if q.Stale != 0 && (!t.Running(q.Stale) || t.Reaches(q.Stale, q.Leader)) {
		q.Stale = 0
	}
	return q
}

// Reach returns how q answers a client on node from (docs/cluster.md
// sections 2 to 4).
func (t *Topology) Reach(q Queue, from int) Reach {
	if len(t.nodes) < 2 {
		return Reachable
	}
	if !q.Replicated {
		switch {
		case q.Down == Stopped:
			return StoppedHome
		case q.Down == Killed || !t.Reaches(from, q.Leader):
			return Lost
		case t.Hung(q.Leader):
			return HungHome
		}
		return Reachable
	}
	switch {
	case !t.Majority(from):
		if t.Reaches(from, t.LeaderSeenFrom(q, from)) {
			return LeaderOnly
		}
		return NoLeader
	case q.Electing || !t.Reaches(from, q.Leader) || t.Hung(q.Leader):
		return Electing
	}
	return Reachable
}

// MembersReached reports whether node leader reaches every node: a
// replicated queue's delete waits for the members it does not reach
// (QuorumDeleteTimeout in package sim), a member on a node that is
// stopped or crashed as one cut off (quorum-delete-member-stopped.txt and
// -killed.txt, 4.3.6: the leader cannot replicate the delete to it).
func (t *Topology) MembersReached(leader int) bool {
	for n := 1; n <= len(t.nodes); n++ {
		if !t.Reaches(leader, n) {
			return false
		}
	}
	return true
}

// Change is what happened to the nodes.
type Change uint8

const (
	// StoppedNode: a node stopped gracefully.
	StoppedNode Change = iota
	// KilledNode: a node crashed.
	KilledNode
	// StartedNode: a node started.
	StartedNode
	// Partitioned: the cluster was cut.
	Partitioned
	// Healed: the partition ended.
	Healed
	// PausedNode: a node hung.
	PausedNode
	// ResumedNode: a hung node runs again.
	ResumedNode
)

// LeaderElection is how long a replicated queue is without a leader after
// its leader's node crashed or was cut off (measured on 4.3.6: deliveries
// and confirms stalled 0.37-0.44 s after a kill).
const LeaderElection = 400 * time.Millisecond

// HungElection is how long a replicated queue led by a hung node goes
// without a leader: Raft's failure detection (measured on 4.3.6:
// confirms and deliveries stalled 6.2-8.3 s, docs/cluster.md section 3;
// 3-10 s in pause-node-quorum-leader.txt).
const HungElection = 7 * time.Second

// electionDelay is, by change, how long a replicated queue whose leader
// the majority side lost goes without one (docs/cluster.md section 4): a
// graceful stop hands leadership over at once; a node that starts elects
// while it boots (the confirms held without a majority arrived from 1.9 s
// before to 1.8 s after start-node returned); a crash or a cut is noticed
// only after the election timeout.
var electionDelay = [...]time.Duration{
	StoppedNode: 0,
	KilledNode:  LeaderElection,
	StartedNode: 0,
	Partitioned: LeaderElection,
	Healed:      LeaderElection,
	PausedNode:  HungElection,
	ResumedNode: LeaderElection,
}

// ElectionDelay returns how long an election that change starts lasts.
func ElectionDelay(change Change) time.Duration { return electionDelay[change] }

// Election is what a replicated queue's leadership does after a change.
type Election uint8

const (
	// Keep: the leader stays (it is on the majority side, or no side has
	// a majority, or an election runs already).
	Keep Election = iota
	// HandOver: a node of the majority side leads at once (NewLeader).
	HandOver
	// Elect: a node of the majority side leads once ElectionDelay has
	// passed; the queue is Electing meanwhile.
	Elect
	// Cancel: an election runs, but the leader is back with the majority
	// before it ends (a heal, a hung node running again, within the
	// delay): it goes on leading, as Raft's followers hear it again
	// before their election timeout.
	Cancel
)

// String returns "keep", "hand over", "elect" or "cancel".
func (e Election) String() string {
	return [...]string{Keep: "keep", HandOver: "hand over", Elect: "elect", Cancel: "cancel"}[e]
}

// Leadership returns what replicated queue q's leadership does after
// change: it keeps its leader while the majority side has it, or while
// no side has a majority; otherwise it hands over at once or elects, as
// electionDelay says.
func (t *Topology) Leadership(q Queue, change Change) Election {
	if !q.Replicated {
		return Keep
	}
	majority := t.MajoritySide()
	holds := majority == nil || slices.Contains(majority, q.Leader) && t.leads(q.Leader)
	switch {
	case q.Electing && holds && majority != nil:
		return Cancel
	case q.Electing || holds:
		return Keep
	}
	if electionDelay[change] == 0 {
		return HandOver
	}
	return Elect
}

// NewLeader returns the leader of replicated queue q once its election
// ends: its leader while the majority side has it (running, not hung) or
// no side has one, otherwise the node of the majority side with a member
// that runs that pick chooses (pick(k) returns a number in [0, k), as
// RabbitMQ's Raft election takes either survivor); its leader when there
// is none.
func (t *Topology) NewLeader(q Queue, pick func(k int) int) int {
	majority := t.MajoritySide()
	if majority == nil || slices.Contains(majority, q.Leader) && t.leads(q.Leader) {
		return q.Leader
	}
	candidates := slices.DeleteFunc(slices.Clone(majority), func(n int) bool { return q.MemberAbsent(n) || !t.leads(n) })
	if len(candidates) == 0 {
		return q.Leader
	}
	return candidates[pick(len(candidates))]
}

// Absent returns, as Queue.Absent, the members a replicated queue declared
// on node from cannot start: those on the nodes from does not reach.
func (t *Topology) Absent(from int) uint64 {
	var absent uint64
	for n := 1; n <= len(t.nodes); n++ {
		if !t.Reaches(from, n) {
			absent |= 1 << n
		}
	}
	return absent
}

// Place returns the leader of a new queue declared on node from:
// from itself (x-queue-leader-locator client-local, RabbitMQ's default),
// or with "balanced" the node from reaches that leads fewest queues, the
// lowest of those (led counts the queues each node leads, by number - 1;
// measured on 4.3.6: docs/cluster.md section 5).
func (t *Topology) Place(from int, locator string, led []int) int {
	if locator != "balanced" || len(t.nodes) < 2 {
		return from
	}
	best := 0
	for n := 1; n <= len(t.nodes); n++ {
		if t.Reaches(from, n) && (best == 0 || led[n-1] < led[best-1]) {
			best = n
		}
	}
	if best == 0 {
		return from
	}
	return best
}
