package tune

import (
	"slices"
	"sync"
	"time"
)

// KneeFraction is the share of the best throughput the recommended prefetch
// must reach.
const KneeFraction = 0.95

// Point is one prefetch value's outcome.
type Point struct {
	Prefetch   int     `json:"prefetch"` // 0: unlimited
	Throughput float64 `json:"throughput_per_s"`
	// Messages were handled in Duration, from the first basic.consume to
	// the last handler's end.
	Messages int           `json:"messages"`
	Duration time.Duration `json:"duration_ns"`
	// Stalled is set when the consumers stopped with messages left: an ack
	// mode that waits for more messages than the prefetch lets in.
	Stalled bool `json:"stalled"`
	// LatencyP50 and LatencyP99 are quantiles of a message's time from
	// publish to the end of its handler.
	LatencyP50 time.Duration `json:"latency_p50_ns"`
	LatencyP99 time.Duration `json:"latency_p99_ns"`
	// HeldPeak is the most messages on the clients at once, delivered and
	// not yet handled; HeldBytesPeak is their bodies' size.
	HeldPeak      int   `json:"held_peak"`
	HeldBytesPeak int64 `json:"held_bytes_peak"`
	// Shares is each consumer's part of the messages handled, in consumer
	// order: fair is 1/consumers each.
	Shares []float64 `json:"shares"`
	// BlastMax is the most unacked deliveries one consumer had at once:
	// what its crash would send back to the queue, redelivered. BlastMean
	// is the same averaged over time and consumers.
	BlastMax  int     `json:"blast_max"`
	BlastMean float64 `json:"blast_mean"`
}

// ShareRange returns the smallest and largest consumer share.
func (p Point) ShareRange() (lo, hi float64) {
	if len(p.Shares) == 0 {
		return 0, 0
	}
	return slices.Min(p.Shares), slices.Max(p.Shares)
}

// Result is a sweep's outcome.
type Result struct {
	Config Config  `json:"-"`
	Points []Point `json:"points"` // in the order of Config.Prefetch
	// Best is the index in Points of the highest throughput; Knee is the
	// index of the smallest prefetch reaching KneeFraction of it (0,
	// unlimited, counts as the largest).
	Best int `json:"best"`
	Knee int `json:"knee"`
}

// Recommended returns the knee's point: the smallest prefetch within
// KneeFraction of the best throughput.
func (r *Result) Recommended() Point { return r.Points[r.Knee] }

// Sweep simulates cfg once per prefetch value, each on its own broker and
// virtual clock, and finds the knee.
func Sweep(cfg Config) (*Result, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	points := make([]Point, len(cfg.Prefetch))
	errs := make([]error, len(cfg.Prefetch))
	// Runs share nothing, so running them side by side changes no result.
	work := make(chan int)
	var wg sync.WaitGroup
	for range min(cfg.Workers, len(cfg.Prefetch)) {
		wg.Go(func() {
			for i := range work {
				points[i], errs[i] = simulate(cfg, cfg.Prefetch[i])
			}
		})
	}
	for i := range cfg.Prefetch {
		work <- i
	}
	close(work)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	res := &Result{Config: cfg, Points: points}
	res.Best, res.Knee = knee(points)
	return res, nil
}

// knee returns the index of the best throughput and of the smallest
// prefetch within KneeFraction of it.
func knee(points []Point) (best, kn int) {
	for i, p := range points {
		if p.Throughput > points[best].Throughput {
			best = i
		}
	}
	kn = -1
	for i, p := range points {
		if p.Throughput >= KneeFraction*points[best].Throughput && (kn < 0 || smaller(p.Prefetch, points[kn].Prefetch)) {
			kn = i
		}
	}
	return best, kn
}

// smaller orders prefetch values with 0 (unlimited) last.
func smaller(a, b int) bool {
	if a == 0 {
		return false
	}
	return b == 0 || a < b
}

// Knee returns the index in points of the smallest prefetch whose
// throughput is within KneeFraction of the best one.
func Knee(points []Point) int {
	_, k := knee(points)
	return k
}
