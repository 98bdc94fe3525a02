package fuzz

import (
	"time"

	"github.com/amqpsim/amqpsim/scenarios"
)

// clusterModel is what the generator did to a cluster's nodes: which it
// took down, and which it cut off.
type clusterModel struct {
	nodes int
	down  map[int]bool
	cut   int // the node cut off from the others, 0 for none
}

func newClusterModel(nodes int) *clusterModel {
	return &clusterModel{nodes: nodes, down: map[int]bool{}}
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
		return 1 + g.r.IntN(c.nodes)
	}
	return oneOf(g, up...)
}

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
		g.add(scenarios.StartNode{Node: downNode})
	case c.cut != 0:
		c.cut = 0
		g.add(scenarios.Heal{})
	default:
		n := 1 + g.r.IntN(c.nodes)
		switch g.r.IntN(3) {
		case 0:
			c.down[n] = true
			g.add(scenarios.StopNode{Node: n})
		case 1:
			c.down[n] = true
			g.add(scenarios.KillNode{Node: n})
		default:
			c.cut = n
			g.add(scenarios.Partition{Node: n})
		}
	}
	if !g.clock.straddles(time.Second) {
		g.add(scenarios.Advance{D: time.Second})
	}
}
