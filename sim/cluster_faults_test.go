package sim_test

import (
	"testing"
	"time"

	"github.com/amqpsim/amqpsim/sim"
)

// A hung node runs as far as the others know, sends nothing and takes
// nothing: the API refuses what makes no sense, Drain gives nothing
// until ResumeNode, and RecoverAfter ends the hang with the other
// outages.
func TestPauseNode(t *testing.T) {
	c := newCluster(t)
	on2, ch2 := c.channel("on2", 2)
	_, err := ch2.QueueDeclare("q", sim.QueueOptions{})
	c.must(err)
	cons, err := ch2.Consume("q", sim.ConsumeOptions{Tag: "A"})
	c.must(err)
	c.must(c.b.PauseNode(2))
	if err := c.b.PauseNode(2); err == nil {
		t.Error("pausing a hung node succeeded")
	}
	if nd := c.b.Nodes()[1]; nd.State != sim.NodeRunning || !nd.Hung || !on2.Hung() {
		t.Errorf("node 2 after PauseNode: %+v, connection hung %v; want running and hung", nd, on2.Hung())
	}
	c.must(c.b.Publish("/", "", "q", sim.Message{Body: []byte("m1")}))
	if got := on2.Drain(nil); len(got) != 0 {
		t.Errorf("a hung node's connection drained %v, want nothing", got)
	}
	if d, ok := cons.Next(); ok {
		t.Errorf("a hung node's consumer read %+v", d)
	}
	c.b.RecoverAfter(time.Second)
	c.b.Advance(time.Second)
	if nd := c.b.Nodes()[1]; nd.Hung || on2.Hung() {
		t.Errorf("node 2 after RecoverAfter: %+v", nd)
	}
	if d, ok := cons.Next(); !ok || string(d.Body) != "m1" {
		t.Errorf("after the hang the consumer read %+v, %v; want m1", d, ok)
	}
	if err := c.b.ResumeNode(2); err == nil {
		t.Error("resuming a node that runs succeeded")
	}
	c.must(c.b.KillNode(3))
	if err := c.b.PauseNode(3); err == nil {
		t.Error("pausing a killed node succeeded")
	}
	if err := sim.New(sim.Config{}).PauseNode(1); err == nil {
		t.Error("pausing the node of a broker of one node succeeded")
	}
}

// The leader a quorum queue elects is a function of the seed and the
// queue's history alone: a program that also drew from the broker's
// random source (a server-named queue, on another connection) gets the
// same leader after the same crash.
func TestLeaderChoiceIgnoresOtherDraws(t *testing.T) {
	leaders := map[string]bool{}
	for _, extra := range []int{0, 1, 2, 3} {
		c := newCluster(t)
		_, ch1 := c.channel("on1", 1)
		for range extra {
			_, err := ch1.QueueDeclare("", sim.QueueOptions{Exclusive: true})
			c.must(err)
		}
		_, ch3 := c.channel("on3", 3)
		c.quorum(ch3, "qq")
		c.must(c.b.KillNode(3))
		c.b.Advance(sim.LeaderElection)
		leader, _, err := c.b.QueueLeader("/", "qq")
		c.must(err)
		leaders[leader] = true
	}
	if len(leaders) != 1 {
		t.Errorf("the elected leaders were %v: the choice varied with other draws", leaders)
	}
}

// A heal before the election ends keeps the leader, and what waited for
// it goes on at once, without waiting for the election's timer: the same
// program gets the same answer whenever the timer would have fired.
func TestHealWithinElectionKeepsLeader(t *testing.T) {
	c := newCluster(t)
	_, ch3 := c.channel("on3", 3)
	c.quorum(ch3, "qq")
	cons, err := ch3.Consume("qq", sim.ConsumeOptions{Tag: "A"})
	c.must(err)
	_, pub := c.channel("pub", 1)
	c.must(pub.Confirm())
	c.must(c.b.Partition([]int{3}))
	c.must(pub.Publish("", "qq", sim.PublishOptions{}, sim.Message{Body: []byte("m1")}))
	c.b.Advance(sim.LeaderElection / 2)
	c.b.Heal()
	if leader, _, _ := c.b.QueueLeader("/", "qq"); leader != "rabbit@node3" {
		t.Errorf("leader after a heal within the election: %s, want rabbit@node3", leader)
	}
	if d, ok := cons.Next(); !ok || string(d.Body) != "m1" {
		t.Errorf("after the heal the consumer read %+v, %v; want m1 at once", d, ok)
	}
}

// A quorum queue declared while node 3 is cut off lists a member on every
// node, but the one on node 3 is not online until node 3 restarts (its
// member never started: quorum_status says noproc on the 4.3.6 cluster,
// and list_queues' online leaves it out).
func TestMemberAbsentUntilItsNodeRestarts(t *testing.T) {
	c := newCluster(t)
	_, ch1 := c.channel("on1", 1)
	c.must(c.b.Partition([]int{3}))
	c.quorum(ch1, "qq")
	c.b.Heal()
	online := func() []string {
		d, err := c.b.QueueDetails("/", "qq")
		c.must(err)
		if len(d.Members) != 3 {
			t.Errorf("members %v, want all three nodes", d.Members)
		}
		return d.Online
	}
	if got := online(); len(got) != 2 || got[0] != "rabbit@node1" || got[1] != "rabbit@node2" {
		t.Errorf("online after the heal: %v, want nodes 1 and 2", got)
	}
	c.must(c.b.StopNode(3))
	c.must(c.b.StartNode(3))
	if got := online(); len(got) != 3 {
		t.Errorf("online after node 3 restarted: %v, want all three", got)
	}
}
