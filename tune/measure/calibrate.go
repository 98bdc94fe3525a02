package measure

import (
	"context"
	"fmt"
	"time"

	"github.com/amqpsim/amqpsim/tune"
)

// Calibration is the model's broker parameters measured on a real broker.
type Calibration struct {
	RTT           time.Duration // a client's round trip (queue.declare passive), median
	BrokerCost    time.Duration // tune.Config.BrokerCost
	UnbatchedCost time.Duration // tune.Config.UnbatchedCost
	// The measurements they were fitted to, in messages per second: a
	// batched workload (2 consumers, prefetch 1000, no handler time) and an
	// unbatched one (8 consumers, prefetch 1).
	Batched, Unbatched float64
}

// CalibrateOptions say where and how long to calibrate.
type CalibrateOptions struct {
	URL      string
	Messages int // per measurement (default 20000)
	Size     int // message size (default 1024)
	Repeat   int // measurements per workload, the median is kept (default 3)
}

// Calibrate measures the broker at o.URL twice over: a workload the broker's
// per-message cost limits and one its per-delivery overhead limits, and
// fits the model's BrokerCost and UnbatchedCost so that the simulator
// predicts both measurements, each found by bisection on the simulator
// itself. The client library's own time per message (amqp091-go's, on the
// same cores here) is part of what they measure.
func Calibrate(ctx context.Context, o CalibrateOptions) (Calibration, error) {
	if o.Messages <= 0 {
		o.Messages = 20000
	}
	if o.Size <= 0 {
		o.Size = 1024
	}
	if o.Repeat <= 0 {
		o.Repeat = 3
	}
	var cal Calibration
	rtts := make([]time.Duration, 0, o.Repeat)
	for range o.Repeat {
		rt, err := RoundTrip(o.URL, "", 50)
		if err != nil {
			return cal, err
		}
		rtts = append(rtts, rt)
	}
	cal.RTT = median(rtts)
	measure := func(consumers, prefetch int) (float64, error) {
		var rs []Result
		for range o.Repeat {
			r, err := Run(ctx, Options{URL: o.URL, Consumers: consumers, Handler: tune.Constant(0), Size: o.Size, Messages: o.Messages, Prefetch: prefetch})
			if err != nil {
				return 0, err
			}
			rs = append(rs, r)
		}
		return MedianThroughput(rs).Throughput, nil
	}
	var err error
	if cal.Batched, err = measure(2, 1000); err != nil {
		return cal, err
	}
	if cal.Unbatched, err = measure(8, 1); err != nil {
		return cal, err
	}
	base := tune.Config{Handler: tune.Constant(0), RTT: cal.RTT, Size: o.Size, Backlog: o.Messages}
	batched, unbatched := base, base
	batched.Consumers, batched.Prefetch = 2, []int{1000}
	unbatched.Consumers, unbatched.Prefetch = 8, []int{1}
	// The batched workload is fitted with no unbatched cost, then the
	// unbatched one with that broker cost. Refitting the first with the
	// second's cost can flip the model between its batched and unbatched
	// regimes and drive the broker cost to zero: one round each.
	batched.UnbatchedCost = -1
	if cal.BrokerCost, err = fit(batched, cal.Batched, func(c *tune.Config, d time.Duration) { c.BrokerCost = nonZero(d) }); err != nil {
		return cal, err
	}
	unbatched.BrokerCost = nonZero(cal.BrokerCost)
	if cal.UnbatchedCost, err = fit(unbatched, cal.Unbatched, func(c *tune.Config, d time.Duration) { c.UnbatchedCost = nonZero(d) }); err != nil {
		return cal, err
	}
	return cal, nil
}

// nonZero maps a cost of 0 to the Config's "none" (negative), since 0 there
// means the default.
func nonZero(d time.Duration) time.Duration {
	if d <= 0 {
		return -1
	}
	return d
}

// fit finds the cost in [0, 10 ms] at which the simulator predicts the
// measured throughput: throughput falls as the cost grows.
func fit(cfg tune.Config, measured float64, set func(*tune.Config, time.Duration)) (time.Duration, error) {
	lo, hi := time.Duration(0), 10*time.Millisecond
	for hi-lo > 100*time.Nanosecond {
		mid := (lo + hi) / 2
		set(&cfg, mid)
		res, err := tune.Sweep(cfg)
		if err != nil {
			return 0, err
		}
		if res.Points[0].Throughput > measured {
			lo = mid
		} else {
			hi = mid
		}
	}
	return ((lo + hi) / 2).Round(100 * time.Nanosecond), nil
}

// String prints the calibration and the flags that pass it to amqpsim
// tune.
func (c Calibration) String() string {
	return fmt.Sprintf("round trip (queue.declare, median):  %v\n"+
		"broker cost per message:             %v  (fitted to %.0f msg/s: 2 consumers, prefetch 1000, no handler time)\n"+
		"extra cost of an unbatched delivery: %v  (fitted to %.0f msg/s: 8 consumers, prefetch 1, no handler time)\n"+
		"pass: --rtt %v --broker-cost %v --unbatched-cost %v\n",
		c.RTT.Round(time.Microsecond), c.BrokerCost, c.Batched, c.UnbatchedCost, c.Unbatched,
		c.RTT.Round(time.Microsecond), c.BrokerCost, c.UnbatchedCost)
}
