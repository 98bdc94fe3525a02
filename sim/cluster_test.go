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

// A cluster's conversations are the cluster scenarios (scenarios/cluster/,
// recorded on a 3-node RabbitMQ 4.3.6 cluster) and, where the recordings
// leave a rule open, the hand-written ones of scenarios/testdata/cluster
// (exact timeouts, steps no recording takes); what stays here is the Go
// API's (node errors, RecoverAfter, the trace, ErrQueued), balanced
// placement, and a choice the recordings leave open (whether a declare
// that timed out takes effect once a majority is back:
// metadata-no-majority.txt).

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
