package sim_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/amqpsim/amqpsim/sim"
)

// TestNodeEvents: every change of the nodes is an output a follower reads
// in order, from where it stopped, woken by the channel NodeEvents gives
// (closed at the next change, not before), the changes a timer makes
// (RecoverAfter) too.
func TestNodeEvents(t *testing.T) {
	c := newCluster(t)
	evs, next := c.b.NodeEvents(0)
	if len(evs) != 0 {
		t.Fatalf("a new cluster has node events: %v", evs)
	}
	c.must(c.b.StopNode(2))
	select {
	case <-next:
	default:
		t.Fatal("the channel is not closed at the next node event")
	}
	c.must(c.b.Partition([]int{3}))
	c.b.RecoverAfter(time.Second)
	_, next = c.b.NodeEvents(2)
	select {
	case <-next:
		t.Fatal("the channel is closed before the next node event")
	default:
	}
	c.must(c.b.Advance(time.Second))
	<-next
	evs, _ = c.b.NodeEvents(0)
	want := []sim.NodeEvent{
		{Seq: 1, Kind: sim.NodeDown, Node: 2, State: sim.NodeStopped},
		{Seq: 2, Kind: sim.NodesPartitioned, Sides: [][]int{{3}}},
		{Seq: 3, Kind: sim.NodeUp, Node: 2},
		{Seq: 4, Kind: sim.NodesHealed},
	}
	if diff := cmp.Diff(want, evs); diff != "" {
		t.Errorf("node events (-want +got):\n%s", diff)
	}
	if evs, _ := c.b.NodeEvents(3); len(evs) != 1 || evs[0].Seq != 4 {
		t.Errorf("the events after 3: %v, want the heal alone", evs)
	}
}
