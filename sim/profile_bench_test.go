package sim_test

import (
	"testing"

	"github.com/amqpsim/amqpsim/sim"
)

// BenchmarkQuorumProfiles measures publish → deliver → ack of one message
// through a quorum queue with a deep backlog of mixed priorities, on the
// releases whose quorum queues order messages differently: one FIFO
// (3.10), two weighted levels (4.0), 32 strict levels (4.3). The cost per
// message must not depend on the backlog or the release.
func BenchmarkQuorumProfiles(b *testing.B) {
	for _, v := range []sim.Version{sim.V3_10, sim.V4_0, sim.V4_3} {
		b.Run(v.String(), func(b *testing.B) {
			br := sim.New(sim.Config{Version: v, NoTrace: true})
			ch, _ := br.Connect("bench").Channel()
			if _, err := ch.QueueDeclare("work", sim.QueueOptions{Durable: true, Args: sim.Table{"x-queue-type": "quorum"}}); err != nil {
				b.Fatal(err)
			}
			msgs := make([]sim.Message, 8)
			for i := range msgs {
				msgs[i] = sim.Message{Properties: sim.Properties{Priority: uint8(i * 4)}, Body: make([]byte, 128)}
			}
			for i := 0; i < 10000; i++ {
				br.Publish("/", "", "work", msgs[i%len(msgs)])
			}
			ch.Qos(100, 0, false)
			c, err := ch.Consume("work", sim.ConsumeOptions{})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if err := br.Publish("/", "", "work", msgs[i%len(msgs)]); err != nil {
					b.Fatal(err)
				}
				i++
				d, ok := c.Next()
				if !ok {
					b.Fatal("no delivery")
				}
				if err := ch.Ack(d.DeliveryTag, false); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
