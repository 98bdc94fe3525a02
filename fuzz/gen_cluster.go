package fuzz

import (
	"slices"
	"time"

	"github.com/amqpsim/amqpsim/scenarios"
)

// clusterModel is what the generator did to a cluster's nodes: which it
// took down (how), and which it cut off.
type clusterModel struct {
	nodes  int
	down   map[int]bool
	killed map[int]bool
	cut    int // the node cut off from the others, 0 for none
}

// isolated reports whether node n is cut off: a step there waits for the
// majority. A nil model (one node) isolates nothing.
func (c *clusterModel) isolated(n int) bool { return c != nil && c.cut != 0 && n == c.cut }

// reachable reports whether a step from the majority can name q without
// waiting: a quorum queue keeps its majority; a classic queue whose home
// crashed or is cut off is answered only after a timeout, one whose home
// stopped at once (404).
func (c *clusterModel) reachable(q *gqueue) bool {
	if q.kind != "classic" {
		return true
	}
	return !c.killed[q.node] && q.node != c.cut
}

func newClusterModel(nodes int) *clusterModel {
	return &clusterModel{nodes: nodes, down: map[int]bool{}, killed: map[int]bool{}}
}

// withCluster gives a scenario its cluster directive; recording fills in
// the nodes' names.
func withCluster(s *scenarios.Scenario, nodes int) *scenarios.Scenario {
	s.SetCluster(&scenarios.ClusterSpec{Nodes: nodes})
	return s
}

// pickNode returns the node a new connection goes to: usually one that
// runs, now and then one that is down (refused).
func (c *clusterModel) pickNode(g *gen) int {
	var up []int
	for n := 1; n <= c.nodes; n++ {
		if !c.down[n] {
			up = append(up, n)
		}
	}
	if len(up) == 0 || g.chance(5) {
		if n := 1 + g.r.IntN(c.nodes); !c.isolated(n) {
			return n
		}
	}
	up = slices.DeleteFunc(up, c.isolated)
	if len(up) == 0 {
		return 1
	}
	return oneOf(g, up...)
}

// killQuiet is how long a kill-node waits after the steps before it. A
// classic queue writes what it was sent without publisher confirms only
// when it hibernates, after at least a second idle (RS@v4.3.5
// rabbit_variable_queue:needs_timeout/1 is false without pending
// confirms, so rabbit_amqqueue_process hibernates, gen_server2's backoff
// starting at 1000 ms, and handle_pre_hibernate flushes): a node killed
// sooner loses those messages or not as that timer falls
// (cluster/fuzz-14048-unsynced-persistent-lost.txt, docs/cluster.md),
// a race the simulator does not model. Two seconds make it unlikely, not
// impossible: gen_server2 raises the timeout, up to twice its base, each
// time the queue wakes soon after hibernating.
const killQuiet = 2 * time.Second

// nodeFault stops, kills, starts, cuts off or heals a node. At most one
// node is down or cut off at a time, so that the cluster keeps a
// majority; each fault is followed by a second for the elections it
// starts, which the recorder's settling does not show (docs/scenarios.md).
func (g *gen) nodeFault() {
	c := g.cluster
	var downNode int
	for n := range c.nodes + 1 {
		if c.down[n] {
			downNode = n
		}
	}
	switch {
	case downNode != 0:
		delete(c.down, downNode)
		delete(c.killed, downNode)
		g.add(scenarios.StartNode{Node: downNode})
	case c.cut != 0:
		c.cut = 0
		g.add(scenarios.Heal{})
	default:
		n := 1 + g.r.IntN(c.nodes)
		kill := g.r.IntN(3)
		if kill == 1 && g.clock.straddles(killQuiet) {
			kill = 0
		}
		switch kill {
		case 0:
			c.down[n] = true
			g.add(scenarios.StopNode{Node: n})
		case 1:
			g.add(scenarios.Advance{D: killQuiet})
			c.down[n], c.killed[n] = true, true
			g.add(scenarios.KillNode{Node: n})
		default:
			// Never node 1: the recorder observes queues through the
			// lowest running node, which must see the majority.
			n = 2 + g.r.IntN(c.nodes-1)
			c.cut = n
			g.add(scenarios.Partition{Node: n})
		}
	}
	if !g.clock.straddles(time.Second) {
		g.add(scenarios.Advance{D: time.Second})
	}
}
