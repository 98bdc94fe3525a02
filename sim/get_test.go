package sim_test

import (
	"testing"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// basic.get ignores the per-consumer window: it works beside a consumer whose window is full.
func TestGetWorksBesideFullConsumerWindow(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{})
	e.qos(e.ch, 1, false)
	c := e.consume(e.ch, "q", "c", sim.ConsumeOptions{})
	e.publish("q", msgs(3)...)
	diff(t, "consumer", []string{"m1"}, bodies(c.Deliveries()))
	d, ok, err := e.ch.Get("q", false)
	e.must(err)
	if !ok || string(d.Body) != "m2" || d.ConsumerTag != "" {
		t.Errorf("get = %+v ok=%t, want m2 without a consumer tag", d, ok)
	}
}

// basic.get ignores the channel-wide limit too, even when it is reached.
func TestGetIgnoresGlobalLimit(t *testing.T) {
	// 3.10: from 4.3 global_qos is denied and global=true is per consumer
	// (TestGlobalQosPerConsumer43).
	e := newEnvOn(t, sim.V3_10)
	e.declare("q", sim.QueueOptions{})
	e.qos(e.ch, 1, true)
	e.consume(e.ch, "q", "c", sim.ConsumeOptions{})
	e.publish("q", msgs(4)...)
	for _, want := range []string{"m2", "m3", "m4"} {
		d, ok, err := e.ch.Get("q", false)
		e.must(err)
		if !ok || string(d.Body) != want {
			t.Fatalf("get = %q ok=%t, want %q", d.Body, ok, want)
		}
	}
	if s := e.ch.Stats(); s.Unacked != 4 || s.GlobalVolume != 1 {
		t.Errorf("unacked=%d volume=%d, want 4 and 1", s.Unacked, s.GlobalVolume)
	}
}

// get-ok's message_count is the number of ready messages left after the fetch; unacked ones are not counted.
func TestGetMessageCountIsReadyAfterFetch(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{})
	e.publish("q", msgs(4)...)
	var counts []int
	for i := 0; i < 4; i++ {
		d, _, err := e.ch.Get("q", false)
		e.must(err)
		counts = append(counts, d.MessageCount)
	}
	diff(t, "message counts", []int{3, 2, 1, 0}, counts)
}

// An empty queue answers basic.get-empty.
func TestGetEmpty(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{})
	d, ok, err := e.ch.Get("q", false)
	e.must(err)
	if ok {
		t.Errorf("get on an empty queue returned %+v", d)
	}
	if n := e.ch.Stats().NextTag; n != 1 {
		t.Errorf("NextTag = %d after get-empty, want 1 (no tag used)", n)
	}
}

// A get without no-ack joins the channel's unacked ledger; with no-ack it does not.
func TestGetCountsInChannelUnackedUnlessNoAck(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{})
	e.publish("q", msgs(3)...)
	e.ch.Get("q", true)
	e.ch.Get("q", false)
	if s := e.ch.Stats(); s.Unacked != 1 {
		t.Errorf("channel unacked = %d, want 1", s.Unacked)
	}
	diff(t, "queue", sim.QueueStats{Vhost: "/", Name: "q", Ready: 1, Unacked: 1, Bytes: 2}, e.stats("q"))
	e.must(e.ch.Ack(2, false))
	diff(t, "after ack", sim.QueueStats{Vhost: "/", Name: "q", Ready: 1, Bytes: 2}, e.stats("q"))
}

// Unacked get deliveries are requeued when the channel closes, redelivered.
func TestGetUnackedRequeuedOnClose(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{})
	e.publish("q", "m1", "m2")
	e.ch.Get("q", false)
	e.must(e.ch.Close())
	ch := e.channel(e.conn)
	d, _, err := ch.Get("q", false)
	e.must(err)
	diff(t, "get", dv{1, "m1", true}, dv{d.DeliveryTag, string(d.Body), d.Redelivered})
}

// An exclusive consumer does not block basic.get from another channel.
func TestGetNotBlockedByExclusiveConsumer(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{})
	e.qos(e.ch, 1, false)
	e.consume(e.ch, "q", "x", sim.ConsumeOptions{Exclusive: true})
	e.publish("q", "m1", "m2")
	other := e.channel(e.b.Connect("other"))
	d, ok, err := other.Get("q", false)
	e.must(err)
	if !ok || string(d.Body) != "m2" {
		t.Errorf("get = %q ok=%t, want m2", d.Body, ok)
	}
}

// basic.get is allowed on a classic single-active-consumer queue.
func TestGetAllowedOnSingleActiveConsumerQueue(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{Args: sim.Table{"x-single-active-consumer": true}})
	e.publish("q", "m1")
	if _, ok, err := e.ch.Get("q", false); !ok || err != nil {
		t.Errorf("get: ok=%t err=%v", ok, err)
	}
}

// basic.get on a missing queue is 404; on another connection's exclusive queue it is 405.
func TestGetErrors(t *testing.T) {
	e := newEnv(t)
	_, _, err := e.ch.Get("missing", false)
	wantErr(t, err, 404, "NOT_FOUND - no queue 'missing' in vhost '/'", protocol.Method{Class: 60, ID: 70})

	owner := e.channel(e.conn)
	if _, err := owner.QueueDeclare("mine", sim.QueueOptions{Exclusive: true}); err != nil {
		t.Fatal(err)
	}
	other := e.channel(e.b.Connect("other"))
	_, _, err = other.Get("mine", false)
	wantErr(t, err, 405, "RESOURCE_LOCKED - cannot obtain exclusive access to locked queue 'mine' in vhost '/'. It could be originally declared on another connection or the exclusive property value does not match that of the original declaration.", protocol.BasicGet)
}

// A polling client registers no consumer: a queue can show unacked messages and zero consumers.
func TestGetRegistersNoConsumer(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{})
	e.publish("q", msgs(3)...)
	for i := 0; i < 3; i++ {
		e.ch.Get("q", false)
	}
	diff(t, "stats", sim.QueueStats{Vhost: "/", Name: "q", Unacked: 3}, e.stats("q"))
}
