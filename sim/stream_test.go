package sim_test

import (
	"fmt"
	"testing"

	"github.com/amqpsim/amqpsim/sim"
)

var streamArgs = sim.Table{"x-queue-type": "stream"}

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
