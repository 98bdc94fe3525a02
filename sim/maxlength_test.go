package sim_test

import (
	"fmt"
	"testing"

	"github.com/amqpsim/amqpsim/sim"
)

// The max-length tests pin the simulator to RabbitMQ 3.10.8 observed through
// amqp091-go v1.16.0 (the ml-* queues of the measurement).

// confirmsOf renders a channel's publisher confirms as "ack"/"NACK".
func confirmsOf(ch *sim.Channel) []string {
	out := []string{}
	for _, c := range ch.Confirms() {
		if c.Nack {
			out = append(out, "NACK")
		} else {
			out = append(out, "ack")
		}
	}
	return out
}

// publishOn publishes bodies to queue q on ch with props.
func (e *env) publishOn(ch *sim.Channel, q string, props sim.Properties, bodies ...string) {
	e.t.Helper()
	for _, b := range bodies {
		e.must(ch.Publish("", q, sim.PublishOptions{}, sim.Message{Properties: props, Body: []byte(b)}))
	}
}

// Measured with x-max-length 2, a DLX, confirms on, m1..m3 with expiration
// 60000:
//
//	drop-head:          confirms [ack ack ack],  queue [m2 m3], dead-lettered [m1] (maxlen)
//	reject-publish:     confirms [ack ack NACK], queue [m1 m2], dead-lettered []
//	reject-publish-dlx: confirms [ack ack NACK], queue [m1 m2], dead-lettered [m3] (maxlen)
//
// The dead-lettered copy has no expiration and keeps it as
// original-expiration; the queued ones keep theirs.
func TestMaxLengthOverflowModes(t *testing.T) {
	for _, tc := range []struct {
		overflow string
		confirms []string
		queue    []string
		dead     []string
	}{
		{"drop-head", []string{"ack", "ack", "ack"}, []string{"m2", "m3"}, []string{"m1"}},
		{"reject-publish", []string{"ack", "ack", "NACK"}, []string{"m1", "m2"}, []string{}},
		{"reject-publish-dlx", []string{"ack", "ack", "NACK"}, []string{"m1", "m2"}, []string{"m3"}},
	} {
		t.Run(tc.overflow, func(t *testing.T) {
			// 3.10: from 3.13 a dead letter also carries x-last-death-*
			// (TestLastDeathHeaders313).
			e := newEnvOn(t, sim.V3_10)
			q := "ml-" + tc.overflow
			e.declare("ml-dlq", sim.QueueOptions{})
			e.declare(q, sim.QueueOptions{Args: dl("ml-dlq", "x-max-length", int32(2), "x-overflow", tc.overflow)})
			pch := e.channel(e.conn)
			e.must(pch.Confirm())
			e.publishOn(pch, q, sim.Properties{Expiration: "60000"}, "m1", "m2", "m3")
			diff(t, "confirms", tc.confirms, confirmsOf(pch))
			ready := e.getAll(q)
			diff(t, "queue", tc.queue, bodies(ready))
			for _, d := range ready {
				if d.Expiration != "60000" || d.Redelivered || d.Headers != nil {
					t.Errorf("queued %s: expiration=%q redelivered=%t headers=%v", d.Body, d.Expiration, d.Redelivered, d.Headers)
				}
			}
			dead := e.getAll("ml-dlq")
			diff(t, "dead-lettered", tc.dead, bodies(dead))
			for _, d := range dead {
				if d.Expiration != "" || d.Exchange != "" || d.RoutingKey != "ml-dlq" || d.Redelivered {
					t.Errorf("dead-lettered %s: expiration=%q exchange=%q key=%q", d.Body, d.Expiration, d.Exchange, d.RoutingKey)
				}
				checkDeadLettered(t, d.Headers, []sim.Table{withExp(death(1, "maxlen", q, "", q), "60000")}, firstDeath("maxlen", q, ""))
			}
		})
	}
}

// Without confirms a rejected publish is dropped silently: no basic.return
// even for a mandatory message (measured: "no return", queue [a]).
func TestMaxLengthRejectPublishSilentWithoutConfirms(t *testing.T) {
	e := newEnv(t)
	e.declare("ml-rp-noconfirm", sim.QueueOptions{Args: sim.Table{"x-max-length": int32(1), "x-overflow": "reject-publish"}})
	for _, b := range []string{"a", "b"} {
		e.must(e.ch.Publish("", "ml-rp-noconfirm", sim.PublishOptions{Mandatory: true}, sim.Message{Body: []byte(b)}))
	}
	if r := e.ch.Returns(); len(r) != 0 {
		t.Errorf("returns %v", r)
	}
	diff(t, "queue", []string{"a"}, e.ready("ml-rp-noconfirm"))
}

// Only ready messages count, and a requeue can push a drop-head queue over
// its limit, which then drops its head: the requeued message. Measured
// (x-max-length 1, DLX): got u1 unacked, published r1: messages 2, ready 1,
// unacked 1, bytes 2; nack u1 with requeue: queue [r1], dead-lettered [u1]
// (maxlen, redelivered=false).
func TestMaxLengthCountsReadyAndDropsHeadAfterRequeue(t *testing.T) {
	// 3.10: from 3.13 a dead letter also carries x-last-death-*
	// (TestLastDeathHeaders313).
	e := newEnvOn(t, sim.V3_10)
	e.declare("ml-dlq", sim.QueueOptions{})
	e.declare("ml-ready", sim.QueueOptions{Args: dl("ml-dlq", "x-max-length", int32(1))})
	gch := e.channel(e.conn)
	e.publish("ml-ready", "u1")
	du, _, _ := gch.Get("ml-ready", false)
	e.publish("ml-ready", "r1")
	diff(t, "stats", sim.QueueStats{Vhost: "/", Name: "ml-ready", Ready: 1, Unacked: 1, Bytes: 2}, e.stats("ml-ready"))
	e.must(gch.Nack(du.DeliveryTag, false, true))
	diff(t, "queue", []string{"r1"}, e.ready("ml-ready"))
	dead := e.getAll("ml-dlq")
	diff(t, "dead-lettered", []dv{{1, "u1", false}}, brief(dead))
	checkDeadLettered(t, dead[0].Headers, []sim.Table{death(1, "maxlen", "ml-ready", "", "ml-ready")}, firstDeath("maxlen", "ml-ready", ""))
}

// Under reject-publish nothing is dropped, so a requeue pushes the queue
// over its limit and it stays there. Measured (x-max-length 1): after the
// requeue messages 2, ready 2, bytes 4; a publish then is nacked; the queue
// is [u1 (redelivered) r1].
func TestMaxLengthRejectPublishRequeueGoesOver(t *testing.T) {
	e := newEnv(t)
	e.declare("ml-rp-requeue", sim.QueueOptions{Args: sim.Table{"x-max-length": int32(1), "x-overflow": "reject-publish"}})
	gch := e.channel(e.conn)
	e.publish("ml-rp-requeue", "u1")
	du, _, _ := gch.Get("ml-rp-requeue", false)
	e.publish("ml-rp-requeue", "r1")
	e.must(gch.Nack(du.DeliveryTag, false, true))
	diff(t, "stats", sim.QueueStats{Vhost: "/", Name: "ml-rp-requeue", Ready: 2, Bytes: 4}, e.stats("ml-rp-requeue"))
	pch := e.channel(e.conn)
	e.must(pch.Confirm())
	e.publishOn(pch, "ml-rp-requeue", sim.Properties{}, "r2")
	diff(t, "confirms", []string{"NACK"}, confirmsOf(pch))
	ds := e.getAll("ml-rp-requeue")
	diff(t, "queue", []string{"u1 true", "r1 false"}, []string{fmt.Sprint(string(ds[0].Body), " ", ds[0].Redelivered), fmt.Sprint(string(ds[1].Body), " ", ds[1].Redelivered)})
}

// x-max-length-bytes counts body bytes only. Measured (limit 10, messages
// with a 60-byte header, content type and message id): 5- and 5-byte bodies
// acked, a 1-byte body nacked; bytes 10.
func TestMaxLengthBytesCountsBodiesOnly(t *testing.T) {
	e := newEnv(t)
	e.declare("ml-bytes", sim.QueueOptions{Args: sim.Table{"x-max-length-bytes": int32(10), "x-overflow": "reject-publish"}})
	pch := e.channel(e.conn)
	e.must(pch.Confirm())
	props := sim.Properties{Headers: sim.Table{"h": "a very long header value that is much larger than ten bytes"}, ContentType: "text/plain", MessageID: "long-message-id"}
	e.publishOn(pch, "ml-bytes", props, "12345", "67890", "x")
	diff(t, "confirms", []string{"ack", "ack", "NACK"}, confirmsOf(pch))
	diff(t, "stats", sim.QueueStats{Vhost: "/", Name: "ml-bytes", Ready: 2, Bytes: 10}, e.stats("ml-bytes"))
	diff(t, "queue", []string{"12345", "67890"}, e.ready("ml-bytes"))
}

// reject-publish is checked before delivery, even to a waiting consumer;
// drop-head delivers straight to one without counting the message.
// Measured with x-max-length 0: reject-publish: NACK, not delivered;
// drop-head: delivered; without the consumer, dead-lettered (maxlen).
func TestMaxLengthZeroWithWaitingConsumer(t *testing.T) {
	// 3.10: from 3.13 a dead letter also carries x-last-death-*
	// (TestLastDeathHeaders313).
	e := newEnvOn(t, sim.V3_10)
	e.declare("ml-dlq", sim.QueueOptions{})
	e.declare("ml-rp-zero", sim.QueueOptions{Args: sim.Table{"x-max-length": int32(0), "x-overflow": "reject-publish"}})
	e.declare("ml-dh-zero", sim.QueueOptions{Args: dl("ml-dlq", "x-max-length", int32(0))})
	cch := e.channel(e.conn)
	rp := e.consume(cch, "ml-rp-zero", "c", sim.ConsumeOptions{NoAck: true})
	dh := e.consume(cch, "ml-dh-zero", "d", sim.ConsumeOptions{NoAck: true})
	pch := e.channel(e.conn)
	e.must(pch.Confirm())
	e.publishOn(pch, "ml-rp-zero", sim.Properties{}, "z")
	diff(t, "reject-publish confirms", []string{"NACK"}, confirmsOf(pch))
	diff(t, "reject-publish delivered", []string{}, bodies(rp.Deliveries()))
	e.publish("ml-dh-zero", "z")
	diff(t, "drop-head delivered", []string{"z"}, bodies(dh.Deliveries()))
	e.must(cch.Close())
	e.publish("ml-dh-zero", "y")
	diff(t, "drop-head queue", []string{}, e.ready("ml-dh-zero"))
	dead := e.getAll("ml-dlq")
	diff(t, "dead-lettered", []string{"y"}, bodies(dead))
	checkDeadLettered(t, dead[0].Headers, []sim.Table{death(1, "maxlen", "ml-dh-zero", "", "ml-dh-zero")}, firstDeath("maxlen", "ml-dh-zero", ""))
}

// reject-publish-dlx with a missing dead-letter exchange still nacks; a
// message routed to two queues is nacked when one of them rejects it and
// still lands in the other (measured: NACK, b=[f]).
func TestMaxLengthRejectNackCases(t *testing.T) {
	e := newEnv(t)
	e.declare("ml-rpdlx-missing", sim.QueueOptions{Args: sim.Table{"x-max-length": int32(0), "x-overflow": "reject-publish-dlx", "x-dead-letter-exchange": "nope"}})
	pch := e.channel(e.conn)
	e.must(pch.Confirm())
	e.publishOn(pch, "ml-rpdlx-missing", sim.Properties{}, "z")
	diff(t, "missing DLX confirms", []string{"NACK"}, confirmsOf(pch))

	e.must(e.ch.ExchangeDeclare("ml-fan", "fanout", sim.ExchangeOptions{}))
	e.declare("ml-fan-a", sim.QueueOptions{Args: sim.Table{"x-max-length": int32(0), "x-overflow": "reject-publish"}})
	e.declare("ml-fan-b", sim.QueueOptions{})
	e.must(e.ch.QueueBind("ml-fan-a", "", "ml-fan", nil))
	e.must(e.ch.QueueBind("ml-fan-b", "", "ml-fan", nil))
	e.must(pch.Publish("ml-fan", "", sim.PublishOptions{}, sim.Message{Body: []byte("f")}))
	diff(t, "fanout confirms", []string{"NACK"}, confirmsOf(pch))
	b := e.getAll("ml-fan-b")
	diff(t, "b", []string{"f"}, bodies(b))
	if b[0].Exchange != "ml-fan" || b[0].RoutingKey != "" {
		t.Errorf("b: exchange=%q key=%q", b[0].Exchange, b[0].RoutingKey)
	}
}
