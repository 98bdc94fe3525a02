package wire

import (
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"

	"github.com/amqpsim/amqpsim/sim"
)

// TestServerAnswersQueuedMethodsInOrder: the frames a client sends on a
// channel that waits in a call (a passive declare of a classic queue
// whose home is cut off) are answered when the call ends, in order, from
// the broker's outbox: the late declare-ok, then the replies of the
// methods queued behind it, none for the one sent with nowait; the
// server holds nothing back itself.
func TestServerAnswersQueuedMethodsInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := sim.New(sim.Config{Nodes: 3})
		s := NewServer(b)
		s.Logf = t.Logf
		defer s.Close()
		home, err := b.Dial(sim.ConnectOptions{Node: 1})
		if err != nil {
			t.Fatal(err)
		}
		hch, _ := home.Channel()
		if _, err := hch.QueueDeclare("cq1", sim.QueueOptions{Durable: true}); err != nil {
			t.Fatal(err)
		}
		if err := b.Partition([]int{3}); err != nil {
			t.Fatal(err)
		}

		client, server := Pipe()
		defer client.Close()
		if err := s.ServeConnNode(server, 3); err != nil {
			t.Fatal(err)
		}
		c := &rawClient{t: t, conn: client, fr: NewFrameReader(client), fw: NewFrameWriter(client)}
		c.ready()
		c.send(1, &ChannelOpen{})
		c.expect()
		c.send(1, &QueueDeclare{Queue: "cq1", Passive: true})
		c.send(1, &BasicQos{PrefetchCount: 1})
		c.send(1, &QueueDeclare{Queue: "cq1", Passive: true, NoWait: true})
		c.send(1, &BasicQos{PrefetchCount: 2})
		synctest.Wait() // the server has applied the four: the broker queued them
		if n := channelOn(t, b, 3).Stats().Prefetch; n != 0 {
			t.Errorf("prefetch %d before the heal, want 0: the qos waits", n)
		}
		b.Heal()
		var got []Method
		for range 3 {
			got = append(got, c.expect())
		}
		want := []Method{&QueueDeclareOk{Queue: "cq1"}, &BasicQosOk{}, &BasicQosOk{}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("replies (-want +got):\n%s", diff)
		}
	})
}

// channelOn returns the first channel of the broker's connection on node n.
func channelOn(t *testing.T, b *sim.Broker, n int) *sim.Channel {
	t.Helper()
	for _, c := range b.Connections() {
		if c.Node() == n {
			if chs := c.Channels(); len(chs) > 0 {
				return chs[0]
			}
		}
	}
	t.Fatalf("no channel on node %d", n)
	return nil
}
