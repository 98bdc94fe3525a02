package sim_test

import (
	"fmt"
	"regexp"
	"testing"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// RabbitMQ generates consumer tags "amq.ctag-" followed by 22 base64url characters.
func TestConsumeServerGeneratedTag(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{})
	re := regexp.MustCompile(`^amq\.ctag-[A-Za-z0-9_-]{22}$`)
	seen := map[string]bool{}
	for i := 0; i < 3; i++ {
		c := e.consume(e.ch, "q", "", sim.ConsumeOptions{})
		if !re.MatchString(c.Tag()) {
			t.Errorf("tag %q does not match %s", c.Tag(), re)
		}
		if seen[c.Tag()] {
			t.Errorf("tag %q generated twice", c.Tag())
		}
		seen[c.Tag()] = true
	}
}

// Reusing a live consumer tag on the same channel is 530 NOT_ALLOWED, closing the connection.
func TestConsumeTagReuseClosesConnection(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{})
	other := e.channel(e.conn)
	e.consume(e.ch, "q", "t", sim.ConsumeOptions{})
	_, err := e.ch.Consume("q", sim.ConsumeOptions{Tag: "t"})
	wantErr(t, err, 530, "NOT_ALLOWED - attempt to reuse consumer tag 't'", protocol.Method{Class: 60, ID: 20})
	wantClosed(t, e.conn.Err(), asError(err))
	wantClosed(t, other.Err(), asError(err))
}

// The tag check comes before the queue lookup: reuse against a missing queue is still 530 (checked against RabbitMQ 3.10.8).
func TestConsumeTagReuseCheckedBeforeQueueExists(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{})
	e.consume(e.ch, "q", "t", sim.ConsumeOptions{})
	_, err := e.ch.Consume("missing", sim.ConsumeOptions{Tag: "t"})
	wantErr(t, err, 530, "NOT_ALLOWED - attempt to reuse consumer tag 't'", protocol.BasicConsume)
}

// A tag is free again once its consumer is cancelled, and tags are per channel.
func TestConsumeTagReusableAfterCancelAndOnOtherChannel(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{})
	e.consume(e.ch, "q", "t", sim.ConsumeOptions{})
	e.consume(e.channel(e.conn), "q", "t", sim.ConsumeOptions{})
	e.must(e.ch.Cancel("t"))
	e.consume(e.ch, "q", "t", sim.ConsumeOptions{})
}

// x-priority must be an integer: anything else is 406 invalid arg (text checked against RabbitMQ 3.10.8).
func TestConsumeXPriorityMustBeInteger(t *testing.T) {
	tests := []struct {
		value any
		text  string
	}{
		{"high", `PRECONDITION_FAILED - invalid arg 'x-priority' for queue 'q' in vhost '/': "expected integer, got longstr"`},
		{1.5, `PRECONDITION_FAILED - invalid arg 'x-priority' for queue 'q' in vhost '/': "expected integer, got double"`},
		{true, `PRECONDITION_FAILED - invalid arg 'x-priority' for queue 'q' in vhost '/': "expected integer, got bool"`},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%T", tt.value), func(t *testing.T) {
			e := newEnv(t)
			e.declare("q", sim.QueueOptions{})
			_, err := e.ch.Consume("q", sim.ConsumeOptions{Args: sim.Table{"x-priority": tt.value}})
			wantErr(t, err, 406, tt.text, protocol.BasicConsume)
			if e.conn.Err() != nil {
				t.Errorf("connection closed for a soft error: %v", e.conn.Err())
			}
		})
	}
}

// Every integer type is accepted for x-priority.
func TestConsumeXPriorityAcceptsIntegerTypes(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{})
	for i, v := range []any{int8(1), uint8(2), int16(3), uint16(4), int32(5), uint32(6), int64(7), 8} {
		c, err := e.ch.Consume("q", sim.ConsumeOptions{Args: sim.Table{"x-priority": v}})
		e.must(err)
		if got := c.Stats().Priority; got != i+1 {
			t.Errorf("%T: priority %d, want %d", v, got, i+1)
		}
	}
}

// Consuming from a missing queue is 404; an empty name without a declared queue is 404 "no previously declared queue".
func TestConsumeMissingQueue(t *testing.T) {
	e := newEnv(t)
	_, err := e.ch.Consume("nope", sim.ConsumeOptions{})
	wantErr(t, err, 404, "NOT_FOUND - no queue 'nope' in vhost '/'", protocol.BasicConsume)
	ch := e.channel(e.conn)
	_, err = ch.Consume("", sim.ConsumeOptions{})
	wantErr(t, err, 404, "NOT_FOUND - no previously declared queue", protocol.BasicConsume)
}

// An empty queue name means the last queue declared on the channel.
func TestConsumeEmptyNameUsesLastDeclaredQueue(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{})
	c := e.consume(e.ch, "", "c", sim.ConsumeOptions{})
	if c.Queue() != "q" {
		t.Errorf("queue = %q, want q", c.Queue())
	}
}

// basic.cancel does not requeue: the deliveries stay on the channel, ackable later.
func TestCancelKeepsUnackedDeliveriesAckable(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{})
	c := e.consume(e.ch, "q", "c", sim.ConsumeOptions{})
	e.publish("q", "m1", "m2")
	e.must(e.ch.Cancel("c"))
	e.publish("q", "m3")
	diff(t, "deliveries", []string{"m1", "m2"}, bodies(c.Deliveries()))
	diff(t, "stats", sim.QueueStats{Vhost: "/", Name: "q", Ready: 1, Unacked: 2, Bytes: 2}, e.stats("q"))
	if !c.Cancelled() {
		t.Error("consumer not cancelled")
	}
	e.must(e.ch.Ack(0, true))
	diff(t, "after ack", sim.QueueStats{Vhost: "/", Name: "q", Ready: 1, Bytes: 2}, e.stats("q"))
}

// A cancelled consumer's unacked deliveries are requeued when its channel closes.
func TestCancelledConsumerDeliveriesRequeuedOnClose(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{})
	e.consume(e.ch, "q", "c", sim.ConsumeOptions{})
	e.publish("q", "m1", "m2")
	e.must(e.ch.Cancel("c"))
	e.must(e.ch.Close())
	diff(t, "ready", []string{"m1", "m2"}, e.ready("q"))
}

// Cancelling an unknown tag is not an error (cancel-ok is returned).
func TestCancelUnknownTagIsOK(t *testing.T) {
	e := newEnv(t)
	e.must(e.ch.Cancel("never-existed"))
	if e.ch.Err() != nil {
		t.Fatal(e.ch.Err())
	}
}

// Deleting a queue cancels its consumers; clients with consumer_cancel_notify get basic.cancel.
func TestQueueDeletedCancelsConsumersWithNotify(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{})
	c1 := e.consume(e.ch, "q", "c1", sim.ConsumeOptions{})
	c2 := e.consume(e.ch, "q", "c2", sim.ConsumeOptions{})
	ch2 := e.channel(e.conn)
	_, err := ch2.QueueDelete("q", sim.QueueDeleteOptions{})
	e.must(err)
	diff(t, "cancels", []sim.Cancellation{{ConsumerTag: "c1"}, {ConsumerTag: "c2"}}, e.ch.Cancels())
	if !c1.Cancelled() || !c2.Cancelled() {
		t.Error("consumers not cancelled")
	}
	if got := e.ch.Cancels(); len(got) != 0 {
		t.Errorf("cancels read twice: %v", got)
	}
}

// Clients that do not announce consumer_cancel_notify are not told; the consumer silently goes.
func TestQueueDeletedNoCancelNotify(t *testing.T) {
	b := sim.New(sim.Config{})
	conn, err := b.Dial(sim.ConnectOptions{NoCancelNotify: true})
	if err != nil {
		t.Fatal(err)
	}
	ch, _ := conn.Channel()
	if _, err := ch.QueueDeclare("q", sim.QueueOptions{}); err != nil {
		t.Fatal(err)
	}
	c, _ := ch.Consume("q", sim.ConsumeOptions{Tag: "c"})
	if _, err := ch.QueueDelete("q", sim.QueueDeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	diff(t, "cancels", []sim.Cancellation(nil), ch.Cancels())
	if !c.Cancelled() {
		t.Error("consumer not cancelled")
	}
}

// Deliveries from a deleted queue can still be acked without error.
func TestAckAfterQueueDeletedIsIgnored(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{})
	e.consume(e.ch, "q", "c", sim.ConsumeOptions{})
	e.publish("q", "m1", "m2")
	_, err := e.ch.QueueDelete("q", sim.QueueDeleteOptions{})
	e.must(err)
	e.must(e.ch.Ack(1, false))
	e.must(e.ch.Nack(2, false, true))
	if e.ch.Err() != nil || e.ch.Stats().Unacked != 0 {
		t.Errorf("err=%v unacked=%d", e.ch.Err(), e.ch.Stats().Unacked)
	}
}
