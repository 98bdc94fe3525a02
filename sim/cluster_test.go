package sim_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// cluster is a 3-node broker with helpers that fail the test on error.
type cluster struct {
	t *testing.T
	b *sim.Broker
}

func newCluster(t *testing.T) *cluster {
	t.Helper()
	return &cluster{t: t, b: sim.New(sim.Config{Nodes: 3})}
}

// channel opens a connection named name on node n and a channel on it.
func (c *cluster) channel(name string, n int) (*sim.Connection, *sim.Channel) {
	c.t.Helper()
	conn, err := c.b.Dial(sim.ConnectOptions{Name: name, Node: n})
	if err != nil {
		c.t.Fatalf("dial node %d: %v", n, err)
	}
	ch, err := conn.Channel()
	if err != nil {
		c.t.Fatal(err)
	}
	return conn, ch
}

// quorum declares a durable quorum queue on ch.
func (c *cluster) quorum(ch *sim.Channel, name string) {
	c.t.Helper()
	_, err := ch.QueueDeclare(name, quorumOptions)
	c.must(err)
}

var quorumOptions = sim.QueueOptions{Durable: true, Args: sim.Table{"x-queue-type": "quorum"}}

func (c *cluster) must(err error) {
	c.t.Helper()
	if err != nil {
		c.t.Fatal(err)
	}
}

// pushes renders what the broker pushed to conn since the last call, one
// line a frame.
func pushes(conn *sim.Connection) []string {
	var out []string
	for _, p := range conn.Drain(nil) {
		s := p.Method.String()
		switch p.Method {
		case protocol.BasicConsumeOk:
			s += " " + p.ConsumerTag
		case protocol.QueueDeleteOk:
			s += fmt.Sprintf(" %d", p.MessageCount)
		case protocol.BasicDeliver:
			s += fmt.Sprintf(" %s #%d %s", p.ConsumerTag, p.DeliveryTag, p.Body)
			if p.Redelivered {
				s += " redelivered"
			}
		case protocol.BasicAck, protocol.BasicNack:
			s += fmt.Sprintf(" #%d", p.DeliveryTag)
			if p.Multiple {
				s += " multiple"
			}
		case protocol.BasicCancel:
			s += " " + p.ConsumerTag
		case protocol.ConnectionClose, protocol.ChannelClose:
			if p.Err != nil {
				s += fmt.Sprintf(" %d %s", p.Err.Code, p.Err.Text)
			}
			if p.Drop {
				s += " (dropped)"
			}
		}
		out = append(out, s)
	}
	return out
}

func checkPushes(t *testing.T, conn *sim.Connection, want ...string) {
	t.Helper()
	if diff := cmp.Diff(want, pushes(conn)); diff != "" {
		t.Errorf("pushes to %s (-want +got):\n%s", conn.Name(), diff)
	}
}

func persistent(body string) sim.Message {
	m := sim.Message{Body: []byte(body)}
	m.DeliveryMode = 2
	return m
}

func TestNodeStopClosesItsConnections(t *testing.T) {
	c := newCluster(t)
	on2, _ := c.channel("on2", 2)
	on1, ch1 := c.channel("on1", 1)
	c.must(c.b.StopNode(2))
	checkPushes(t, on2, "connection.close 320 CONNECTION_FORCED - "+sim.ShutdownText+" (dropped)")
	if on2.Err() == nil {
		t.Error("the stopped node's connection is open")
	}
	checkPushes(t, on1)
	if _, err := ch1.QueueDeclare("q", sim.QueueOptions{}); err != nil {
		t.Errorf("a channel on node 1 after node 2 stopped: %v", err)
	}
	if _, err := c.b.Dial(sim.ConnectOptions{Node: 2}); !errors.Is(err, sim.ErrNodeDown) {
		t.Errorf("dial to the stopped node: %v, want ErrNodeDown", err)
	}
	c.must(c.b.KillNode(3))
	c.must(c.b.StartNode(2))
	if _, err := c.b.Dial(sim.ConnectOptions{Node: 2}); err != nil {
		t.Errorf("dial to the restarted node: %v", err)
	}
	if err := c.b.StopNode(3); err == nil {
		t.Error("stopping a killed node succeeded")
	}
	if err := c.b.StopNode(4); err == nil {
		t.Error("stopping node 4 of 3 succeeded")
	}
}

func TestNodeKillDropsItsConnections(t *testing.T) {
	c := newCluster(t)
	on3, ch3 := c.channel("on3", 3)
	_, err := ch3.QueueDeclare("x", sim.QueueOptions{Exclusive: true})
	c.must(err)
	c.must(c.b.KillNode(3))
	checkPushes(t, on3, "connection.close (dropped)")
	if _, err := c.b.QueueStats("/", "x"); err == nil {
		t.Error("the killed connection's exclusive queue is still there")
	}
}

// classicHomeDown sets up docs/cluster.md section 2: a durable classic
// queue homed on node 2 with 3 persistent and 2 transient messages, a
// consumer holding one on node 1, then node 2 stopped or killed.
func classicHomeDown(t *testing.T, kill bool) (c *cluster, on1 *sim.Connection, ch1 *sim.Channel) {
	c = newCluster(t)
	_, ch2 := c.channel("on2", 2)
	_, err := ch2.QueueDeclare("cq", sim.QueueOptions{Durable: true})
	c.must(err)
	for i, body := range []string{"p1", "t1", "p2", "t2", "p3"} {
		m := sim.Message{Body: []byte(body)}
		if i%2 == 0 {
			m = persistent(body)
		}
		c.must(ch2.Publish("", "cq", sim.PublishOptions{}, m))
	}
	on1, ch1 = c.channel("on1", 1)
	c.must(ch1.Qos(1, 0, false))
	_, err = ch1.Consume("cq", sim.ConsumeOptions{Tag: "C"})
	c.must(err)
	checkPushes(t, on1, "basic.deliver C #1 p1")
	if kill {
		c.must(c.b.KillNode(2))
	} else {
		c.must(c.b.StopNode(2))
	}
	checkPushes(t, on1, "basic.cancel C")
	if leader, _, err := c.b.QueueLeader("/", "cq"); err != nil || leader != "rabbit@node2" {
		t.Errorf("cq's home: %q, %v; want rabbit@node2 (declared through node 2)", leader, err)
	}
	return c, on1, ch1
}

func TestClassicQueueHomeStopped(t *testing.T) {
	c, on1, ch1 := classicHomeDown(t, false)
	c.must(ch1.Confirm())
	c.must(ch1.Publish("", "cq", sim.PublishOptions{Mandatory: true}, persistent("new")))
	checkPushes(t, on1, "basic.nack #1 multiple") // no basic.return; multiple as measured
	c.must(ch1.Ack(1, false))                     // the lost delivery: ignored
	checkPushes(t, on1)

	want := "404 NOT_FOUND - queue 'cq' in vhost '/' process is stopped by supervisor"
	for _, op := range []func(ch *sim.Channel) error{
		func(ch *sim.Channel) error {
			_, err := ch.QueueDeclare("cq", sim.QueueOptions{Passive: true})
			return err
		},
		func(ch *sim.Channel) error { _, _, err := ch.Get("cq", false); return err },
		func(ch *sim.Channel) error { _, err := ch.Consume("cq", sim.ConsumeOptions{}); return err },
		func(ch *sim.Channel) error { _, err := ch.QueuePurge("cq"); return err },
	} {
		_, ch := c.channel("op", 1)
		var perr *sim.Error
		if err := op(ch); !errors.As(err, &perr) || fmt.Sprintf("%d %s", perr.Code, perr.Text) != want {
			t.Errorf("operation on cq: %v, want %s", err, want)
		}
	}

	c.must(c.b.StartNode(2))
	_, ch := c.channel("after", 1)
	c.must(ch.Qos(10, 0, false))
	on := connOf(t, c, "after")
	_, err := ch.Consume("cq", sim.ConsumeOptions{Tag: "D"})
	c.must(err)
	// The persistent messages, the delivered one too, in order, none
	// redelivered; the transient ones and the nacked publish are gone.
	checkPushes(t, on, "basic.deliver D #1 p1", "basic.deliver D #2 p2", "basic.deliver D #3 p3")
}

func connOf(t *testing.T, c *cluster, name string) *sim.Connection {
	t.Helper()
	for _, conn := range c.b.Connections() {
		if conn.Name() == name {
			return conn
		}
	}
	t.Fatalf("no connection %q", name)
	return nil
}

func TestClassicQueueHomeKilled(t *testing.T) {
	c, on1, ch1 := classicHomeDown(t, true)
	_, err := ch1.QueueDeclare("cq", sim.QueueOptions{Passive: true})
	if !errors.Is(err, sim.ErrQueued) {
		t.Fatalf("passive declare of a queue whose home crashed: %v, want ErrQueued", err)
	}
	if err := ch1.Ack(1, false); !errors.Is(err, sim.ErrQueued) {
		t.Errorf("a method on the busy channel: %v, want ErrQueued", err)
	}
	c.must(c.b.Advance(sim.QueueOperationTimeout - time.Millisecond))
	checkPushes(t, on1)
	c.must(c.b.Advance(time.Millisecond))
	checkPushes(t, on1, "channel.close 404 NOT_FOUND - failed to perform operation on queue 'cq' in vhost '/' due to timeout")

	c.must(c.b.StartNode(2))
	_, ch := c.channel("after", 3)
	c.must(ch.Qos(10, 0, false))
	_, err = ch.Consume("cq", sim.ConsumeOptions{Tag: "D"})
	c.must(err)
	checkPushes(t, connOf(t, c, "after"),
		"basic.deliver D #1 p1 redelivered", "basic.deliver D #2 p2 redelivered", "basic.deliver D #3 p3 redelivered")
}

func TestNonDurableClassicQueueGoneAfterItsNodeReturns(t *testing.T) {
	c := newCluster(t)
	_, ch2 := c.channel("on2", 2)
	_, err := ch2.QueueDeclare("cq.transient", sim.QueueOptions{})
	c.must(err)
	c.must(c.b.StopNode(2))
	c.must(c.b.StartNode(2))
	_, ch1 := c.channel("on1", 1)
	_, err = ch1.QueueDeclare("cq.transient", sim.QueueOptions{Passive: true})
	var perr *sim.Error
	if !errors.As(err, &perr) || perr.Text != "NOT_FOUND - no queue 'cq.transient' in vhost '/'" {
		t.Errorf("passive declare: %v", err)
	}
}

// quorumSetup is docs/cluster.md section 3: a quorum queue led by node 1,
// a consumer on node 2 holding a delivery, a confirming publisher on
// node 3.
func quorumSetup(t *testing.T) (c *cluster, cons, pub *sim.Connection, pubCh *sim.Channel) {
	c = newCluster(t)
	_, ch1 := c.channel("on1", 1)
	c.quorum(ch1, "qq")
	cons, ch2 := c.channel("cons", 2)
	c.must(ch2.Qos(10, 0, false))
	_, err := ch2.Consume("qq", sim.ConsumeOptions{Tag: "C"})
	c.must(err)
	pub, pubCh = c.channel("pub", 3)
	c.must(pubCh.Confirm())
	c.must(pubCh.Publish("", "qq", sim.PublishOptions{}, persistent("m1")))
	checkPushes(t, pub, "basic.ack #1")
	checkPushes(t, cons, "basic.deliver C #1 m1")
	return c, cons, pub, pubCh
}

func TestQuorumLeaderStopHandsOver(t *testing.T) {
	c, cons, pub, pubCh := quorumSetup(t)
	c.must(c.b.StopNode(1))
	if leader, _, _ := c.b.QueueLeader("/", "qq"); leader == "rabbit@node1" {
		t.Errorf("leader still %s after its node stopped", leader)
	}
	c.must(pubCh.Publish("", "qq", sim.PublishOptions{}, persistent("m2")))
	checkPushes(t, pub, "basic.ack #2")
	checkPushes(t, cons, "basic.deliver C #2 m2") // no cancel, no redelivery
}

// A crash leaves the queue without a leader for the whole election:
// nothing is confirmed or delivered until LeaderElection has passed.
func TestQuorumLeaderKillElects(t *testing.T) {
	c, cons, pub, pubCh := quorumSetup(t)
	c.must(c.b.KillNode(1))
	c.must(pubCh.Publish("", "qq", sim.PublishOptions{}, persistent("m2")))
	checkPushes(t, pub)
	checkPushes(t, cons)
	c.must(c.b.Advance(sim.LeaderElection - time.Millisecond))
	checkPushes(t, pub)
	checkPushes(t, cons)
	c.must(c.b.Advance(time.Millisecond))
	checkPushes(t, pub, "basic.ack #2")
	checkPushes(t, cons, "basic.deliver C #2 m2")
	_, members, _ := c.b.QueueLeader("/", "qq")
	if len(members) != 3 {
		t.Errorf("members %v, want all three nodes", members)
	}
}

func TestQuorumWithoutMajority(t *testing.T) {
	c, cons, pub, pubCh := quorumSetup(t)
	c.must(c.b.StopNode(2 - 1)) // the leader, handed over to 2 or 3
	c.must(c.b.StopNode(2))     // cons's node: its connection closes
	checkPushes(t, cons, "connection.close 320 CONNECTION_FORCED - "+sim.ShutdownText+" (dropped)")
	c.must(pubCh.Publish("", "qq", sim.PublishOptions{}, persistent("m2")))
	c.must(c.b.Advance(time.Minute))
	checkPushes(t, pub) // no confirm, no nack

	// Reads of the metadata work; a get fails at once when the leader is
	// not on this side, a new declare after 30 s.
	_, ch := c.channel("reader", 3)
	if _, err := ch.QueueDeclare("qq", sim.QueueOptions{Passive: true}); err != nil {
		t.Errorf("passive declare without a majority: %v", err)
	}
	declarer, dch := c.channel("declarer", 3)
	if _, err := dch.QueueDeclare("qq.new", quorumOptions); !errors.Is(err, sim.ErrQueued) {
		t.Errorf("new declare without a majority: %v, want ErrQueued", err)
	}
	c.must(c.b.Advance(sim.MetadataTimeout))
	checkPushes(t, declarer, "connection.close 541 INTERNAL_ERROR - Could not declare quorum queue 'qq.new' in vhost '/' on node 'rabbit@node3' because the metadata store operation timed out")

	c.must(c.b.StartNode(1))
	c.must(c.b.Advance(sim.LeaderElection))
	checkPushes(t, pub, "basic.ack #2")
}

func TestPartitionClassicAndQuorum(t *testing.T) {
	c := newCluster(t)
	_, ch1 := c.channel("on1", 1)
	_, err := ch1.QueueDeclare("cqA", sim.QueueOptions{Durable: true})
	c.must(err)
	c.quorum(ch1, "qqA")
	on3, ch3 := c.channel("on3", 3)
	c.must(ch3.Confirm())
	_, err = ch3.Consume("cqA", sim.ConsumeOptions{Tag: "CA"})
	c.must(err)
	_, err = ch3.Consume("qqA", sim.ConsumeOptions{Tag: "QA"})
	c.must(err)
	c.must(c.b.Partition([]int{3}))
	checkPushes(t, on3, "basic.cancel CA")
	c.must(ch3.Publish("", "cqA", sim.PublishOptions{}, persistent("c1")))
	c.must(ch3.Publish("", "qqA", sim.PublishOptions{}, persistent("q1")))
	c.must(c.b.Advance(time.Minute))
	checkPushes(t, on3, "basic.nack #1 multiple")
	c.b.Heal()
	checkPushes(t, on3, "basic.ack #2", "basic.deliver QA #1 q1")
}

func TestQueuePlacement(t *testing.T) {
	c := newCluster(t)
	_, ch2 := c.channel("on2", 2)
	for _, name := range []string{"a", "b"} {
		_, err := ch2.QueueDeclare(name, quorumOptions)
		c.must(err)
		if leader, _, _ := c.b.QueueLeader("/", name); leader != "rabbit@node2" {
			t.Errorf("%s led by %s, want the declaring connection's node (client-local)", name, leader)
		}
	}
	_, err := ch2.QueueDeclare("bal", sim.QueueOptions{Durable: true, Args: sim.Table{"x-queue-type": "quorum", "x-queue-leader-locator": "balanced"}})
	c.must(err)
	if leader, _, _ := c.b.QueueLeader("/", "bal"); leader == "rabbit@node2" {
		t.Errorf("balanced placement chose the node that leads most queues")
	}
}

func TestDeclareThatTimedOutIsNotCommitted(t *testing.T) {
	c := newCluster(t)
	c.must(c.b.StopNode(1))
	c.must(c.b.StopNode(2))
	_, ch := c.channel("on3", 3)
	if _, err := ch.QueueDeclare("cq.new", sim.QueueOptions{Durable: true}); !errors.Is(err, sim.ErrQueued) {
		t.Fatalf("declare without a majority: %v, want ErrQueued", err)
	}
	c.must(c.b.Advance(sim.MetadataTimeout))
	c.must(c.b.StartNode(2))
	if _, err := c.b.QueueStats("/", "cq.new"); err == nil {
		t.Errorf("the declare that timed out took effect with the majority back (partition-metadata-minority.txt: it does not)")
	}
}

// TestFirstQuorumPublishOutOfReachBlocksTheChannel: a channel's first
// publish to a quorum queue whose leader is out of reach waits for its
// registration with the leader, and the channel's later methods wait
// behind it (partition-held-register-blocks-channel.txt,
// partition-pause-minority.txt); at the heal the publish is confirmed and
// the channel resumes: the later publish, queued meanwhile, goes on. Without
// a heal, after EnqueuerRegistrationTimeout the publish is nacked and
// dropped (partition-held-register-timeout.txt). A channel that published
// to the queue before the cut is not blocked
// (partition-held-registered-not-blocked.txt).
func TestFirstQuorumPublishOutOfReachBlocksTheChannel(t *testing.T) {
	c := newCluster(t)
	on1, ch1 := c.channel("on1", 1)
	c.quorum(ch1, "qq")
	_, err := ch1.Consume("qq", sim.ConsumeOptions{Tag: "A", NoAck: true})
	c.must(err)
	_, err = ch1.QueueDeclare("cq", sim.QueueOptions{Durable: true})
	c.must(err)
	pub, pubCh := c.channel("pub", 3)
	c.must(pubCh.Confirm())
	_, early := c.channel("early", 3)
	c.must(early.Publish("", "qq", sim.PublishOptions{}, persistent("m0")))
	checkPushes(t, on1, "basic.deliver A #1 m0")
	c.must(c.b.Partition([]int{3}))
	c.must(pubCh.Publish("", "qq", sim.PublishOptions{}, persistent("m1")))
	if err := pubCh.Publish("", "cq", sim.PublishOptions{}, persistent("m2")); !errors.Is(err, sim.ErrQueued) {
		t.Errorf("a publish behind the blocked one: %v, want ErrQueued", err)
	}
	if err := early.Qos(5, 0, false); err != nil {
		t.Errorf("the channel registered before the cut is blocked: %v", err)
	}
	c.must(c.b.Advance(sim.EnqueuerRegistrationTimeout - time.Millisecond))
	checkPushes(t, pub)
	c.b.Heal()
	checkPushes(t, pub, "basic.ack #1", "basic.ack #2")
	checkPushes(t, on1, "basic.deliver A #2 m1")

	// Registered now: a second cut holds its publishes without blocking.
	c.must(c.b.Partition([]int{3}))
	c.must(pubCh.Publish("", "qq", sim.PublishOptions{}, persistent("m3")))
	c.must(pubCh.Qos(5, 0, false))
	c.b.Heal()
	checkPushes(t, pub, "basic.ack #3")
	checkPushes(t, on1, "basic.deliver A #3 m3")

	// A new channel's first publish, and no heal: nacked at the timeout.
	late, lateCh := c.channel("late", 3)
	c.must(lateCh.Confirm())
	c.must(c.b.Partition([]int{3}))
	c.must(lateCh.Publish("", "qq", sim.PublishOptions{}, persistent("m4")))
	c.must(c.b.Advance(sim.EnqueuerRegistrationTimeout))
	checkPushes(t, late, "basic.nack #1")
	c.b.Heal()
	checkPushes(t, on1)
}

func TestRecoverAfter(t *testing.T) {
	c := newCluster(t)
	c.must(c.b.KillNode(2))
	c.must(c.b.Partition([]int{3}))
	c.b.RecoverAfter(5 * time.Second)
	c.must(c.b.Advance(5*time.Second - time.Millisecond))
	if n := c.b.Nodes()[1]; n.State != sim.NodeKilled {
		t.Errorf("node 2 is %v before the recovery", n.State)
	}
	c.must(c.b.Advance(time.Millisecond))
	for _, n := range c.b.Nodes() {
		if n.State != sim.NodeRunning || len(n.Reaches) != 3 {
			t.Errorf("after the recovery: %+v", n)
		}
	}
}

// TestConsumerCutOffResumesAtHeal: a quorum queue's consumer on a node cut
// off from the majority gets nothing while the cut lasts, and after the
// heal the messages the majority side took meanwhile (docs/cluster.md
// section 7: its backlog is delivered at the heal). Found by
// examples/failover's property test: the consumer, refused while cut off,
// stayed out of the queue's rotation for good.
func TestConsumerCutOffResumesAtHeal(t *testing.T) {
	for _, leader := range []int{1, 3} { // the consumer's side, the other
		t.Run(fmt.Sprintf("leader on node %d", leader), func(t *testing.T) {
			c := newCluster(t)
			_, declarer := c.channel("declarer", leader)
			c.quorum(declarer, "qq")
			on1, ch1 := c.channel("on1", 1)
			c.must(ch1.Qos(5, 0, false))
			_, err := ch1.Consume("qq", sim.ConsumeOptions{Tag: "C"})
			c.must(err)
			on3, ch3 := c.channel("on3", 3)
			c.must(ch3.Confirm())
			c.must(c.b.Partition([]int{1}))
			c.must(c.b.Advance(sim.LeaderElection))
			c.must(ch3.Publish("", "qq", sim.PublishOptions{}, persistent("m1")))
			checkPushes(t, on3, "basic.ack #1")
			checkPushes(t, on1)
			c.b.Heal()
			checkPushes(t, on1, "basic.deliver C #1 m1")
		})
	}
}

// TestAckDuringElectionThenNextDelivery: a consumer on a surviving node
// that acks while its quorum queue elects a leader gets the next message
// once the leader is elected (docs/cluster.md section 3: deliveries pause
// for the election, then resume). Its ack frees its window during the
// election, when the queue cannot deliver; that refusal must not keep it
// out of the rotation afterwards.
func TestAckDuringElectionThenNextDelivery(t *testing.T) {
	c := newCluster(t)
	_, ch1 := c.channel("declarer", 1)
	c.quorum(ch1, "qq")
	on2, ch2 := c.channel("on2", 2)
	c.must(ch2.Qos(1, 0, false))
	_, err := ch2.Consume("qq", sim.ConsumeOptions{Tag: "C"})
	c.must(err)
	_, ch3 := c.channel("on3", 3)
	c.must(ch3.Publish("", "qq", sim.PublishOptions{}, persistent("m1")))
	c.must(ch3.Publish("", "qq", sim.PublishOptions{}, persistent("m2")))
	checkPushes(t, on2, "basic.deliver C #1 m1")
	c.must(c.b.KillNode(1))
	c.must(ch2.Ack(1, false))
	checkPushes(t, on2)
	c.must(c.b.Advance(sim.LeaderElection))
	checkPushes(t, on2, "basic.deliver C #2 m2")
}

func TestClusterNeeds43(t *testing.T) {
	if _, err := sim.Open(sim.Config{Nodes: 3, Version: sim.V4_0}); err == nil {
		t.Error("a 4.0 cluster opened; only 4.3's is measured")
	}
	if _, err := sim.Open(sim.Config{Nodes: 2, NodeNames: []string{"a@h"}}); err == nil {
		t.Error("one name for two nodes accepted")
	}
	b, err := sim.Open(sim.Config{Nodes: 2, NodeNames: []string{"a@h", "b@h"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := b.NodeName(2); got != "b@h" {
		t.Errorf("NodeName(2) = %q", got)
	}
	if got := sim.New(sim.Config{}).Nodes(); len(got) != 1 || got[0].Name != "rabbit@localhost" {
		t.Errorf("a single broker's nodes: %+v", got)
	}
}

// TestClassicHomeStoppedKeepsRequeuedFlag: a delivery its channel
// requeued (the home node's own consumer, closed by the stop) comes back
// redelivered; one a remote channel held comes back not redelivered
// (classic-consumer-on-home-stopped.txt, classic-home-stopped-recovers.txt).
func TestClassicHomeStoppedKeepsRequeuedFlag(t *testing.T) {
	c := newCluster(t)
	_, ch2 := c.channel("on2", 2)
	_, err := ch2.QueueDeclare("cq", sim.QueueOptions{Durable: true})
	c.must(err)
	c.must(ch2.Qos(1, 0, false))
	_, err = ch2.Consume("cq", sim.ConsumeOptions{Tag: "A"})
	c.must(err)
	_, ch1 := c.channel("on1", 1)
	c.must(ch1.Qos(1, 0, false))
	_, err = ch1.Consume("cq", sim.ConsumeOptions{Tag: "B"})
	c.must(err)
	for _, body := range []string{"m1", "m2", "m3"} {
		c.must(ch2.Publish("", "cq", sim.PublishOptions{}, persistent(body)))
	}
	c.must(c.b.StopNode(2))
	c.must(c.b.StartNode(2))
	on3, ch3 := c.channel("on3", 3)
	c.must(ch3.Qos(10, 0, false))
	_, err = ch3.Consume("cq", sim.ConsumeOptions{Tag: "C"})
	c.must(err)
	checkPushes(t, on3, "basic.deliver C #1 m1 redelivered", "basic.deliver C #2 m2", "basic.deliver C #3 m3")
}

func TestClusterTrace(t *testing.T) {
	c := newCluster(t)
	c.channel("on2", 2)
	c.must(c.b.KillNode(2))
	groups := []int{3}
	c.must(c.b.Partition(groups))
	groups[0] = 1
	var got []string
	for _, e := range c.b.Trace() {
		if e.Kind == sim.EventNode || e.Kind == sim.EventConnectionOpen || e.Kind == sim.EventConnectionClose {
			got = append(got, e.String())
		}
	}
	want := []string{
		"0s on2 connection.open vhost=/ node=2",
		"0s cluster.node node=2 reason=kill",
		"0s on2 connection.close node=2 reason=node down",
		"0s cluster.node groups=[[3]] reason=partition",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("trace (-want +got):\n%s", diff)
	}
}

// TestHeldPublishToDeletedQueueIsNotConfirmed: a publish held for a
// quorum queue out of reach gets no confirm when the queue is deleted
// (partition-held-publish-queue-deleted.txt, 4.3.6), and a later publish's
// confirm does not cover its tag. The delete, with a member cut off, is
// answered late: at the heal, or after QuorumDeleteTimeout
// (partition-quorum-delete-member-cut.txt); the queue is gone at once.
func TestHeldPublishToDeletedQueueIsNotConfirmed(t *testing.T) {
	c := newCluster(t)
	on1, ch1 := c.channel("on1", 1)
	c.quorum(ch1, "qq")
	c.quorum(ch1, "qq2")
	_, err := ch1.QueueDeclare("cq", sim.QueueOptions{Durable: true})
	c.must(err)
	pub, pubCh := c.channel("pub", 3)
	c.must(pubCh.Confirm())
	c.must(ch1.Publish("", "qq", sim.PublishOptions{}, persistent("m0")))
	c.must(c.b.Partition([]int{3}))
	c.must(pubCh.Publish("", "qq", sim.PublishOptions{}, persistent("m1")))
	if _, err := ch1.QueueDelete("qq", sim.QueueDeleteOptions{}); !errors.Is(err, sim.ErrQueued) {
		t.Errorf("delete with a member cut off: %v, want ErrQueued", err)
	}
	if _, err := c.b.QueueStats("/", "qq"); err == nil {
		t.Error("the quorum queue is not gone at once")
	}
	c.b.Heal()
	// m0: the count when it was deleted (measured on the 4.3.6 cluster:
	// delete-ok 3 for a queue of 3 messages, docs/cluster.md).
	checkPushes(t, on1, "queue.delete-ok 1")
	checkPushes(t, pub)
	c.must(pubCh.Publish("", "cq", sim.PublishOptions{}, persistent("m2")))
	checkPushes(t, pub, "basic.ack #2")

	c.must(c.b.Partition([]int{3}))
	if _, err := ch1.QueueDelete("qq2", sim.QueueDeleteOptions{}, sim.NoWait); !errors.Is(err, sim.ErrQueued) {
		t.Errorf("delete with a member cut off: %v, want ErrQueued", err)
	}
	if err := ch1.Qos(1, 0, false); !errors.Is(err, sim.ErrQueued) {
		t.Errorf("a qos behind the delete: %v, want ErrQueued", err)
	}
	c.must(c.b.Advance(sim.QuorumDeleteTimeout - time.Millisecond))
	checkPushes(t, on1)
	c.must(c.b.Advance(time.Millisecond))
	// With nowait the delete has no reply; the qos after it has one.
	checkPushes(t, on1, "basic.qos-ok")
	if err := ch1.Qos(2, 0, false); err != nil {
		t.Errorf("the channel after the wait: %v", err)
	}
	c.b.Heal()
}

// TestWaitingCallSucceedsAfterTheHeal: a call waiting for a queue across
// a cut (a consume of a classic queue homed there) succeeds when the cut
// heals before its timeout: the channel resumes and the call, made again,
// succeeds and is answered then; the trace shows the consume once
// (partition-classic-consume-healed.txt, partition-quorum-consume-healed.txt).
func TestWaitingCallSucceedsAfterTheHeal(t *testing.T) {
	c := newCluster(t)
	_, ch1 := c.channel("on1", 1)
	_, err := ch1.QueueDeclare("cq", sim.QueueOptions{Durable: true})
	c.must(err)
	c.quorum(ch1, "qq")
	on3, ch3 := c.channel("on3", 3)
	c.must(c.b.Partition([]int{3}))
	for i, q := range []string{"cq", "qq"} {
		if _, err := ch3.Consume(q, sim.ConsumeOptions{Tag: q}); !errors.Is(err, sim.ErrQueued) {
			t.Fatalf("consume of %s across the cut: %v, want ErrQueued", q, err)
		}
		c.must(c.b.Advance(10 * time.Second))
		if i > 0 { // the second cut cancels cq's consumer
			checkPushes(t, on3, "basic.cancel cq")
		}
		c.b.Heal()
		checkPushes(t, on3, "basic.consume-ok "+q)
		c.must(c.b.Advance(time.Minute))
		checkPushes(t, on3)
		c.must(ch1.Publish("", q, sim.PublishOptions{}, persistent("m-"+q)))
		checkPushes(t, on3, fmt.Sprintf("basic.deliver %s #%d m-%s", q, i+1, q))
		c.must(ch3.Ack(uint64(i+1), false))
		c.must(c.b.Partition([]int{3}))
	}
	consumes := 0
	for _, e := range c.b.Trace() {
		if e.Kind == sim.EventCall && e.Method == protocol.BasicConsume && e.Conn == "on3" {
			consumes++
		}
	}
	if consumes != 2 {
		t.Errorf("the trace shows %d consumes on on3, want 2 (each once)", consumes)
	}
	c.b.Heal()
}

// A durable classic queue whose home is down while a message's TTL passes
// drops the message when it recovers (rabbit_amqqueue_process drops the
// expired head at init and sets the TTL timer afresh): dead-lettered when
// the queue has a dead-letter exchange. Issue 26's trial user found it
// ready minutes after StartNode.
func TestClassicTTLPassesWhileHomeIsDown(t *testing.T) {
	for _, fault := range []string{"stop", "kill"} {
		t.Run(fault, func(t *testing.T) {
			c := newCluster(t)
			_, ch := c.channel("app", 2)
			_, err := ch.QueueDeclare("dlq", sim.QueueOptions{Durable: true})
			c.must(err)
			_, err = ch.QueueDeclare("q", sim.QueueOptions{Durable: true, Args: sim.Table{
				"x-dead-letter-exchange": "", "x-dead-letter-routing-key": "dlq"}})
			c.must(err)
			for _, exp := range []string{"5000", "60000"} {
				c.must(ch.Publish("", "q", sim.PublishOptions{}, sim.Message{Properties: protocol.Properties{DeliveryMode: 2, Expiration: exp}, Body: []byte(exp)}))
			}
			if fault == "stop" {
				c.must(c.b.StopNode(2))
			} else {
				c.must(c.b.KillNode(2))
			}
			c.b.Advance(10 * time.Second)
			c.must(c.b.StartNode(2))
			st, err := c.b.QueueStats("/", "q")
			c.must(err)
			dlq, err := c.b.QueueStats("/", "dlq")
			c.must(err)
			if st.Ready != 1 || dlq.Ready != 1 {
				t.Fatalf("after the restart: q %+v, dlq %+v; want the expired message dead-lettered, the other kept", st, dlq)
			}
			c.b.Advance(60 * time.Second)
			if st, _ = c.b.QueueStats("/", "q"); st.Ready != 0 {
				t.Fatalf("60 s later: q %+v; want the second message expired too", st)
			}
		})
	}
}
