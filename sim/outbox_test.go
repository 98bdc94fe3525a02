package sim_test

import (
	"testing"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// methods lists the pushes' methods.
func methods(ps []sim.Push) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Method.String())
	}
	return out
}

// What a queue pushes in reaction to a call (a delivery) comes after what
// the channel pushes for it (the publisher confirm): in RabbitMQ the
// channel and the queue are separate processes.
func TestOutboxChannelPushesPrecedeQueuePushes(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{})
	e.consume(e.ch, "q", "c", sim.ConsumeOptions{})
	e.must(e.ch.Confirm())
	e.must(e.ch.Publish("", "q", sim.PublishOptions{}, sim.Message{Body: []byte("m1")}))
	diff(t, "pushes", []string{"basic.ack", "basic.deliver"}, methods(e.conn.Drain(nil)))
}

// A shell finds basic.get-ok in the outbox, before the delivery the get
// caused: the expired message behind the one it took is dead-lettered to a
// queue whose consumer is on the same connection.
func TestOutboxGetReplyPrecedesWhatTheGetCaused(t *testing.T) {
	b := sim.New(sim.Config{})
	conn, err := b.Dial(sim.ConnectOptions{Notify: func() {}})
	if err != nil {
		t.Fatal(err)
	}
	ch, _ := conn.Channel()
	for _, d := range []struct {
		name string
		args sim.Table
	}{{"dlq", nil}, {"src", sim.Table{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": "dlq"}}} {
		if _, err := ch.QueueDeclare(d.name, sim.QueueOptions{Args: d.args}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ch.Consume("dlq", sim.ConsumeOptions{Tag: "c", NoAck: true}); err != nil {
		t.Fatal(err)
	}
	b.Publish("/", "", "src", sim.Message{Body: []byte("m1")})
	b.Publish("/", "", "src", sim.Message{Properties: sim.Properties{Expiration: "0"}, Body: []byte("m2")})
	conn.Drain(nil)
	if _, ok, err := ch.Get("src", true); !ok || err != nil {
		t.Fatalf("get: %t %v", ok, err)
	}
	got := conn.Drain(nil)
	diff(t, "pushes", []string{"basic.get-ok", "basic.deliver"}, methods(got))
	if len(got) == 2 && (string(got[0].Body) != "m1" || string(got[1].Body) != "m2" || got[1].Method != protocol.BasicDeliver) {
		t.Errorf("bodies %q, %q", got[0].Body, got[1].Body)
	}
}
