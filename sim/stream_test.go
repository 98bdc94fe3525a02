package sim_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

var streamArgs = sim.Table{"x-queue-type": "stream"}

// basic.consume on a stream checks the offset, then the prefetch, then
// no-ack, then a channel-wide limit (stream-consume-checks.txt,
// stream-offset-errors.txt).
func TestStreamConsumeChecks(t *testing.T) {
	// 3.10: from 4.3 global_qos is denied and global=true is per consumer
	// (TestGlobalQosPerConsumer43).
	e := newEnvOn(t, sim.V3_10)
	e.declare("s", sim.QueueOptions{Durable: true, Args: streamArgs})
	_, err := e.ch.Consume("s", sim.ConsumeOptions{Tag: "a", Args: sim.Table{"x-stream-offset": "1x"}})
	wantErr(t, err, 406, `PRECONDITION_FAILED - invalid arg 'x-stream-offset' for queue 's' in vhost '/': {invalid_stream_offset_arg,{longstr,<<"1x">>}}`, protocol.BasicConsume)
	ch := e.channel(e.conn)
	_, err = ch.Consume("s", sim.ConsumeOptions{Tag: "a", NoAck: true})
	wantErr(t, err, 406, "PRECONDITION_FAILED - consumer prefetch count is not set for 'queue 's' in vhost '/''", protocol.BasicConsume)
	ch = e.channel(e.conn)
	e.qos(ch, 2, false)
	e.qos(ch, 5, true)
	_, err = ch.Consume("s", sim.ConsumeOptions{Tag: "a"})
	wantErr(t, err, 540, "NOT_IMPLEMENTED - queue 's' in vhost '/' does not support global qos", protocol.BasicConsume)
}

// Deliveries carry x-stream-offset, are never redelivered, and only
// acks settle them; basic.get, nack and queue.purge close the connection
// (stream-offsets.txt, stream-settle.txt).
func TestStreamDeliveriesAndRefusals(t *testing.T) {
	// 3.10, the release of these texts: from 4.0 they name a stream queue
	// and basic.nack settles (TestStreamQueueTexts40, TestStreamAnySettlement40).
	e := newEnvOn(t, sim.V3_10)
	e.declare("s", sim.QueueOptions{Durable: true, Args: streamArgs})
	e.publish("s", "m0", "m1", "m2")
	e.qos(e.ch, 2, false)
	c := e.consume(e.ch, "s", "a", sim.ConsumeOptions{Args: sim.Table{"x-stream-offset": "first"}})
	ds := c.Deliveries()
	if len(ds) != 2 || ds[1].Headers["x-stream-offset"] != int64(1) || ds[1].Redelivered {
		t.Fatalf("deliveries %+v, want m0, m1 with offset 1, not redelivered", ds)
	}
	e.must(e.ch.Ack(ds[0].DeliveryTag, false))
	if d, ok := c.Next(); !ok || string(d.Body) != "m2" {
		t.Fatalf("after an ack got %q, %t; want m2", d.Body, ok)
	}
	st := e.stats("s")
	if st.Stream == nil || st.Stream.Messages != 3 || st.Consumers != 1 || st.Ready != 0 {
		t.Fatalf("stats %+v (stream %+v), want 3 retained, 1 consumer, count 0 before the tick", st, st.Stream)
	}
	e.b.Advance(5 * time.Second)
	if st := e.stats("s"); st.Ready != 3 {
		t.Fatalf("count %d after the 5 s tick, want 3", st.Ready)
	}
	_, _, err := e.channel(e.conn).Get("s", false)
	wantErr(t, err, 540, "NOT_IMPLEMENTED - basic.get not supported by stream queues queue 's' in vhost '/'", protocol.BasicGet)

	e2 := newEnvOn(t, sim.V3_10)
	e2.declare("s", sim.QueueOptions{Durable: true, Args: streamArgs})
	e2.publish("s", "m0")
	e2.qos(e2.ch, 2, false)
	c = e2.consume(e2.ch, "s", "a", sim.ConsumeOptions{Args: sim.Table{"x-stream-offset": int64(0)}})
	d, _ := c.Next()
	err = e2.ch.Nack(d.DeliveryTag, false, true)
	wantErr(t, err, 540, "NOT_IMPLEMENTED - basic.nack and basic.reject not supported by stream queues queue 's' in vhost '/'", protocol.BasicNack)
}

// A stream keeps what it delivered: a second consumer reads it again from
// the first offset, each delivery carrying its offset.
func Example_stream() {
	b := sim.New(sim.Config{})
	ch, _ := b.Connect("app").Channel()
	ch.QueueDeclare("events", sim.QueueOptions{Durable: true, Args: sim.Table{"x-queue-type": "stream"}})
	for _, body := range []string{"e0", "e1", "e2"} {
		b.Publish("/", "", "events", sim.Message{Body: []byte(body)})
	}
	ch.Qos(10, 0, false) // a stream consumer needs a prefetch
	for _, tag := range []string{"a", "b"} {
		c, _ := ch.Consume("events", sim.ConsumeOptions{Tag: tag, Args: sim.Table{"x-stream-offset": "first"}})
		for _, d := range c.Deliveries() {
			fmt.Printf("%s got %s offset=%v\n", tag, d.Body, d.Headers["x-stream-offset"])
			ch.Ack(d.DeliveryTag, false) // returns credit; the message stays
		}
	}
	st, _ := b.QueueStats("/", "events")
	fmt.Println("retained:", st.Stream.Messages)
	// Output:
	// a got e0 offset=0
	// a got e1 offset=1
	// a got e2 offset=2
	// b got e0 offset=0
	// b got e1 offset=1
	// b got e2 offset=2
	// retained: 3
}

// The 3.13 profile filters streams (queue.Rules.StreamFiltering, citing
// RS@v3.13.7 rabbit_stream_queue.erl:consume/3); 3.10 ignores the filter
// argument and the header (stream-filter-310.txt).
func TestStreamFilteringByProfile(t *testing.T) {
	for _, tc := range []struct {
		v    sim.Version
		want string
	}{{sim.V3_10, "red blue"}, {sim.V3_12, "red blue"}, {sim.V3_13, "red"}, {sim.V4_3, "red"}} {
		b := sim.New(sim.Config{Version: tc.v})
		ch, err := b.Connect("app").Channel()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ch.QueueDeclare("s", sim.QueueOptions{Durable: true, Args: streamArgs}); err != nil {
			t.Fatal(err)
		}
		for _, color := range []string{"red", "blue"} {
			m := sim.Message{Body: []byte(color)}
			m.Headers = sim.Table{"x-stream-filter-value": color}
			if err := b.Publish("/", "", "s", m); err != nil {
				t.Fatal(err)
			}
		}
		if err := ch.Qos(10, 0, false); err != nil {
			t.Fatal(err)
		}
		c, err := ch.Consume("s", sim.ConsumeOptions{Tag: "a", Args: sim.Table{"x-stream-offset": "first", "x-stream-filter": "red"}})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, d := range c.Deliveries() {
			got = append(got, string(d.Body))
		}
		if fmt.Sprint(got) != "["+tc.want+"]" {
			t.Errorf("%v: delivered %v, want [%s]", tc.v, got, tc.want)
		}
	}
}
