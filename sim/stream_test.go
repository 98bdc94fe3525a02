package sim_test

import (
	"fmt"

	"github.com/amqpsim/amqpsim/sim"
)

// Which release filters a stream by x-stream-filter is a scenario
// (scenarios/testdata/profiles/stream-filtering.txt).

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
