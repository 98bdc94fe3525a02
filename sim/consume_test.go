package sim_test

import (
	"regexp"
	"testing"

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

// Deleting a queue cancels its consumers: Consumer.Cancelled reports it, and
// Channel.Cancels hands each basic.cancel once (the conversation:
// queue-deleted-while-consuming.txt).
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
