package sim_test

import (
	"fmt"

	"github.com/amqpsim/amqpsim/sim"
)

// Config.Version picks the RabbitMQ release simulated. A quorum queue
// requeues a nacked message to the back on 3.10 (no delivery limit) and
// to the head on 4.0 (delivery limit 20 by default).
func ExampleConfig_version() {
	for _, v := range []sim.Version{sim.V3_10, sim.V4_0} {
		b := sim.New(sim.Config{Version: v})
		ch, _ := b.Connect("app").Channel()
		ch.QueueDeclare("jobs", sim.QueueOptions{Durable: true, Args: sim.Table{"x-queue-type": "quorum"}})
		for _, body := range []string{"j1", "j2"} {
			b.Publish("/", "", "jobs", sim.Message{Body: []byte(body)})
		}
		d, _, _ := ch.Get("jobs", false)
		ch.Nack(d.DeliveryTag, false, true)
		ms, _ := b.QueueMessages("/", "jobs")
		fmt.Printf("%s (%s): %s %s\n", v, b.Profile().ServerVersion, ms[0].Body, ms[1].Body)
	}
	// Output:
	// 3.10 (3.10.8): j2 j1
	// 4.0 (4.0.5): j1 j2
}

// ParseVersion reads a flag or a scenario header; a release without a
// profile is an error naming those there are.
func ExampleParseVersion() {
	v, _ := sim.ParseVersion("4.3.5")
	fmt.Println(v, v.Profile().GlobalQosDenied)
	_, err := sim.ParseVersion("3.11")
	fmt.Println(err)
	// Output:
	// 4.3 true
	// sim: no profile for RabbitMQ "3.11" (profiles: 3.10, 3.12, 3.13, 4.0, 4.1, 4.2, 4.3)
}

// Config.ConsumerMaxPerChannel is 4.0's consumer_max_per_channel: the
// consume past it closes the connection. 3.10 has no such setting.
func ExampleConfig_consumerMaxPerChannel() {
	b := sim.New(sim.Config{Version: sim.V4_0, ConsumerMaxPerChannel: 1})
	ch, _ := b.Connect("app").Channel()
	ch.QueueDeclare("jobs", sim.QueueOptions{Durable: true})
	ch.Consume("jobs", sim.ConsumeOptions{Tag: "w1"})
	_, err := ch.Consume("jobs", sim.ConsumeOptions{Tag: "w2"})
	fmt.Println(err)
	_, err = sim.Open(sim.Config{Version: sim.V3_10, ConsumerMaxPerChannel: 1})
	fmt.Println(err)
	// Output:
	// connection error 530 (basic.consume): NOT_ALLOWED - reached maximum (1) of consumers per channel
	// sim: Config.ConsumerMaxPerChannel: RabbitMQ 3.10 has no consumer_max_per_channel (4.0+)
}
