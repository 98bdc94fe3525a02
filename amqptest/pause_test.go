package amqptest_test

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/amqpsim/amqpsim/amqptest"
	"github.com/amqpsim/amqpsim/sim"
)

// TestHungNodeThroughClient: amqp091-go clients of a 3-node cluster whose
// node 2 hangs (sim.Broker.PauseNode), in a bubble whose clock the broker
// follows: node 2's client hears nothing, not even heartbeats, and gives
// up when its heartbeat deadline passes (1.5 times the 10 s it asks for,
// after the last frame it read: 10-15 s on a real 4.3.6 cluster,
// pause-node-silent-connection.txt); node 1's client is untouched, and
// its publish to a classic queue homed on node 2 is confirmed only once
// node 2 runs again (pause-node-classic-home.txt).
func TestHungNodeThroughClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := amqptest.NewServer(t, amqptest.WithConfig(sim.Config{Nodes: 3, Clock: time.Now}))
		urls := srv.NodeURLs()
		dial := func(n int) *amqp.Connection {
			c, err := amqp.DialConfig(urls[n-1], amqp.Config{Dial: srv.Dial})
			if err != nil {
				t.Fatalf("dial node %d: %v", n, err)
			}
			t.Cleanup(func() { c.Close() })
			return c
		}
		on2 := dial(2)
		closed2 := on2.NotifyClose(make(chan *amqp.Error, 1))
		ch2, err := on2.Channel()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ch2.QueueDeclare("cq", true, false, false, false, nil); err != nil {
			t.Fatal(err)
		}
		on1 := dial(1)
		closed1 := on1.NotifyClose(make(chan *amqp.Error, 1))
		pub, err := on1.Channel()
		if err != nil {
			t.Fatal(err)
		}
		if err := pub.Confirm(false); err != nil {
			t.Fatal(err)
		}

		if err := srv.Broker().PauseNode(2); err != nil {
			t.Fatal(err)
		}
		dc, err := pub.PublishWithDeferredConfirm("", "cq", false, false, amqp.Publishing{Body: []byte("m1")})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(9 * time.Second)
		synctest.Wait()
		select {
		case e := <-closed2:
			t.Fatalf("node 2's client gave up within 9 s: %v", e)
		case <-dc.Done():
			t.Fatal("the publish to node 2's queue was confirmed while node 2 hangs")
		default:
		}
		time.Sleep(7 * time.Second)
		synctest.Wait()
		select {
		case e := <-closed2:
			if e == nil || e.Server || !strings.Contains(e.Reason, "i/o timeout") {
				t.Errorf("node 2's client ended with %+v, want its heartbeat deadline (i/o timeout)", e)
			}
		default:
			t.Error("node 2's client still waits 16 s after the hang")
		}
		select {
		case e := <-closed1:
			t.Fatalf("node 1's client ended: %v", e)
		default:
		}

		if err := srv.Broker().ResumeNode(2); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		select {
		case <-dc.Done():
			if !dc.Acked() {
				t.Error("the publish to node 2's queue was nacked after the hang")
			}
		default:
			t.Error("the publish to node 2's queue is not confirmed once node 2 runs again")
		}
		if got := nodesOf(srv); got[2] != 0 {
			t.Errorf("%d connections on node 2 once it runs again; its client had closed its own", got[2])
		}
		if n, err := srv.Broker().QueueStats("/", "cq"); err != nil || n.Ready != 1 {
			t.Errorf("cq after the hang: %+v, %v; want the message", n, err)
		}
	})
}
