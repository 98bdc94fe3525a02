package tune

import (
	"testing"
	"time"
)

// BenchmarkSweep is the speed target: 9 prefetch values over 20,000
// messages each (4 consumers, 5 ms handlers, 2 ms round trip).
func BenchmarkSweep(b *testing.B) {
	cfg := Config{Consumers: 4, Handler: Constant(5 * time.Millisecond), RTT: 2 * time.Millisecond, Size: 1024, Backlog: 20000,
		Prefetch: []int{1, 2, 5, 10, 20, 50, 100, 200, 500}}
	for _, workers := range []int{1, 2} {
		cfg.Workers = workers
		b.Run(map[int]string{1: "workers=1", 2: "workers=2"}[workers], func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Sweep(cfg); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(9*20000), "ns/message")
		})
	}
}
