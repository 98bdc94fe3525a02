package sim_test

import (
	"maps"
	"testing"
	"time"

	"github.com/amqpsim/amqpsim/sim"
)

// The rules of this file were measured on RabbitMQ 4.0.5 and 4.3.6
// (scenarios/library, each file recorded on 3.10.8 too); sim/profile.go
// sets them in one block of Version.Profile.

// dlqDeliveries dead-letters messages of a classic queue a and a quorum
// queue c to the classic queue dlq, after basic.reject or basic.nack
// without requeue (and a3 rejected with requeue first), lets a closed
// channel's message expire from d into dlq, and returns what a consumer
// of dlq then gets: bodies and redelivered flags; last, a4's dead letter,
// handed straight to that consumer waiting on the empty dlq.
func dlqDeliveries(t *testing.T, v sim.Version) []dv {
	e := newEnvOn(t, v)
	dl := func(args sim.Table) sim.Table {
		args["x-dead-letter-exchange"], args["x-dead-letter-routing-key"] = "", "dlq"
		return args
	}
	e.declare("dlq", sim.QueueOptions{})
	e.declare("a", sim.QueueOptions{Args: dl(sim.Table{})})
	e.declare("c", sim.QueueOptions{Durable: true, Args: dl(sim.Table{"x-queue-type": "quorum"})})
	e.declare("d", sim.QueueOptions{Args: dl(sim.Table{"x-message-ttl": int64(1000)})})
	settle := func(q string, reject, requeue bool) {
		t.Helper()
		d, ok, err := e.ch.Get(q, false)
		if err != nil || !ok {
			t.Fatalf("%v: get %s: %v %v", v, q, ok, err)
		}
		if reject {
			e.must(e.ch.Reject(d.DeliveryTag, requeue))
		} else {
			e.must(e.ch.Nack(d.DeliveryTag, false, requeue))
		}
	}
	e.publish("a", "a1", "a2", "a3")
	settle("a", true, false)  // a1 rejected
	settle("a", false, false) // a2 nacked
	settle("a", true, true)   // a3 rejected and requeued,
	settle("a", false, false) // then nacked
	e.publish("c", "c1", "c2")
	settle("c", true, false)  // c1 rejected by a quorum queue's client
	settle("c", false, false) // c2 nacked
	ch2 := e.channel(e.conn)
	e.publish("d", "d1")
	if _, _, err := ch2.Get("d", false); err != nil {
		t.Fatal(err)
	}
	e.must(ch2.Close()) // d1 is back in d, and expires into dlq
	e.must(e.b.Advance(1500 * time.Millisecond))
	c := e.consume(e.ch, "dlq", "D", sim.ConsumeOptions{NoAck: true})
	e.publish("a", "a4")
	settle("a", true, false)
	got := brief(c.Deliveries())
	for i := range got {
		got[i].Tag = 0
	}
	return got
}

// 4.3 counts a basic.reject (with requeue or without) and a channel close
// as a failed delivery of the message, basic.nack not, and a classic
// queue stores a dead letter with failed deliveries as delivered: it
// comes out redelivered, unless handed straight to a waiting consumer.
// A quorum queue's dead letter carries its count too. Recorded on 4.3.6,
// 4.0.5 and 3.10.8: dlx-reject-counts-delivery.txt,
// dlx-reject-with-routing-key.txt, ttl-requeue-keeps-expiry.txt.
func TestClassicDeliveryCount43(t *testing.T) {
	plain := []dv{{0, "a1", false}, {0, "a2", false}, {0, "a3", false}, {0, "c1", false}, {0, "c2", false}, {0, "d1", false}, {0, "a4", false}}
	diff(t, "3.10", plain, dlqDeliveries(t, sim.V3_10))
	diff(t, "4.2", plain, dlqDeliveries(t, sim.V4_2))
	diff(t, "4.3", []dv{{0, "a1", true}, {0, "a2", false}, {0, "a3", true}, {0, "c1", true}, {0, "c2", false}, {0, "d1", true}, {0, "a4", false}},
		dlqDeliveries(t, sim.V4_3))
}

// byteLimitKept declares a queue of x-max-length-bytes limit (drop-head),
// publishes six 2-byte messages with props, and returns the bodies kept.
func byteLimitKept(t *testing.T, v sim.Version, o sim.QueueOptions, limit int64, props sim.Properties) []string {
	e := newEnvOn(t, v)
	o.Args = maps.Clone(o.Args)
	o.Args["x-max-length-bytes"] = limit
	e.declare("q", o)
	e.publishOn(e.ch, "q", props, "m1", "m2", "m3", "m4", "m5", "m6")
	return e.ready("q")
}

// 4.3's quorum queue counts each message's encoded properties (property
// flags, 2 bytes, and the present properties) with its body against
// x-max-length-bytes: RS@v4.3.5 deps/rabbit/src/rabbit_fifo.erl
// maybe_enqueue/8, line 2074, "Size = MetaSize + BodySize", MetaSize
// being mc_amqpl:size/1's byte_size of the stored properties_bin; RS@v4.2.9
// and RS@v4.1.8 rabbit_fifo:maybe_enqueue/8 count "Size = BodySize" (lines
// 1710 and 1712), so 4.1 and 4.2 count the body alone as 4.0.5 does. The
// change came with rabbit_fifo v8 (rabbitmq-server#13885, commit
// d56a4e676d, first tagged v4.3.0). Recorded on 3.10.8, 4.0.5 and 4.3.6:
// quorum-max-length-bytes-properties.txt. Classic queues count the body
// alone on every release (measured on 4.3.6 too).
func TestQuorumCountsProperties43(t *testing.T) {
	all := []string{"m1", "m2", "m3", "m4", "m5", "m6"}
	text := sim.Properties{ContentType: "text/plain"} // 2 + 1 + 10 bytes
	empty := sim.Properties{Headers: sim.Table{}}     // 2 + 4 bytes, measured on 4.3.6 with a raw socket
	for _, tc := range []struct {
		v                             sim.Version
		none, contentType, emptyTable []string
		classicContentType            []string
	}{
		// 2 bytes each: five under 10, six under 20 and 24.
		{sim.V3_10, all[1:], all, all, all},
		{sim.V4_0, all[1:], all, all, all},
		{sim.V4_1, all[1:], all, all, all},
		{sim.V4_2, all[1:], all, all, all},
		// 2+2 bytes each: two under 10; 2+13: one under 20; 2+6: three
		// under 24.
		{sim.V4_3, all[4:], all[5:], all[3:], all},
	} {
		diff(t, tc.v.String()+" quorum, no properties, 10 bytes", tc.none, byteLimitKept(t, tc.v, quorumQueue, 10, sim.Properties{}))
		diff(t, tc.v.String()+" quorum, content-type, 20 bytes", tc.contentType, byteLimitKept(t, tc.v, quorumQueue, 20, text))
		diff(t, tc.v.String()+" quorum, empty headers, 24 bytes", tc.emptyTable, byteLimitKept(t, tc.v, quorumQueue, 24, empty))
		diff(t, tc.v.String()+" classic, content-type, 20 bytes", tc.classicContentType,
			byteLimitKept(t, tc.v, sim.QueueOptions{Durable: true, Args: sim.Table{}}, 20, text))
	}
}
