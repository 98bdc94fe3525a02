package amqptest_test

import (
	"errors"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/amqpsim/amqpsim/amqptest"
	"github.com/amqpsim/amqpsim/sim"
)

// TestClusterThroughClient: amqp091-go clients of a 3-node cluster, in
// memory and over TCP, see a stopped node's shutdown close, a killed
// node's reset socket and refused dials to both, while the third node
// serves on, as on a real 4.3.6 cluster (docs/cluster.md section 1).
func TestClusterThroughClient(t *testing.T) {
	for _, tcp := range []bool{false, true} {
		name := "memory"
		if tcp {
			name = "tcp"
		}
		t.Run(name, func(t *testing.T) {
			// In memory the test runs in a bubble, whose clock the broker
			// follows; a TCP socket is not the bubble's, so the TCP run
			// keeps the manual clock and leaves out the 30 s wait.
			run := synctest.Test
			opts := []amqptest.Option{amqptest.WithConfig(sim.Config{Nodes: 3, Clock: time.Now})}
			if tcp {
				run = func(t *testing.T, f func(*testing.T)) { f(t) }
				opts = []amqptest.Option{amqptest.WithConfig(sim.Config{Nodes: 3}), amqptest.WithTCP()}
			}
			run(t, func(t *testing.T) {
				srv := amqptest.NewServer(t, opts...)
				urls := srv.NodeURLs()
				if len(urls) != 3 || urls[0] != srv.URL() {
					t.Fatalf("NodeURLs %v, URL %s", urls, srv.URL())
				}
				dial := func(n int) (*amqp.Connection, error) {
					return amqp.DialConfig(urls[n-1], amqp.Config{Dial: srv.Dial})
				}
				conns := map[int]*amqp.Connection{}
				closed := map[int]chan *amqp.Error{}
				for n := 1; n <= 3; n++ {
					c, err := dial(n)
					if err != nil {
						t.Fatalf("dial node %d: %v", n, err)
					}
					t.Cleanup(func() { c.Close() })
					conns[n], closed[n] = c, c.NotifyClose(make(chan *amqp.Error, 1))
				}
				for _, c := range srv.Broker().Connections() {
					if c.Node() < 1 {
						t.Errorf("connection %s on node %d", c.Name(), c.Node())
					}
				}
				if got := nodesOf(srv); got != [4]int{0, 1, 1, 1} {
					t.Errorf("connections per node %v, want one on each", got[1:])
				}

				if err := srv.Broker().StopNode(2); err != nil {
					t.Fatal(err)
				}
				e := recv(t, closed[2])
				if e == nil || e.Code != amqp.ConnectionForced || e.Reason != "CONNECTION_FORCED - "+sim.ShutdownText || !e.Server {
					t.Errorf("node 2's client got %+v, want the shutdown close", e)
				}
				if _, err := dial(2); !errors.Is(err, syscall.ECONNREFUSED) {
					t.Errorf("dial to the stopped node: %v, want ECONNREFUSED", err)
				}

				if err := srv.Broker().KillNode(3); err != nil {
					t.Fatal(err)
				}
				if e := recv(t, closed[3]); e == nil || e.Server || !strings.Contains(e.Reason, "connection reset by peer") {
					t.Errorf("node 3's client got %+v, want its socket reset (a client-side error: connection reset by peer)", e)
				}

				ch, err := conns[1].Channel()
				if err != nil {
					t.Fatalf("node 1 after the others went: %v", err)
				}
				if !tcp {
					// 541 after sim.MetadataTimeout on the bubble's clock.
					_, err := ch.QueueDeclare("q", true, false, false, false, nil)
					var e *amqp.Error
					if !errors.As(err, &e) || e.Code != amqp.InternalError {
						t.Errorf("declaring a new queue on a node without a majority: %v, want 541", err)
					}
				}

				if err := srv.Broker().StartNode(2); err != nil {
					t.Fatal(err)
				}
				if c, err := dial(2); err != nil {
					t.Errorf("dial to the restarted node: %v", err)
				} else {
					c.Close()
				}
			})
		})
	}
}

// nodesOf counts the broker's connections by node.
func nodesOf(srv *amqptest.Server) (out [4]int) {
	for _, c := range srv.Broker().Connections() {
		out[c.Node()]++
	}
	return out
}
