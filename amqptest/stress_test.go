package amqptest_test

import (
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/amqpsim/amqpsim/amqptest"
	"github.com/amqpsim/amqpsim/sim"
)

// stressCounts is what the clients did, to account for every message.
type stressCounts struct {
	published, acked, dropped atomic.Int64
}

// TestStress: 100 connections × 10 channels publish, get, consume, ack,
// nack, reject, cancel and close channels and connections at random
// against one broker over the in-memory transport, in a synctest bubble.
// At the end every published message is acknowledged, dropped (nack/reject
// without requeue) or ready in its queue, with nothing left unacked.
func TestStress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		conns, chans, ops, rounds := 100, 10, 12, 2
		if testing.Short() {
			conns, ops = 20, 8
		}
		const queues = 8
		srv := amqptest.NewServer(t, amqptest.WithConfig(sim.Config{NoTrace: true}))
		setup := channel(t, dial(t, srv))
		for i := range queues {
			declare(t, setup, fmt.Sprintf("stress-%d", i))
		}
		var n stressCounts
		var wg sync.WaitGroup
		for c := range conns {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(c), 42))
				for r := range rounds {
					var nc net.Conn
					dialer := func(network, addr string) (net.Conn, error) {
						c, err := srv.Dial(network, addr)
						nc = c
						return c, err
					}
					conn, err := amqp.DialConfig(srv.URL()+"?heartbeat=0", amqp.Config{Dial: dialer})
					if err != nil {
						t.Errorf("conn %d: %v", c, err)
						return
					}
					var cw sync.WaitGroup
					for k := range chans {
						seed := rng.Uint64()
						cw.Go(func() { stressChannel(t, conn, rand.New(rand.NewPCG(seed, uint64(k))), ops, &n) })
					}
					cw.Wait()
					if r == rounds-1 || rng.IntN(2) == 0 {
						conn.Close()
					} else {
						// An abrupt disconnect (no connection.close): the
						// broker requeues what the connection held.
						nc.Close()
					}
				}
			})
		}
		waitGroup(t, &wg, "the clients to finish (one is stuck)")
		// Every client connection is closed; synctest.Wait returns once the
		// server has finished with them (abrupt ones end when it reads EOF).
		synctest.Wait()
		if n := srv.Wire().ConnectionCount(); n != 1 {
			t.Errorf("%d connections left, want the setup one", n)
		}
		var ready, unacked int64
		for _, s := range srv.Broker().Queues() {
			ready += int64(s.Ready)
			unacked += int64(s.Unacked)
		}
		pub, ack, drop := n.published.Load(), n.acked.Load(), n.dropped.Load()
		t.Logf("published %d, acked %d, dropped %d, ready %d", pub, ack, drop, ready)
		if unacked != 0 || pub != ack+drop+ready {
			t.Errorf("lost or duplicated messages: published %d != acked %d + dropped %d + ready %d (unacked %d)", pub, ack, drop, ready, unacked)
		}
		if pub == 0 || ack == 0 || drop == 0 {
			t.Errorf("the run did too little: %d published, %d acked, %d dropped", pub, ack, drop)
		}
	})
}

// stressChannel runs ops random operations on a fresh channel of conn.
func stressChannel(t *testing.T, conn *amqp.Connection, rng *rand.Rand, ops int, n *stressCounts) {
	ch, err := conn.Channel()
	if err != nil {
		t.Errorf("channel: %v", err)
		return
	}
	queue := func() string { return fmt.Sprintf("stress-%d", rng.IntN(8)) }
	settle := func(d amqp.Delivery) {
		switch rng.IntN(6) {
		case 0, 1, 2:
			if d.Ack(false) == nil {
				n.acked.Add(1)
			}
		case 3:
			d.Nack(false, true)
		case 4:
			if d.Nack(false, false) == nil {
				n.dropped.Add(1)
			}
		case 5:
			if d.Reject(false) == nil {
				n.dropped.Add(1)
			}
		}
	}
	confirming := rng.IntN(2) == 0
	if confirming {
		if err := ch.Confirm(false); err != nil {
			t.Errorf("confirm: %v", err)
			return
		}
	}
	for range ops {
		switch rng.IntN(10) {
		case 0, 1, 2, 3:
			for range 1 + rng.IntN(4) {
				body := []byte(fmt.Sprintf("m%d", rng.Uint32()))
				if confirming {
					dc, err := ch.PublishWithDeferredConfirm("", queue(), false, false, amqp.Publishing{Body: body})
					if err != nil {
						t.Errorf("publish: %v", err)
						return
					}
					select { // bounded, and not fatal: this is not the test's goroutine
					case <-dc.Done():
						if !dc.Acked() {
							t.Errorf("publish %d nacked", dc.DeliveryTag)
							return
						}
					case <-time.After(wait):
						t.Errorf("waited %v for the confirm of publish %d", wait, dc.DeliveryTag)
						return
					}
				} else if err := ch.Publish("", queue(), false, false, amqp.Publishing{Body: body}); err != nil {
					t.Errorf("publish: %v", err)
					return
				}
				n.published.Add(1)
			}
		case 4, 5:
			d, ok, err := ch.Get(queue(), false)
			if err != nil {
				t.Errorf("get: %v", err)
				return
			}
			if ok {
				settle(d)
			}
		case 6, 7, 8:
			if err := ch.Qos(1+rng.IntN(5), 0, false); err != nil {
				t.Errorf("qos: %v", err)
				return
			}
			tag := fmt.Sprintf("c%d", rng.Uint64())
			ds, err := ch.Consume(queue(), tag, false, false, false, false, nil)
			if err != nil {
				t.Errorf("consume: %v", err)
				return
			}
			for range 1 + rng.IntN(5) {
				select {
				case d := <-ds:
					settle(d)
				case <-time.After(5 * time.Millisecond): // fake time: fires once all are idle
				}
			}
			// Deliveries still in flight stay unacked, and are requeued when
			// the channel closes.
			if err := ch.Cancel(tag, false); err != nil {
				t.Errorf("cancel: %v", err)
				return
			}
		case 9:
			if err := ch.Close(); err != nil {
				t.Errorf("close: %v", err)
				return
			}
			if ch, err = conn.Channel(); err != nil {
				t.Errorf("reopen: %v", err)
				return
			}
			if confirming {
				ch.Confirm(false)
			}
		}
	}
	if err := ch.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
}
