package sim_test

import (
	"fmt"
	"strings"
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

// basic.get-ok is in the outbox, before the delivery the get caused: the
// expired message behind the one it took is dead-lettered to a queue
// whose consumer is on the same connection.
func TestOutboxGetReplyPrecedesWhatTheGetCaused(t *testing.T) {
	b := sim.New(sim.Config{})
	conn, err := b.Dial(sim.ConnectOptions{})
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

// confirmLines lists the confirms among pushes as "ack 3 m" (m: multiple).
func confirmLines(ps []sim.Push) []string {
	var out []string
	for _, p := range ps {
		if p.Method == protocol.BasicAck || p.Method == protocol.BasicNack {
			s := fmt.Sprintf("%s %d", strings.TrimPrefix(p.Method.String(), "basic."), p.DeliveryTag)
			if p.Multiple {
				s += " m"
			}
			out = append(out, s)
		}
	}
	return out
}

// Without batching every publish is confirmed at once: a lone ack without
// multiple, a lone nack with it (RabbitMQ 3.10.8's send_confirms has a
// single-tag clause, send_nacks has none; measured with a reject-publish
// queue).
func TestConfirmsOnePerCall(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{})
	e.declare("full", sim.QueueOptions{Args: sim.Table{"x-max-length": int32(0), "x-overflow": "reject-publish"}})
	e.must(e.ch.Confirm())
	e.must(e.ch.Publish("", "q", sim.PublishOptions{}, sim.Message{}))
	e.must(e.ch.Publish("", "full", sim.PublishOptions{}, sim.Message{}))
	diff(t, "confirms", []string{"ack 1", "nack 2 m"}, confirmLines(e.conn.Drain(nil)))
}

// A batched connection confirms the publishes of one batch together when
// it is idle, as rabbit_channel:coalesce_and_send does: the tags below the
// first nack in one multiple ack, the rest one by one, then the nacks.
func TestConfirmsCoalescedPerBatch(t *testing.T) {
	b := sim.New(sim.Config{})
	conn, _ := b.Dial(sim.ConnectOptions{Shell: sim.ShellOptions{Batched: true}})
	ch, _ := conn.Channel()
	ch.QueueDeclare("q", sim.QueueOptions{})
	ch.QueueDeclare("full", sim.QueueOptions{Args: sim.Table{"x-max-length": int32(0), "x-overflow": "reject-publish"}})
	ch.Confirm()
	for range 3 {
		ch.Publish("", "q", sim.PublishOptions{}, sim.Message{})
	}
	if got := confirmLines(conn.Drain(nil)); len(got) != 0 {
		t.Fatalf("confirmed before idle: %v", got)
	}
	conn.Idle()
	diff(t, "one batch", []string{"ack 3 m"}, confirmLines(conn.Drain(nil)))
	for _, q := range []string{"q", "full", "q", "q"} { // tags 4-7, 5 refused
		ch.Publish("", q, sim.PublishOptions{}, sim.Message{})
	}
	conn.Idle()
	diff(t, "with a nack", []string{"ack 4 m", "ack 6", "ack 7", "nack 5"}, confirmLines(conn.Drain(nil)))
	conn.Idle()
	if got := confirmLines(conn.Drain(nil)); len(got) != 0 {
		t.Errorf("idle twice confirmed again: %v", got)
	}
}

// The outbox is the same whoever reads it: a connection whose shell is
// woken by Notify is pushed exactly what an in-process one is, and each
// in-process reader takes its kind from it, leaving the rest to Drain.
func TestOutboxOneMode(t *testing.T) {
	run := func(o sim.ConnectOptions, read bool) []string {
		b := sim.New(sim.Config{})
		conn, _ := b.Dial(o)
		ch, _ := conn.Channel()
		ch.QueueDeclare("q", sim.QueueOptions{})
		c, _ := ch.Consume("q", sim.ConsumeOptions{Tag: "c"})
		ch.Confirm()
		ch.Publish("", "q", sim.PublishOptions{}, sim.Message{Body: []byte("m1")})
		ch.Publish("", "nowhere", sim.PublishOptions{Mandatory: true}, sim.Message{Body: []byte("m2")})
		ch.Publish("", "q", sim.PublishOptions{}, sim.Message{Body: []byte("m3")})
		ch.Get("q", true)
		ch.QueueDelete("q", sim.QueueDeleteOptions{})
		var out []string
		if read {
			for _, d := range c.Deliveries() {
				out = append(out, "next "+string(d.Body))
			}
			for _, r := range ch.Returns() {
				out = append(out, "return "+string(r.Body))
			}
			for _, cf := range ch.Confirms() {
				out = append(out, fmt.Sprintf("confirm %d", cf.DeliveryTag))
			}
			for _, cc := range ch.Cancels() {
				out = append(out, "cancel "+cc.ConsumerTag)
			}
		}
		for _, p := range conn.Drain(nil) {
			out = append(out, p.Method.String())
		}
		return out
	}
	notified := 0
	shell := run(sim.ConnectOptions{Shell: sim.ShellOptions{Notify: func() { notified++ }}}, false)
	diff(t, "in process, drained", shell, run(sim.ConnectOptions{}, false))
	if notified == 0 {
		t.Error("Notify was never called")
	}
	want := []string{"next m1", "next m3", "return m2", "confirm 1", "confirm 2", "confirm 3", "cancel c", "basic.get-empty"}
	diff(t, "in process, read by kind", want, run(sim.ConnectOptions{}, true))
}
