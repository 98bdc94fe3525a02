package sim_test

import (
	"testing"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

var quorumQueue = sim.QueueOptions{Durable: true, Args: sim.Table{"x-queue-type": "quorum"}}

// basic.consume on a quorum queue while a channel-wide qos is set is 540, closing the connection (quorum-errors.txt).
func TestQuorumConsumeWithGlobalQosCloses(t *testing.T) {
	// 3.10: from 4.3 global_qos is denied and global=true is per consumer
	// (TestGlobalQosPerConsumer43).
	e := newEnvOn(t, sim.V3_10)
	e.declare("q", quorumQueue)
	e.qos(e.ch, 5, true)
	_, err := e.ch.Consume("q", sim.ConsumeOptions{Tag: "A"})
	wantErr(t, err, 540, "NOT_IMPLEMENTED - queue 'q' in vhost '/' does not support global qos", protocol.BasicConsume)
	if e.conn.Err() == nil {
		t.Error("the connection is still open")
	}
}

// queue.delete with if-unused or if-empty on a quorum queue is 540 with rabbit_quorum_queue:delete/4's texts, if-unused first.
func TestQuorumDeleteConditionsClose(t *testing.T) {
	const pre = "NOT_IMPLEMENTED - cannot delete queue 'q' in vhost '/'. queue.delete operations with "
	for _, tt := range []struct {
		o    sim.QueueDeleteOptions
		flag string
	}{{sim.QueueDeleteOptions{IfUnused: true}, "if-unused"}, {sim.QueueDeleteOptions{IfEmpty: true}, "if-empty"},
		{sim.QueueDeleteOptions{IfUnused: true, IfEmpty: true}, "if-unused"}} {
		e := newEnv(t)
		e.declare("q", quorumQueue)
		_, err := e.ch.QueueDelete("q", tt.o)
		wantErr(t, err, 540, pre+tt.flag+" flag set are not supported by quorum queues", protocol.QueueDelete)
		if e.conn.Err() == nil {
			t.Error("the connection is still open")
		}
	}
}

// A quorum queue ignores the exclusive consume flag, and declare-ok counts a cancelled consumer while it holds messages (quorum-errors.txt).
func TestQuorumExclusiveIgnoredAndDeclareCounts(t *testing.T) {
	e := newEnv(t)
	e.declare("q", quorumQueue)
	e.publish("q", "m1", "m2")
	x := e.consume(e.ch, "q", "X", sim.ConsumeOptions{Exclusive: true})
	e.consume(e.ch, "q", "Y", sim.ConsumeOptions{})
	e.must(e.ch.Cancel("X"))
	info, err := e.ch.QueueDeclare("q", quorumQueue)
	e.must(err)
	if info.Ready != 0 || info.Consumers != 2 {
		t.Errorf("declare-ok ready=%d consumers=%d, want 0 and 2", info.Ready, info.Consumers)
	}
	for _, d := range x.Deliveries() {
		e.must(e.ch.Ack(d.DeliveryTag, false))
	}
	info, err = e.ch.QueueDeclare("q", quorumQueue)
	e.must(err)
	if info.Consumers != 1 {
		t.Errorf("after the acks consumers=%d, want 1", info.Consumers)
	}
}

// Quorum deliveries after a return carry x-delivery-count and redelivered; basic.get always carries it.
func TestQuorumDeliveryCountHeader(t *testing.T) {
	// 3.10: from 3.12 a first get carries no x-delivery-count
	// (TestQuorumGetDeliveryCount312).
	e := newEnvOn(t, sim.V3_10)
	e.declare("q", quorumQueue)
	e.publish("q", "m1")
	d, ok, err := e.ch.Get("q", false)
	e.must(err)
	if !ok || d.Headers["x-delivery-count"] != int64(0) || d.Redelivered {
		t.Fatalf("get: ok=%t headers=%v redelivered=%t", ok, d.Headers, d.Redelivered)
	}
	e.must(e.ch.Reject(d.DeliveryTag, true))
	c := e.consume(e.ch, "q", "A", sim.ConsumeOptions{})
	got, _ := c.Next()
	if got.Headers["x-delivery-count"] != int64(1) || !got.Redelivered {
		t.Errorf("delivery: headers=%v redelivered=%t", got.Headers, got.Redelivered)
	}
}

// basic.get on a quorum queue with a single active consumer is 405, closing the channel (quorum-single-active-consumer.txt).
func TestQuorumGetWithSingleActiveConsumerLocked(t *testing.T) {
	// 3.10's text: from 4.2 it names the type <<"quorum">> (TestQuorumSACGetText42).
	e := newEnvOn(t, sim.V3_10)
	e.declare("q", sim.QueueOptions{Durable: true, Args: sim.Table{"x-queue-type": "quorum", "x-single-active-consumer": true}})
	_, _, err := e.ch.Get("q", false)
	wantErr(t, err, 405, "RESOURCE_LOCKED - cannot obtain access to locked queue 'q' in vhost '/'. basic.get operations are not supported by quorum queues with single active consumer", protocol.BasicGet)
	if e.conn.Err() != nil {
		t.Error("a soft error closed the connection")
	}
}

// A server-named quorum queue is refused with 406 (quorum-server-named-and-consumer-args.txt).
func TestQuorumServerNamedRefused(t *testing.T) {
	e := newEnv(t)
	_, err := e.ch.QueueDeclare("", quorumQueue)
	wantErr(t, err, 406, "PRECONDITION_FAILED - Cannot declare a server-named queue for type rabbit_quorum_queue", protocol.QueueDeclare)
}
