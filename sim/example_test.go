package sim_test

import (
	"context"
	"fmt"
	"time"

	"github.com/amqpsim/amqpsim/sim"
)

// Two consumers with a prefetch window of two share a queue: the queue fills
// each window in turn, an ack frees a slot that the next message takes, and a
// closed channel returns its deliveries, marked redelivered.
func Example() {
	b := sim.New(sim.Config{})
	conn := b.Connect("app")
	ch1, _ := conn.Channel()
	ch2, _ := conn.Channel()
	ch1.QueueDeclare("orders", sim.QueueOptions{})
	ch1.Qos(2, 0, false)
	ch2.Qos(2, 0, false)
	c1, _ := ch1.Consume("orders", sim.ConsumeOptions{Tag: "c1"})
	c2, _ := ch2.Consume("orders", sim.ConsumeOptions{Tag: "c2"})
	for i := 1; i <= 6; i++ {
		b.Publish("/", "", "orders", sim.Message{Body: []byte(fmt.Sprintf("m%d", i))})
	}
	show := func(c *sim.Consumer) {
		for _, d := range c.Deliveries() {
			fmt.Printf("%s got %s tag=%d redelivered=%t\n", c.Tag(), d.Body, d.DeliveryTag, d.Redelivered)
		}
	}
	show(c1)
	show(c2)

	ch1.Ack(1, false) // c1 acks m1: the next message fills the slot
	show(c1)

	ch2.Close() // c2's m2 and m4 return to their places, redelivered
	b.Advance(time.Second)
	st, _ := b.QueueStats("/", "orders")
	fmt.Printf("ready=%d unacked=%d consumers=%d\n", st.Ready, st.Unacked, st.Consumers)
	ch1.Ack(0, true)
	show(c1)
	// Output:
	// c1 got m1 tag=1 redelivered=false
	// c1 got m3 tag=2 redelivered=false
	// c2 got m2 tag=1 redelivered=false
	// c2 got m4 tag=2 redelivered=false
	// c1 got m5 tag=3 redelivered=false
	// ready=3 unacked=2 consumers=1
	// c1 got m2 tag=4 redelivered=true
	// c1 got m4 tag=5 redelivered=true
}

// Advance moves the virtual clock: here past RabbitMQ's 30-minute
// consumer_timeout. From 4.3, the default release, a quorum queue times
// a delivery out itself, 30 minutes after it: it takes m2 and m3 back and
// the channel, which stays open, sends basic.cancel. The consumer stays
// registered and takes nothing until the client settles the old tags,
// which the channel still takes; then it gets the messages again. (Before
// 4.3 the channel closed with 406 at its next tick.)
func ExampleBroker_Advance() {
	b := sim.New(sim.Config{})
	ch, _ := b.Connect("app").Channel()
	ch.QueueDeclare("orders", sim.QueueOptions{Durable: true, Args: sim.Table{"x-queue-type": "quorum"}})
	ch.Qos(2, 0, false)
	c, _ := ch.Consume("orders", sim.ConsumeOptions{Tag: "worker"})
	for _, body := range []string{"m1", "m2", "m3"} {
		b.Publish("/", "", "orders", sim.Message{Body: []byte(body)})
	}
	held := c.Deliveries()
	fmt.Println("holding", len(held))
	ch.Ack(held[0].DeliveryTag, false)
	d, _ := c.Next()
	fmt.Println("then got", string(d.Body))

	b.Advance(31 * time.Minute)
	fmt.Println(ch.Cancels(), ch.Err())
	st, _ := b.QueueStats("/", "orders")
	fmt.Printf("ready=%d unacked=%d consumers=%d\n", st.Ready, st.Unacked, st.Consumers)

	ch.Ack(0, true) // the old tags of m2 and m3
	for _, d := range c.Deliveries() {
		fmt.Println("again", string(d.Body), d.Redelivered, d.Headers["x-acquired-count"])
	}
	// Output:
	// holding 2
	// then got m3
	// [{worker}] <nil>
	// ready=2 unacked=0 consumers=1
	// again m2 true 1
	// again m3 true 1
}

// WaitFor blocks until a condition over the broker holds, woken by the
// broker's own changes: here until a consumer elsewhere (another
// goroutine, in a real test the code under test) holds two unacked
// deliveries.
func ExampleBroker_WaitFor() {
	b := sim.New(sim.Config{})
	ch, _ := b.Connect("app").Channel()
	ch.QueueDeclare("jobs", sim.QueueOptions{})
	go func() {
		b.Publish("/", "", "jobs", sim.Message{Body: []byte("j1")})
		b.Publish("/", "", "jobs", sim.Message{Body: []byte("j2")})
		ch.Consume("jobs", sim.ConsumeOptions{})
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := b.WaitFor(ctx, func(b *sim.Broker) bool {
		s, err := b.QueueStats("/", "jobs")
		return err == nil && s.Unacked == 2
	})
	s, _ := b.QueueStats("/", "jobs")
	fmt.Println(err, s.Ready, s.Unacked)
	// Output: <nil> 0 2
}
