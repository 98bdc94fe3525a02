package sim_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/amqpsim/amqpsim/sim"
)

// BenchmarkTTLExpiry measures one Advance that expires every message of a
// queue holding n of them, in ns per expired message (the ns/msg metric;
// setup is not timed). A queue keeps one timer, for its head, so the cost
// per message must stay flat as n grows:
//
//   - same-instant: x-message-ttl 1000, all published at once; one timer
//     firing drops them all.
//   - staggered: published 1 µs apart; the timer fires once per message,
//     re-armed for the next head each time.
//   - dead-lettered: same-instant, each message dead-lettered to a second
//     queue (x-death built per message).
//
// Run with -benchtime=3x for the 10^6 cases.
func BenchmarkTTLExpiry(b *testing.B) {
	for _, mode := range []string{"same-instant", "staggered", "dead-lettered"} {
		for _, n := range []int{1e4, 1e5, 1e6} {
			b.Run(fmt.Sprintf("%s/%d", mode, n), func(b *testing.B) {
				var spent time.Duration
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					bk := sim.New(sim.Config{NoTrace: true})
					ch, _ := bk.Connect("bench").Channel()
					args := sim.Table{"x-message-ttl": int32(1000)}
					if mode == "dead-lettered" {
						args["x-dead-letter-exchange"] = ""
						args["x-dead-letter-routing-key"] = "dlq"
						ch.QueueDeclare("dlq", sim.QueueOptions{})
					}
					if _, err := ch.QueueDeclare("q", sim.QueueOptions{Args: args}); err != nil {
						b.Fatal(err)
					}
					msg := sim.Message{Body: make([]byte, 16)}
					for j := 0; j < n; j++ {
						bk.Publish("/", "", "q", msg)
						if mode == "staggered" {
							bk.Advance(time.Microsecond)
						}
					}
					b.StartTimer()
					start := time.Now()
					bk.Advance(time.Hour)
					spent += time.Since(start)
					b.StopTimer()
					if s, _ := bk.QueueStats("/", "q"); s.Ready != 0 {
						b.Fatalf("%d messages left", s.Ready)
					}
					if mode == "dead-lettered" {
						if s, _ := bk.QueueStats("/", "dlq"); s.Ready != n {
							b.Fatalf("%d dead-lettered, want %d", s.Ready, n)
						}
					}
					b.StartTimer()
				}
				b.ReportMetric(float64(spent.Nanoseconds())/float64(b.N*n), "ns/msg")
			})
		}
	}
}
