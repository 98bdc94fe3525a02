package sim_test

import (
	"testing"
	"time"

	"github.com/amqpsim/amqpsim/sim"
)

// TestStreamAcrossACut: node 3, cut off from a stream led by node 1,
// loses it: its publish is never stored nor confirmed, and its consumer
// reads nothing more, even after the heal; node 1's publishes are
// confirmed, and a consumer that attaches on node 3 after the heal reads
// all that was stored (partition-stream.txt). A quorum queue instead
// holds the publish and confirms it at the heal
// (TestPartitionClassicAndQuorum).
func TestStreamAcrossACut(t *testing.T) {
	c := newCluster(t)
	on1, ch1 := c.channel("on1", 1)
	_, err := ch1.QueueDeclare("s", sim.QueueOptions{Durable: true, Args: sim.Table{"x-queue-type": "stream"}})
	c.must(err)
	c.must(ch1.Confirm())
	on3, ch3 := c.channel("on3", 3)
	c.must(ch3.Qos(10, 0, false))
	_, err = ch3.Consume("s", sim.ConsumeOptions{Tag: "A", Args: sim.Table{"x-stream-offset": "first"}})
	c.must(err)
	c.must(ch3.Confirm())
	c.must(ch3.Publish("", "s", sim.PublishOptions{}, persistent("m1")))
	checkPushes(t, on3, "basic.ack #1", "basic.deliver A #1 m1")
	c.must(c.b.Partition([]int{3}))
	c.must(ch3.Publish("", "s", sim.PublishOptions{}, persistent("m2")))
	c.must(ch1.Publish("", "s", sim.PublishOptions{}, persistent("m3")))
	checkPushes(t, on1, "basic.ack #1")
	c.must(c.b.Advance(time.Minute))
	c.b.Heal()
	c.must(ch1.Publish("", "s", sim.PublishOptions{}, persistent("m4")))
	checkPushes(t, on1, "basic.ack #2")
	c.must(c.b.Advance(time.Minute))
	checkPushes(t, on3)
	c.must(ch3.Publish("", "s", sim.PublishOptions{}, persistent("m5")))
	c.must(c.b.Advance(time.Second))
	checkPushes(t, on3, "basic.ack #3") // alone: m2's tag stays unconfirmed
	late, chB := c.channel("late3", 3)
	c.must(chB.Qos(10, 0, false))
	_, err = chB.Consume("s", sim.ConsumeOptions{Tag: "B", Args: sim.Table{"x-stream-offset": "first"}})
	c.must(err)
	checkPushes(t, late, "basic.deliver B #1 m1", "basic.deliver B #2 m3", "basic.deliver B #3 m4", "basic.deliver B #4 m5")
}
