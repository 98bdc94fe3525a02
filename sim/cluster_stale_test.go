package sim_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/amqpsim/amqpsim/sim"
)

// TestStaleLeaderOnTheCutOffSide: node 3 led the quorum queue when it was
// cut off; the majority elects another leader, but node 3 keeps its own
// view until the heal: a passive declare there answers the counts at the
// cut, and a basic.get waits QuorumCommandTimeout, then 541 {timeout,...}
// naming node 3 (partition-stale-leader.txt). Node 1 sees the live queue.
func TestStaleLeaderOnTheCutOffSide(t *testing.T) {
	c := newCluster(t)
	_, ch3 := c.channel("c3", 3)
	c.quorum(ch3, "qq")
	c.must(ch3.Publish("", "qq", sim.PublishOptions{}, persistent("m1")))
	c.must(ch3.Publish("", "qq", sim.PublishOptions{}, persistent("m2")))
	c.must(c.b.Partition([]int{3}))
	c.must(c.b.Advance(sim.LeaderElection))
	if leader, _, _ := c.b.QueueLeader("/", "qq"); leader == "rabbit@node3" {
		t.Fatalf("the majority side kept node 3 as the leader")
	}
	_, ch1 := c.channel("c1", 1)
	c.must(ch1.Publish("", "qq", sim.PublishOptions{}, persistent("m3")))
	ready := func(ch *sim.Channel) int {
		t.Helper()
		info, err := ch.QueueDeclare("qq", sim.QueueOptions{Passive: true})
		c.must(err)
		return info.Ready
	}
	if got := ready(ch3); got != 2 {
		t.Errorf("node 3 counts %d ready, want the 2 it knew at the cut", got)
	}
	if got := ready(ch1); got != 3 {
		t.Errorf("node 1 counts %d ready, want 3", got)
	}
	getConn, getCh := c.channel("get3", 3)
	if _, _, err := getCh.Get("qq", false); !errors.Is(err, sim.ErrQueued) {
		t.Fatalf("get on node 3: %v, want ErrQueued", err)
	}
	c.must(c.b.Advance(sim.QuorumCommandTimeout))
	checkPushes(t, getConn, "connection.close 541 INTERNAL_ERROR - Cannot get a message from queue 'queue 'qq' in vhost '/'': "+
		"{timeout,\n"+strings.Repeat(" ", 60)+"{'%2F_qq',\n"+strings.Repeat(" ", 61)+"rabbit@node3}}")
	c.b.Heal()
	if got := ready(ch3); got != 3 {
		t.Errorf("node 3 counts %d ready after the heal, want 3", got)
	}
}
