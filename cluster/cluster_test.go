package cluster_test

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/amqpsim/amqpsim/cluster"
)

// setup is a cluster's state for a table row: the nodes that are down
// (by number) and the groups of a partition.
type setup struct {
	down map[int]cluster.State
	cut  [][]int
	hung []int
}

// topology builds s on n nodes.
func (s setup) topology(t *testing.T, n int) *cluster.Topology {
	t.Helper()
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("rabbit@node%d", i+1)
	}
	top := cluster.New(names)
	for node, how := range s.down {
		if err := top.Down(node, how); err != nil {
			t.Fatal(err)
		}
	}
	if s.cut != nil {
		if err := top.Partition(s.cut); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range s.hung {
		if err := top.Pause(n); err != nil {
			t.Fatal(err)
		}
	}
	return top
}

func (s setup) String() string { return fmt.Sprintf("down %v cut %v hung %v", s.down, s.cut, s.hung) }

var (
	healthy  = setup{}
	cut3     = setup{cut: [][]int{{3}}}                               // node 3 alone
	stop1    = setup{down: map[int]cluster.State{1: cluster.Stopped}} // node 1 stopped
	kill1    = setup{down: map[int]cluster.State{1: cluster.Killed}}
	stop12   = setup{down: map[int]cluster.State{1: cluster.Stopped, 2: cluster.Stopped}}
	cutEach  = setup{cut: [][]int{{1}, {2}, {3}}} // no side has a majority
	stop2cut = setup{down: map[int]cluster.State{2: cluster.Stopped}, cut: [][]int{{1}}}
	hung2    = setup{hung: []int{2}} // node 2 hung (SIGSTOP)
)

// TestMajority: which nodes each node reaches, and where the majority is:
// a node alone in a cut of three has none; two of three have it, running
// or not (a stopped node counts in the cluster's size).
func TestMajority(t *testing.T) {
	for _, tc := range []struct {
		setup
		reach    [][]int // by node
		majority []int
	}{
		{healthy, [][]int{{1, 2, 3}, {1, 2, 3}, {1, 2, 3}}, []int{1, 2, 3}},
		{cut3, [][]int{{1, 2}, {1, 2}, {3}}, []int{1, 2}},
		{stop1, [][]int{nil, {2, 3}, {2, 3}}, []int{2, 3}},
		{stop12, [][]int{nil, nil, {3}}, nil},
		{cutEach, [][]int{{1}, {2}, {3}}, nil},
		{stop2cut, [][]int{{1}, nil, {3}}, nil},
	} {
		top := tc.topology(t, 3)
		var reach [][]int
		for n := 1; n <= 3; n++ {
			reach = append(reach, top.Reachable(n))
			if got, want := top.Majority(n), 2*len(top.Reachable(n)) > 3; got != want {
				t.Errorf("%v: Majority(%d) = %v", tc.setup, n, got)
			}
		}
		if diff := cmp.Diff(tc.reach, reach); diff != "" {
			t.Errorf("%v: Reachable (-want +got):\n%s", tc.setup, diff)
		}
		if diff := cmp.Diff(tc.majority, top.MajoritySide()); diff != "" {
			t.Errorf("%v: MajoritySide (-want +got):\n%s", tc.setup, diff)
		}
	}
}

// TestReach: how a queue answers a client on a node, as measured on the
// real 4.3.6 cluster (docs/cluster.md sections 2 to 4).
func TestReach(t *testing.T) {
	classic := func(home int) cluster.Queue { return cluster.Queue{Leader: home} }
	quorum := func(leader int) cluster.Queue { return cluster.Queue{Replicated: true, Leader: leader} }
	for _, tc := range []struct {
		what string
		setup
		q    cluster.Queue
		from int
		want cluster.Reach
	}{
		{"a classic queue in a healthy cluster", healthy, classic(1), 3, cluster.Reachable},
		{"a classic queue whose home stopped: stopped by supervisor (classic-home-stopped-recovers.txt)",
			stop1, cluster.Queue{Leader: 1, Down: cluster.Stopped}, 2, cluster.StoppedHome},
		{"a classic queue whose home crashed: a timeout", kill1, cluster.Queue{Leader: 1, Down: cluster.Killed}, 2, cluster.Lost},
		{"a classic queue homed across a cut (partition-classic-declare-healed.txt)", cut3, classic(1), 3, cluster.Lost},
		{"a classic queue on the client's side of a cut", cut3, classic(3), 3, cluster.Reachable},
		{"a quorum queue in a healthy cluster", healthy, quorum(1), 3, cluster.Reachable},
		{"a quorum queue from the majority side", cut3, quorum(1), 2, cluster.Reachable},
		{"a quorum queue electing", healthy, cluster.Queue{Replicated: true, Leader: 1, Electing: true}, 2, cluster.Electing},
		{"a quorum queue led across the cut, from the majority side", cut3, quorum(3), 1, cluster.Electing},
		{"a quorum queue from a minority without its leader (partition-pause-minority.txt)", cut3, quorum(1), 3, cluster.NoLeader},
		{"a quorum queue from a minority with its leader", cut3, quorum(3), 3, cluster.LeaderOnly},
		{"a quorum queue with two nodes stopped, led by the third (quorum-no-majority-first-publish-blocks.txt)", stop12, quorum(3), 3, cluster.LeaderOnly},
		{"a classic queue whose home hangs (pause-node-classic-home.txt)", hung2, classic(2), 1, cluster.HungHome},
		{"a classic queue of another node, a node hung", hung2, classic(1), 3, cluster.Reachable},
		{"a quorum queue led by a hung node (pause-node-quorum-leader.txt)", hung2, quorum(2), 3, cluster.Electing},
	} {
		if got := tc.topology(t, 3).Reach(tc.q, tc.from); got != tc.want {
			t.Errorf("%s: Reach = %v, want %v", tc.what, got, tc.want)
		}
	}
	if got := cluster.New([]string{"rabbit@localhost"}).Reach(cluster.Queue{Leader: 1, Down: cluster.Killed}, 1); got != cluster.Reachable {
		t.Errorf("a broker of one node: %v, want Reachable (it has no cluster rules)", got)
	}
}

// TestLeadership: what a replicated queue's leadership does after a
// change of the nodes: a graceful stop hands over at once, a node that
// starts elects while it boots, a crash or a cut elects after
// LeaderElection (docs/cluster.md section 4); a leader on the majority
// side, or no majority at all, keeps it; a classic queue has none.
func TestLeadership(t *testing.T) {
	quorum := func(leader int) cluster.Queue { return cluster.Queue{Replicated: true, Leader: leader} }
	started1 := setup{}
	for _, tc := range []struct {
		what string
		setup
		q      cluster.Queue
		change cluster.Change
		want   cluster.Election
	}{
		{"the leader's node stopped", stop1, quorum(1), cluster.StoppedNode, cluster.HandOver},
		{"the leader's node crashed", kill1, quorum(1), cluster.KilledNode, cluster.Elect},
		{"the leader cut off", cut3, quorum(3), cluster.Partitioned, cluster.Elect},
		{"another node cut off", cut3, quorum(1), cluster.Partitioned, cluster.Keep},
		{"a node started, the leader on the majority side", started1, quorum(1), cluster.StartedNode, cluster.Keep},
		{"a node started with a majority back, the leader stopped before", stop1, quorum(1), cluster.StartedNode, cluster.HandOver},
		{"no side has a majority", stop12, quorum(1), cluster.KilledNode, cluster.Keep},
		{"an election runs already", kill1, cluster.Queue{Replicated: true, Leader: 1, Electing: true}, cluster.KilledNode, cluster.Keep},
		{"a classic queue", stop1, cluster.Queue{Leader: 1}, cluster.StoppedNode, cluster.Keep},
		{"healed, the leader on the old minority side", setup{}, quorum(3), cluster.Healed, cluster.Keep},
		{"the leader's node hung (pause-node-quorum-leader.txt)", hung2, quorum(2), cluster.PausedNode, cluster.Elect},
		{"another node hung", hung2, quorum(1), cluster.PausedNode, cluster.Keep},
		{"healed before the election ended", healthy, cluster.Queue{Replicated: true, Leader: 3, Electing: true}, cluster.Healed, cluster.Cancel},
		{"the hung leader runs again before the election ended", healthy, cluster.Queue{Replicated: true, Leader: 2, Electing: true}, cluster.ResumedNode, cluster.Cancel},
		{"an election runs, the leader still hung", hung2, cluster.Queue{Replicated: true, Leader: 2, Electing: true}, cluster.PausedNode, cluster.Keep},
	} {
		if got := tc.topology(t, 3).Leadership(tc.q, tc.change); got != tc.want {
			t.Errorf("%s: Leadership = %v, want %v", tc.what, got, tc.want)
		}
	}
	if cluster.LeaderElection.Seconds() < 0.37 || cluster.LeaderElection.Seconds() > 0.44 {
		t.Errorf("LeaderElection %v, outside the measured 0.37-0.44 s", cluster.LeaderElection)
	}
	if d := cluster.ElectionDelay(cluster.PausedNode); d != cluster.HungElection || d.Seconds() < 6.2 || d.Seconds() > 8.3 {
		t.Errorf("a hung leader's election takes %v, want HungElection within the measured 6.2-8.3 s", d)
	}
}

// TestNewLeader: a leader the majority side lost is replaced by the node
// of that side the pick chooses; one it has, or no majority, stays.
func TestNewLeader(t *testing.T) {
	first := func(int) int { return 0 }
	last := func(k int) int { return k - 1 }
	quorum := func(leader int, absent ...int) cluster.Queue {
		q := cluster.Queue{Replicated: true, Leader: leader}
		for _, n := range absent {
			q.Absent |= 1 << n
		}
		return q
	}
	for _, tc := range []struct {
		setup
		q    cluster.Queue
		pick func(int) int
		want int
	}{
		{stop1, quorum(1), first, 2},
		{stop1, quorum(1), last, 3},
		{cut3, quorum(3), last, 2},
		{cut3, quorum(1), last, 1},
		{stop12, quorum(1), last, 1},
		{hung2, quorum(2), first, 1}, // a hung node cannot lead
		{hung2, quorum(2), last, 3},
		{stop1, quorum(1, 2), first, 3},    // node 2's member never started
		{stop1, quorum(1, 2, 3), first, 1}, // no member can lead
	} {
		if got := tc.topology(t, 3).NewLeader(tc.q, tc.pick); got != tc.want {
			t.Errorf("%v, %+v: NewLeader = %d, want %d", tc.setup, tc.q, got, tc.want)
		}
	}
	if got := stop1.topology(t, 3).NewLeader(quorum(2), func(int) int { panic("picked without need") }); got != 2 {
		t.Errorf("a leader on the majority side: %d", got)
	}
}

// TestAbsent: a replicated queue declared on a node has no running member
// on the nodes that node does not reach (partition-quorum-declared-during-cut.txt).
func TestAbsent(t *testing.T) {
	for _, tc := range []struct {
		setup
		from int
		want uint64
	}{
		{healthy, 1, 0},
		{cut3, 1, 1 << 3},
		{cut3, 3, 1<<1 | 1<<2},
		{stop1, 2, 1 << 1},
	} {
		if got := tc.topology(t, 3).Absent(tc.from); got != tc.want {
			t.Errorf("%v: Absent(%d) = %b, want %b", tc.setup, tc.from, got, tc.want)
		}
	}
}

// TestPause: a hung node runs, as far as the others know: it is running,
// reached and counted in the majority; only Hung says it hangs. Pausing
// one that is down, hung, or the only node fails, as does resuming one
// that runs.
func TestPause(t *testing.T) {
	top := hung2.topology(t, 3)
	if !top.Running(2) || !top.Hung(2) || !top.Reaches(1, 2) || !top.Majority(1) {
		t.Errorf("hung node 2: running %v, hung %v, reached %v", top.Running(2), top.Hung(2), top.Reaches(1, 2))
	}
	if err := top.Pause(2); err == nil {
		t.Error("pausing a hung node succeeded")
	}
	if err := top.Resume(2); err != nil || top.Hung(2) {
		t.Errorf("Resume(2): %v, hung %v", err, top.Hung(2))
	}
	if err := top.Resume(2); err == nil {
		t.Error("resuming a node that runs succeeded")
	}
	if err := stop1.topology(t, 3).Pause(1); err == nil {
		t.Error("pausing a stopped node succeeded")
	}
	if err := cluster.New([]string{"rabbit@localhost"}).Pause(1); err == nil {
		t.Error("pausing the only node succeeded")
	}
}

// TestPlace: a new queue is led by the declaring connection's node
// (client-local, the default) or, with "balanced", by the node it reaches
// that leads fewest queues, the lowest of those (docs/cluster.md section 5).
func TestPlace(t *testing.T) {
	for _, tc := range []struct {
		setup
		from    int
		locator string
		led     []int
		want    int
	}{
		{healthy, 2, "", []int{0, 5, 0}, 2},
		{healthy, 2, "client-local", []int{0, 5, 0}, 2},
		{healthy, 2, "balanced", []int{1, 5, 1}, 1},
		{healthy, 2, "balanced", []int{3, 5, 1}, 3},
		{cut3, 1, "balanced", []int{3, 5, 0}, 1}, // node 3 is out of reach
		{stop1, 2, "balanced", []int{0, 2, 1}, 3},
	} {
		if got := tc.topology(t, 3).Place(tc.from, tc.locator, tc.led); got != tc.want {
			t.Errorf("%v: Place(%d, %q, %v) = %d, want %d", tc.setup, tc.from, tc.locator, tc.led, got, tc.want)
		}
	}
}

// TestMembersReached: a replicated queue's delete waits for a member cut
// off from its leader (partition-quorum-delete-member-cut.txt), and for
// one on a node that is down (quorum-delete-member-stopped.txt,
// -killed.txt).
func TestMembersReached(t *testing.T) {
	for _, tc := range []struct {
		setup
		leader int
		want   bool
	}{
		{healthy, 1, true},
		{cut3, 1, false},
		{cut3, 3, false},
		{stop1, 2, false},
		{setup{down: map[int]cluster.State{3: cluster.Killed}}, 1, false},
		{stop2cut, 3, false},
	} {
		if got := tc.topology(t, 3).MembersReached(tc.leader); got != tc.want {
			t.Errorf("%v, leader %d: MembersReached = %v, want %v", tc.setup, tc.leader, got, tc.want)
		}
	}
}

// TestChangesRefused: the faults a topology refuses, with the error each
// gives, changing nothing.
func TestChangesRefused(t *testing.T) {
	top := stop1.topology(t, 3)
	for _, tc := range []struct {
		what string
		err  error
		want string
	}{
		{"a node that does not exist", top.Down(4, cluster.Stopped), "sim: no node 4 (the cluster has nodes 1 to 3)"},
		{"a node that is down", top.Down(1, cluster.Killed), "sim: node 1 (rabbit@node1) is stopped"},
		{"starting a node that runs", top.Up(2), "sim: node 2 (rabbit@node2) is running"},
		{"a node in two groups", top.Partition([][]int{{1, 2}, {2}}), "sim: node 2 is in two groups of the partition"},
		{"a partition naming a node that does not exist", top.Partition([][]int{{0}}), "sim: no node 0 (the cluster has nodes 1 to 3)"},
		{"the only node", cluster.New([]string{"rabbit@localhost"}).Down(1, cluster.Stopped), "sim: a broker of one node cannot lose it (Restart restarts it)"},
	} {
		if tc.err == nil || tc.err.Error() != tc.want {
			t.Errorf("%s: %v, want %q", tc.what, tc.err, tc.want)
		}
	}
	if got := top.Reachable(2); !cmp.Equal(got, []int{2, 3}) {
		t.Errorf("after the refused changes node 2 reaches %v, want [2 3]", got)
	}
	if err := top.Up(1); err != nil || !top.Running(1) || top.State(1) != cluster.Running {
		t.Errorf("Up(1): %v, running %v", err, top.Running(1))
	}
}

// TestStaleLeader: a leader that an election replaces while it runs cut
// off goes on leading for its side (Stale): the nodes there see it and
// reach it (LeaderOnly), the others see the new leader; a leader replaced
// after a stop or a crash, or one on the new leader's side, is not stale;
// the heal or its node going down ends it (partition-stale-leader.txt).
func TestStaleLeader(t *testing.T) {
	for _, tc := range []struct {
		setup
		old, elected int
		stale        int
		seen         []int           // by node: the leader it sees
		reach        []cluster.Reach // by node
	}{
		{cut3, 3, 1, 3, []int{1, 1, 3}, []cluster.Reach{cluster.Reachable, cluster.Reachable, cluster.LeaderOnly}},
		{kill1, 1, 2, 0, []int{2, 2, 2}, []cluster.Reach{cluster.Reachable, cluster.Reachable, cluster.Reachable}},
		{stop1, 1, 3, 0, []int{3, 3, 3}, []cluster.Reach{cluster.Reachable, cluster.Reachable, cluster.Reachable}},
		{hung2, 2, 1, 0, []int{1, 1, 1}, []cluster.Reach{cluster.Reachable, cluster.Reachable, cluster.Reachable}},
	} {
		top := tc.topology(t, 3)
		q := top.Succeed(cluster.Queue{Replicated: true, Leader: tc.old}, tc.elected)
		if q.Leader != tc.elected || q.Stale != tc.stale {
			t.Errorf("%v: Succeed(%d → %d) = leader %d, stale %d; want stale %d", tc.setup, tc.old, tc.elected, q.Leader, q.Stale, tc.stale)
		}
		var seen []int
		var reach []cluster.Reach
		for n := 1; n <= 3; n++ {
			seen = append(seen, top.LeaderSeenFrom(q, n))
			if top.Running(n) {
				reach = append(reach, top.Reach(q, n))
			} else {
				reach = append(reach, cluster.Reachable)
			}
		}
		if diff := cmp.Diff(tc.seen, seen); diff != "" {
			t.Errorf("%v: the leader each node sees (-want +got):\n%s", tc.setup, diff)
		}
		if diff := cmp.Diff(tc.reach, reach); diff != "" {
			t.Errorf("%v: reach (-want +got):\n%s", tc.setup, diff)
		}
		if got := top.Unstale(q).Stale; got != tc.stale {
			t.Errorf("%v: Unstale with the cut on: stale %d, want %d", tc.setup, got, tc.stale)
		}
	}
	top := cut3.topology(t, 3)
	q := top.Succeed(cluster.Queue{Replicated: true, Leader: 3}, 1)
	top.Heal()
	if got := top.Unstale(q).Stale; got != 0 {
		t.Errorf("after the heal: stale %d, want 0", got)
	}
	top = cut3.topology(t, 3)
	if err := top.Down(3, cluster.Killed); err != nil {
		t.Fatal(err)
	}
	if got := top.Unstale(q).Stale; got != 0 {
		t.Errorf("after node 3 crashed: stale %d, want 0", got)
	}
}
