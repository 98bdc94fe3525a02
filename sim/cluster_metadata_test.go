package sim_test

import (
	"errors"
	"testing"
	"time"

	"github.com/amqpsim/amqpsim/sim"
)

// TestMetadataWritesOnTheMinority: on a node cut off from the majority,
// every method that writes to the metadata store waits for Khepri's
// timeout, then closes its connection with 541 and its own text
// (partition-metadata-writes.txt; exchange.bind, exchange.unbind, a bind
// that exists and an unbind of a missing binding:
// partition-metadata-binds.txt); exchange.delete times out twice.
// The same methods answer at once on the majority side, and declarations
// of what exists, which only read, answer at once on the minority.
func TestMetadataWritesOnTheMinority(t *testing.T) {
	writes := []struct {
		name string
		wait time.Duration
		call func(ch *sim.Channel) error
		text string
	}{
		{"exchange.declare", sim.MetadataTimeout, func(ch *sim.Channel) error {
			return ch.ExchangeDeclare("x.new", "fanout", sim.ExchangeOptions{})
		}, "failed to declare exchange 'x.new' in vhost '/' because the operation timed out"},
		{"exchange.delete", 2 * sim.MetadataTimeout, func(ch *sim.Channel) error {
			return ch.ExchangeDelete("x1", sim.ExchangeDeleteOptions{})
		}, "failed to delete exchange 'x1' in vhost '/' due to a timeout"},
		{"exchange.delete missing", 2 * sim.MetadataTimeout, func(ch *sim.Channel) error {
			return ch.ExchangeDelete("x.none", sim.ExchangeDeleteOptions{})
		}, "failed to delete exchange 'x.none' in vhost '/' due to a timeout"},
		{"queue.bind", sim.MetadataTimeout, func(ch *sim.Channel) error {
			return ch.QueueBind("cq", "k", "x1", nil)
		}, "Could not add binding due to timeout"},
		{"queue.bind existing", sim.MetadataTimeout, func(ch *sim.Channel) error {
			return ch.QueueBind("cq", "j", "x1", nil)
		}, "Could not add binding due to timeout"},
		{"queue.unbind", sim.MetadataTimeout, func(ch *sim.Channel) error {
			return ch.QueueUnbind("cq", "j", "x1", nil)
		}, "Could not remove binding due to timeout"},
		{"queue.unbind missing", sim.MetadataTimeout, func(ch *sim.Channel) error {
			return ch.QueueUnbind("cq", "none", "x1", nil)
		}, "Could not remove binding due to timeout"},
		{"exchange.bind", sim.MetadataTimeout, func(ch *sim.Channel) error {
			return ch.ExchangeBind("x2", "k", "x1", nil)
		}, "Could not add binding due to timeout"},
		{"exchange.unbind", sim.MetadataTimeout, func(ch *sim.Channel) error {
			return ch.ExchangeUnbind("x2", "k", "x1", nil)
		}, "Could not remove binding due to timeout"},
		{"queue.delete", sim.MetadataTimeout, func(ch *sim.Channel) error {
			_, err := ch.QueueDelete("cq", sim.QueueDeleteOptions{})
			return err
		}, "The operation to delete the queue from the metadata store timed out"},
	}
	setup := func(t *testing.T) *cluster {
		c := newCluster(t)
		_, ch := c.channel("setup", 3)
		_, err := ch.QueueDeclare("cq", sim.QueueOptions{Durable: true})
		c.must(err)
		c.must(ch.ExchangeDeclare("x1", "direct", sim.ExchangeOptions{}))
		c.must(ch.ExchangeDeclare("x2", "direct", sim.ExchangeOptions{}))
		c.must(ch.QueueBind("cq", "j", "x1", nil))
		c.must(c.b.Partition([]int{3}))
		return c
	}
	for _, w := range writes {
		t.Run(w.name, func(t *testing.T) {
			c := setup(t)
			conn, ch := c.channel("c3", 3)
			if err := w.call(ch); !errors.Is(err, sim.ErrQueued) {
				t.Fatalf("on the minority: %v, want ErrQueued", err)
			}
			c.must(c.b.Advance(w.wait - time.Millisecond))
			checkPushes(t, conn)
			c.must(c.b.Advance(time.Millisecond))
			checkPushes(t, conn, "connection.close 541 INTERNAL_ERROR - "+w.text)

			_, ch1 := c.channel("c1", 1)
			if err := w.call(ch1); err != nil {
				t.Errorf("on the majority: %v", err)
			}
		})
	}
	t.Run("reads", func(t *testing.T) {
		c := setup(t)
		_, ch := c.channel("c3", 3)
		c.must(ch.ExchangeDeclare("x1", "direct", sim.ExchangeOptions{}))
		_, err := ch.QueueDeclare("cq", sim.QueueOptions{Durable: true})
		c.must(err)
		_, err = ch.QueueDelete("cq.none", sim.QueueDeleteOptions{})
		c.must(err)
	})
}

// TestQueueWhoseDeleteTimedOut: a classic queue deleted from a node cut
// off with it loses its messages and consumers at once, and after the
// delete's 541 its record stays without a process: a passive declare
// from the other side, even after the heal, waits QueueOperationTimeout
// and answers 404 "... due to timeout" (partition-metadata-writes.txt).
func TestQueueWhoseDeleteTimedOut(t *testing.T) {
	c := newCluster(t)
	conn3, ch3 := c.channel("c3", 3)
	_, err := ch3.QueueDeclare("cq", sim.QueueOptions{Durable: true})
	c.must(err)
	c.must(ch3.Publish("", "cq", sim.PublishOptions{}, persistent("m1")))
	c.must(ch3.Qos(1, 0, false))
	_, err = ch3.Consume("cq", sim.ConsumeOptions{Tag: "A"})
	c.must(err)
	c.must(c.b.Partition([]int{3}))
	checkPushes(t, conn3, "basic.deliver A #1 m1")
	connD, chD := c.channel("d3", 3)
	if _, err := chD.QueueDelete("cq", sim.QueueDeleteOptions{}); !errors.Is(err, sim.ErrQueued) {
		t.Fatalf("delete on the minority: %v, want ErrQueued", err)
	}
	checkPushes(t, conn3, "basic.cancel A")
	c.must(c.b.Advance(sim.MetadataTimeout))
	checkPushes(t, connD, "connection.close 541 INTERNAL_ERROR - The operation to delete the queue from the metadata store timed out")
	c.b.Heal()
	conn1, ch1 := c.channel("c1", 1)
	if _, err := ch1.QueueDeclare("cq", sim.QueueOptions{Passive: true}); !errors.Is(err, sim.ErrQueued) {
		t.Fatalf("passive declare after the heal: %v, want ErrQueued", err)
	}
	c.must(c.b.Advance(sim.QueueOperationTimeout))
	checkPushes(t, conn1, "channel.close 404 NOT_FOUND - failed to perform operation on queue 'cq' in vhost '/' due to timeout")
}
