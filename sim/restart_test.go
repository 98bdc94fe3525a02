package sim_test

import (
	"testing"
	"time"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// TestRestart: a restart closes every connection with RabbitMQ's
// shutdown close, keeps durable queues and exchanges with their bindings
// and persistent messages (unacked ones requeued, redelivered), and drops
// transient queues, exchanges and messages.
func TestRestart(t *testing.T) {
	e := newEnv(t)
	e.declare("durable", sim.QueueOptions{Durable: true})
	e.declare("transient", sim.QueueOptions{})
	e.must(e.ch.ExchangeDeclare("dx", "fanout", sim.ExchangeOptions{Durable: true}))
	e.must(e.ch.ExchangeDeclare("tx", "fanout", sim.ExchangeOptions{}))
	e.must(e.ch.QueueBind("durable", "", "dx", nil))
	e.must(e.ch.QueueBind("transient", "", "dx", nil))
	persistent := func(body string) sim.Message {
		return sim.Message{Properties: sim.Properties{DeliveryMode: 2}, Body: []byte(body)}
	}
	for _, m := range []sim.Message{persistent("p1"), {Body: []byte("t1")}, persistent("p2"), persistent("p3")} {
		e.must(e.b.Publish("/", "dx", "", m))
	}
	// p1 is unacked on a consumer when the broker goes down.
	e.qos(e.ch, 1, false)
	c := e.consume(e.ch, "durable", "c", sim.ConsumeOptions{})
	if d, ok := c.Next(); !ok || string(d.Body) != "p1" {
		t.Fatalf("first delivery %q %v", d.Body, ok)
	}

	e.b.Restart()

	pushes := e.conn.Drain(nil)
	if len(pushes) != 1 || pushes[0].Method != protocol.ConnectionClose {
		t.Fatalf("pushes = %+v, want one connection.close", pushes)
	}
	wantErr(t, pushes[0].Err, protocol.ConnectionForced, "CONNECTION_FORCED - broker forced connection closure with reason 'shutdown'", protocol.Method{})
	if len(e.b.Connections()) != 0 {
		t.Error("a connection survived the restart")
	}
	if e.exists("transient") {
		t.Error("the transient queue survived")
	}
	diff(t, "durable queue after the restart", []string{"p1", "p2", "p3"}, e.ready("durable"))
	// The durable exchange and its binding to the durable queue stay; the
	// transient exchange is gone.
	ch := e.channel(e.b.Connect("after"))
	if err := ch.ExchangeDeclare("tx", "fanout", sim.ExchangeOptions{Passive: true}); err == nil {
		t.Error("the transient exchange survived")
	}
	ch = e.channel(e.b.Connect("after2"))
	e.must(ch.ExchangeDeclare("dx", "fanout", sim.ExchangeOptions{Passive: true}))
	e.must(e.b.Publish("/", "dx", "", persistent("p4")))
	diff(t, "durable queue after a publish to dx", []string{"p1", "p2", "p3", "p4"}, e.ready("durable"))
	c2, err := ch.Consume("durable", sim.ConsumeOptions{})
	e.must(err)
	d, _ := c2.Next()
	if string(d.Body) != "p1" || !d.Redelivered {
		t.Errorf("first delivery after the restart %q redelivered=%v, want p1 redelivered", d.Body, d.Redelivered)
	}
}

// TestRestartRestartsExpires: a recovered durable queue's x-expires counts
// from the restart, as the new queue process's init arms it.
func TestRestartRestartsExpires(t *testing.T) {
	e := newEnv(t)
	e.declare("idle", sim.QueueOptions{Durable: true, Args: sim.Table{"x-expires": int32(600000)}})
	e.must(e.b.Advance(8 * time.Minute))
	e.b.Restart()
	e.must(e.b.Advance(8 * time.Minute))
	if !e.exists("idle") {
		t.Fatal("the queue expired 16 minutes after its declaration, 8 after the restart")
	}
	e.must(e.b.Advance(2 * time.Minute))
	if e.exists("idle") {
		t.Error("the queue outlived x-expires counted from the restart")
	}
}

// TestRestartKeepsQuorumMessages: a quorum queue keeps transient messages
// across a restart too: every message is in its Raft log.
func TestRestartKeepsQuorumMessages(t *testing.T) {
	e := newEnv(t)
	e.declare("qq", quorumQueue)
	e.publish("qq", "transient")
	e.b.Restart()
	diff(t, "quorum queue after the restart", []string{"transient"}, e.ready("qq"))
}
