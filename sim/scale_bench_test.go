package sim_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/amqpsim/amqpsim/sim"
)

// scaleSizes are the sizes the scale benchmarks grow the broker to: its
// cost per message must stay flat (docs/benchmarks.md, "Cost as the
// broker grows"; scripts/scale measures the same through amqp091-go
// beside RabbitMQ).
var scaleSizes = []int{10, 100, 1000, 10_000, 100_000}

// scaleBroker is a broker with one channel.
func scaleBroker(b *testing.B) (*sim.Broker, *sim.Channel) {
	bk := sim.New(sim.Config{NoTrace: true})
	ch, err := bk.Connect("bench").Channel()
	if err != nil {
		b.Fatal(err)
	}
	return bk, ch
}

// BenchmarkTopicBindings publishes to a topic exchange with n bindings
// "k<i>.*" to one queue, each message matching one of them, and reports
// the heap each binding holds. The queue is purged (untimed) every 4096
// messages.
func BenchmarkTopicBindings(b *testing.B) {
	for _, n := range scaleSizes {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			bk, ch := scaleBroker(b)
			ch.ExchangeDeclare("x", "topic", sim.ExchangeOptions{})
			ch.QueueDeclare("q", sim.QueueOptions{})
			before := heapInUse()
			for i := range n {
				if err := ch.QueueBind("q", fmt.Sprintf("k%d.*", i), "x", nil); err != nil {
					b.Fatal(err)
				}
			}
			perBinding := float64(heapInUse()-before) / float64(n)
			keys := make([]string, 4096)
			for i := range keys {
				keys[i] = fmt.Sprintf("k%d.x", (i*7919)%n)
			}
			msg := sim.Message{Body: make([]byte, 128)}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if err := bk.Publish("/", "x", keys[i], msg); err != nil {
					b.Fatal(err)
				}
				if i++; i == len(keys) {
					b.StopTimer()
					i = 0
					ch.QueuePurge("q")
					b.StartTimer()
				}
			}
			b.ReportMetric(perBinding, "B/binding")
		})
	}
}

// BenchmarkManyQueues publishes through the default exchange to one of n
// queues at a time, purging them (untimed) as they fill.
func BenchmarkManyQueues(b *testing.B) {
	for _, n := range scaleSizes {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			bk, ch := scaleBroker(b)
			names := make([]string, n)
			for i := range names {
				names[i] = fmt.Sprintf("q%d", i)
				if _, err := ch.QueueDeclare(names[i], sim.QueueOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			msg := sim.Message{Body: make([]byte, 128)}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				q := names[(i*7919)%n]
				if err := bk.Publish("/", "", q, msg); err != nil {
					b.Fatal(err)
				}
				if i++; i%4096 == 0 {
					b.StopTimer()
					for j := i - 4096; j < i; j++ {
						ch.QueuePurge(names[(j*7919)%n])
					}
					b.StartTimer()
				}
			}
		})
	}
}

// BenchmarkTopicWorstCase routes keys through the binding sets that cost
// the most states per word (sim's topicWalk bound), reporting the states
// visited per publish beside the time:
//   - attack: issue 27's binding key of 20 "#.a" pairs and "b" (3.10 and
//     4.0 take it; 4.3 refuses more than two '#') and a key of 40 words;
//   - two-hash: 4.3's worst, 500 binding keys "#.#.W1...W125" of "a" and
//     "*" words (each matches a key of 128 "a" words, the most a 255-byte
//     key holds), with a key of 128 "a" words: 3.6 million states, near
//     the budget of one publish (1,000 such keys take 7.3 million, and
//     their publish is refused);
//   - cc: 1,000 bindings "k<i>.*" to as many queues, one publish whose CC
//     header holds 8,000 keys (issue 27: 4.2 s; RabbitMQ 4.3.6: 0.12 s).
func BenchmarkTopicWorstCase(b *testing.B) {
	longKey := strings.TrimSuffix(strings.Repeat("a.", 128), ".")
	for _, tc := range []struct {
		name     string
		version  sim.Version
		bindings func(i int) string
		n        int
		key      string
		headers  sim.Table
	}{
		{"attack", sim.V3_10, func(int) string { return strings.Repeat("#.a.", 20) + "b" }, 1, strings.TrimSuffix(strings.Repeat("a.", 40), "."), nil},
		{"two-hash", sim.V4_3, twoHashKey, 500, longKey, nil},
		{"cc", sim.V4_3, func(i int) string { return fmt.Sprintf("k%d.*", i) }, 1000, "none", ccHeader(8000, 1000)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			bk := sim.New(sim.Config{NoTrace: true, Version: tc.version})
			ch, _ := bk.Connect("bench").Channel()
			ch.ExchangeDeclare("x", "topic", sim.ExchangeOptions{})
			for i := range tc.n {
				q := fmt.Sprintf("q%d", i%1000)
				if i < 1000 {
					ch.QueueDeclare(q, sim.QueueOptions{})
				}
				if err := ch.QueueBind(q, tc.bindings(i), "x", nil); err != nil {
					b.Fatal(err)
				}
			}
			msg := sim.Message{Body: make([]byte, 16), Properties: sim.Properties{Headers: tc.headers}}
			b.ReportAllocs()
			for b.Loop() {
				if err := bk.Publish("/", "x", tc.key, msg); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(sim.RouteStates(bk)), "states/op")
			for i := range min(tc.n, 1000) {
				ch.QueuePurge(fmt.Sprintf("q%d", i))
			}
			runtime.KeepAlive(bk)
		})
	}
}

// twoHashKey is the i-th of 4.3's costliest binding keys: "#.#" and 125
// words, "a" or "*" as the bits of i say (every one matches a key of 128
// "a" words, and no two share more than their first words).
func twoHashKey(i int) string {
	words := []string{"#", "#"}
	for j := range 125 {
		w := "a"
		if (i>>(j%10))&1 == 1 {
			w = "*"
		}
		words = append(words, w)
	}
	return strings.Join(words, ".")
}

// ccHeader is a CC header of n keys "k<i mod bindings>.x".
func ccHeader(n, bindings int) sim.Table {
	cc := make([]any, n)
	for i := range cc {
		cc[i] = fmt.Sprintf("k%d.x", i%bindings)
	}
	return sim.Table{"CC": cc}
}

// BenchmarkConsumersAtScale is BenchmarkManyConsumers (classic) grown to
// 100,000 consumers, a thousand to a channel: every consumer but the
// last holds a full window of 1, and each step the last acks, a message
// is published and delivered to it.
func BenchmarkConsumersAtScale(b *testing.B) {
	for _, n := range scaleSizes {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			bk, ch := scaleBroker(b)
			ch.QueueDeclare("work", sim.QueueOptions{})
			msg := sim.Message{Body: make([]byte, 128)}
			conn := bk.Connect("consumers")
			var active *sim.Consumer
			var activeCh *sim.Channel
			for i := range n {
				if i%1000 == 0 {
					var err error
					if activeCh, err = conn.Channel(); err != nil {
						b.Fatal(err)
					}
					activeCh.Qos(1, 0, false)
				}
				c, err := activeCh.Consume("work", sim.ConsumeOptions{})
				if err != nil {
					b.Fatal(err)
				}
				bk.Publish("/", "", "work", msg) // fills this consumer's window
				active = c
			}
			d, ok := active.Next()
			if !ok {
				b.Fatal("the last consumer got nothing")
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := activeCh.Ack(d.DeliveryTag, false); err != nil {
					b.Fatal(err)
				}
				bk.Publish("/", "", "work", msg)
				if d, ok = active.Next(); !ok {
					b.Fatal("the active consumer got nothing")
				}
			}
		})
	}
}
