package sim_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// TestQuorumQueueLosesNothingUnderNodeFaults: whatever nodes stop, crash,
// start, are cut off and heal, in any order, a quorum queue loses no
// message that reached the broker, delivers none twice after its ack and
// confirms each publish at most once (RabbitMQ's guarantee with a
// majority back: docs/cluster.md sections 3, 4 and 7). It nacks only a
// publish that its channel, not yet the queue's enqueuer, waited on while
// the queue stayed out of reach for EnqueuerRegistrationTimeout, and then
// never enqueues it (partition-held-register-timeout.txt). Publishers and an acking
// consumer reconnect to whichever node runs.
func TestQuorumQueueLosesNothingUnderNodeFaults(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := sim.New(sim.Config{Nodes: 3})
		setup, err := b.Dial(sim.ConnectOptions{Node: 1})
		if err != nil {
			t.Fatal(err)
		}
		ch, _ := setup.Channel()
		if _, err := ch.QueueDeclare("qq", sim.QueueOptions{Durable: true, Args: sim.Table{"x-queue-type": "quorum"}}); err != nil {
			t.Fatal(err)
		}
		setup.Close()

		w := &quorumWorld{t: t, b: b, published: map[string]bool{}, queued: map[string]bool{}, acked: map[string]bool{}, confirmed: map[string]bool{}, nacked: map[string]bool{}}
		t.Repeat(map[string]func(*rapid.T){
			"publish": func(t *rapid.T) { w.publish(rapid.IntRange(1, 3).Draw(t, "node")) },
			"consume": func(t *rapid.T) { w.consume(rapid.IntRange(1, 3).Draw(t, "node")) },
			"ack":     func(*rapid.T) { w.ack() },
			"stop": func(t *rapid.T) {
				_ = b.StopNode(rapid.IntRange(1, 3).Draw(t, "node"))
			},
			"kill": func(t *rapid.T) {
				_ = b.KillNode(rapid.IntRange(1, 3).Draw(t, "node"))
			},
			"start": func(t *rapid.T) {
				_ = b.StartNode(rapid.IntRange(1, 3).Draw(t, "node"))
			},
			"partition": func(t *rapid.T) {
				if err := b.Partition([]int{rapid.IntRange(1, 3).Draw(t, "node")}); err != nil {
					t.Fatal(err)
				}
			},
			"heal": func(*rapid.T) { b.Heal() },
			"advance": func(t *rapid.T) {
				d := rapid.SampledFrom([]time.Duration{100 * time.Millisecond, sim.LeaderElection, 70 * time.Second}).Draw(t, "d")
				if err := b.Advance(d); err != nil {
					t.Fatal(err)
				}
			},
			"": func(*rapid.T) { w.collect() },
		})

		// Everything comes back; what was published is then queued or
		// acked, exactly once.
		b.RecoverAfter(0)
		if err := b.Advance(time.Second); err != nil {
			t.Fatal(err)
		}
		w.collect()
		w.ack()
		for _, c := range w.conns() {
			c.Close()
		}
		ready, err := b.QueueMessages("/", "qq")
		if err != nil {
			t.Fatal(err)
		}
		queued := map[string]bool{}
		for _, m := range ready {
			body := string(m.Body)
			if queued[body] || w.acked[body] || w.nacked[body] {
				t.Fatalf("message %s is queued and acked or nacked, or queued twice", body)
			}
			queued[body] = true
		}
		for body := range w.published {
			if !queued[body] && !w.acked[body] {
				t.Fatalf("message %s (confirmed: %v) was lost", body, w.confirmed[body])
			}
		}
		for body := range w.confirmed {
			if !w.published[body] {
				t.Fatalf("confirm for %s, which was not published", body)
			}
		}
	})
}

// quorumWorld is the clients of TestQuorumQueueLosesNothingUnderNodeFaults:
// a publisher per node in confirm mode and one consumer at a time.
type quorumWorld struct {
	t         *rapid.T
	b         *sim.Broker
	pubs      [4]*pubConn // by node
	cons      *sim.Connection
	consCh    *sim.Channel
	unacked   []uint64          // the consumer's delivery tags
	bodies    map[uint64]string // their bodies
	next      int
	published map[string]bool // bodies that reached the broker
	// queued are the bodies of publishes a busy channel queued
	// (ErrQueued): applied later, or lost with their connection before;
	// one that is confirmed reached the broker.
	queued    map[string]bool
	acked     map[string]bool // bodies the consumer acked
	confirmed map[string]bool // bodies whose publish was acked
	nacked    map[string]bool // bodies whose publish was nacked
}

type pubConn struct {
	conn *sim.Connection
	ch   *sim.Channel
	tags map[uint64]string // publish tag -> body, until confirmed
	last uint64
}

func (w *quorumWorld) conns() []*sim.Connection {
	var out []*sim.Connection
	for _, p := range w.pubs {
		if p != nil {
			out = append(out, p.conn)
		}
	}
	if w.cons != nil {
		out = append(out, w.cons)
	}
	return out
}

// dial opens a connection to node n, or reports that it is down.
func (w *quorumWorld) dial(n int) *sim.Connection {
	c, err := w.b.Dial(sim.ConnectOptions{Node: n})
	if errors.Is(err, sim.ErrNodeDown) {
		return nil
	}
	if err != nil {
		w.t.Fatal(err)
	}
	return c
}

func (w *quorumWorld) publish(n int) {
	p := w.pubs[n]
	if p == nil || p.conn.Err() != nil || p.ch.Err() != nil {
		c := w.dial(n)
		if c == nil {
			return
		}
		ch, err := c.Channel()
		if err != nil {
			w.t.Fatal(err)
		}
		if err := ch.Confirm(); err != nil {
			w.t.Fatal(err)
		}
		p = &pubConn{conn: c, ch: ch, tags: map[uint64]string{}}
		w.pubs[n] = p
	}
	w.next++
	body := fmt.Sprintf("m%d", w.next)
	m := sim.Message{Body: []byte(body)}
	m.DeliveryMode = 2
	// A publish the busy channel queues is applied in order, after the
	// others (its tag is the next), unless its connection goes first.
	err := p.ch.Publish("", "qq", sim.PublishOptions{}, m)
	switch {
	case errors.Is(err, sim.ErrQueued):
		w.queued[body] = true
	case err != nil:
		w.t.Fatalf("publish on node %d: %v", n, err)
	default:
		w.published[body] = true
	}
	p.last++
	p.tags[p.last] = body
}

func (w *quorumWorld) consume(n int) {
	if w.cons != nil && w.cons.Err() == nil && w.consCh.Err() == nil {
		return
	}
	c := w.dial(n)
	if c == nil {
		return
	}
	ch, _ := c.Channel()
	if err := ch.Qos(5, 0, false); err != nil {
		w.t.Fatal(err)
	}
	_, err := ch.Consume("qq", sim.ConsumeOptions{Tag: "C"})
	var perr *sim.Error
	if errors.As(err, &perr) && perr.Code == protocol.InternalError {
		return // no majority: RabbitMQ's 541
	}
	if errors.Is(err, sim.ErrQueued) {
		c.Close() // no majority: the consumer gives up rather than wait
		return
	}
	if err != nil {
		w.t.Fatalf("consume on node %d: %v", n, err)
	}
	w.cons, w.consCh, w.unacked, w.bodies = c, ch, nil, map[uint64]string{}
}

// collect reads every connection's pushes: confirms and deliveries.
func (w *quorumWorld) collect() {
	for _, p := range w.pubs {
		if p == nil {
			continue
		}
		for _, push := range p.conn.Drain(nil) {
			switch push.Method {
			case protocol.BasicNack:
				// A publish that blocked its channel, unregistered, for
				// the whole timeout: never enqueued.
				body, ok := p.tags[push.DeliveryTag]
				if !ok || push.Multiple {
					w.t.Fatalf("nack of publish %d (multiple %v), not one waiting for its confirm", push.DeliveryTag, push.Multiple)
				}
				w.nacked[body] = true
				delete(w.published, body)
				delete(w.queued, body)
				delete(p.tags, push.DeliveryTag)
			case protocol.BasicAck:
				for tag, body := range p.tags {
					if tag == push.DeliveryTag || push.Multiple && tag < push.DeliveryTag {
						if w.queued[body] {
							delete(w.queued, body)
							w.published[body] = true
						}
						w.confirmed[body] = true
						delete(p.tags, tag)
					}
				}
			}
		}
	}
	if w.cons == nil {
		return
	}
	for _, push := range w.cons.Drain(nil) {
		if push.Method != protocol.BasicDeliver {
			continue
		}
		body := string(push.Body)
		if w.acked[body] || w.nacked[body] {
			w.t.Fatalf("message %s delivered again after its ack, or after its nack", body)
		}
		w.unacked = append(w.unacked, push.DeliveryTag)
		w.bodies[push.DeliveryTag] = body
	}
}

func (w *quorumWorld) ack() {
	w.collect()
	if w.cons == nil || w.cons.Err() != nil || w.consCh.Err() != nil || len(w.unacked) == 0 {
		return
	}
	last := slices.Max(w.unacked)
	if err := w.consCh.Ack(last, true); err != nil {
		w.t.Fatalf("ack: %v", err)
	}
	for _, tag := range w.unacked {
		w.acked[w.bodies[tag]] = true
	}
	w.unacked = nil
}
