package check_test

import (
	"fmt"

	"github.com/amqpsim/amqpsim/check"
	"github.com/amqpsim/amqpsim/sim"
)

// A worker that subscribes before it sets its prefetch, and forgets an ack.
func ExampleLint() {
	b := sim.New(sim.Config{})
	ch, _ := b.Connect("worker").Channel()
	ch.QueueDeclare("jobs", sim.QueueOptions{})
	c, _ := ch.Consume("jobs", sim.ConsumeOptions{Tag: "w"})
	ch.Qos(10, 0, false) // too late for w
	for i := range 3 {
		b.Publish("/", "", "jobs", sim.Message{Body: []byte(fmt.Sprint("job", i))})
	}
	for i := range 3 {
		d, ok := c.Next()
		if !ok {
			break
		}
		if i != 1 { // the bug: job1 is never settled
			ch.Ack(d.DeliveryTag, false)
		}
	}
	for _, f := range check.Lint(b.Trace(), check.Options{}) {
		fmt.Println(f.Rule)
	}
	// Output:
	// consume-before-qos
	// unlimited-prefetch
	// unacked-at-end
}
