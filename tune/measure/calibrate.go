package measure

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/amqpsim/amqpsim/tune"
)

// Calibration is the model's broker parameters measured on a real broker.
type Calibration struct {
	RTT           time.Duration // a client's round trip (queue.declare passive), median
	BrokerCost    time.Duration // tune.Config.BrokerCost
	UnbatchedCost time.Duration // tune.Config.UnbatchedCost
	ClientCost    time.Duration // tune.Config.ClientCost
	// The measurements they were fitted to, in messages per second: a
	// batched workload (2 consumers, prefetch 1000, no handler time), an
	// unbatched one (8 consumers, prefetch 1) and a handler-bound one (2
	// consumers, prefetch 100, 1 ms handlers).
	Batched, Unbatched, HandlerBound float64
}

// CalibrateOptions say where and how long to calibrate.
type CalibrateOptions struct {
	URL      string
	Messages int // per measurement (default 20000)
	Size     int // message size (default 1024)
	Repeat   int // measurements per workload, the median is kept (default 3)
}

// Calibrate measures three workloads on the broker at o.URL: one the
// broker's per-message cost limits, one its per-delivery overhead limits and
// one the consumers' own per-message time limits, and fits the model's
// BrokerCost, UnbatchedCost and ClientCost so that the simulator predicts
// all three, each found by bisection on the simulator itself. ClientCost
// includes the measuring handler's own lateness (a precise sleep wakes
// 20–40 µs late here): an application's handler times should be measured
// the same way, from the delivery's arrival to its ack.
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
	measure := func(consumers, prefetch int, h time.Duration, n int) (float64, error) {
		var rs []Result
		for range o.Repeat {
			r, err := Run(ctx, Options{URL: o.URL, Consumers: consumers, Handler: tune.Constant(h), Size: o.Size, Messages: n, Prefetch: prefetch})
			if err != nil {
				return 0, err
			}
			rs = append(rs, r)
		}
		return MedianThroughput(rs).Throughput, nil
	}
	var err error
	// About two seconds of 1 ms handlers on 2 consumers.
	const handler = time.Millisecond
	hn := min(o.Messages, 4000)
	if cal.Batched, err = measure(2, 1000, 0, o.Messages); err != nil {
		return cal, err
	}
	if cal.Unbatched, err = measure(8, 1, 0, o.Messages); err != nil {
		return cal, err
	}
	if cal.HandlerBound, err = measure(2, 100, handler, hn); err != nil {
		return cal, err
	}
	base := tune.Config{Handler: tune.Constant(0), RTT: cal.RTT, Size: o.Size, Backlog: o.Messages}
	batched, unbatched, bound := base, base, base
	batched.Consumers, batched.Prefetch = 2, []int{1000}
	unbatched.Consumers, unbatched.Prefetch = 8, []int{1}
	bound.Consumers, bound.Prefetch, bound.Handler, bound.Backlog = 2, []int{100}, tune.Constant(handler), hn
	// Each workload depends mostly on its own cost and a little on the
	// others': three rounds settle them.
	for range 3 {
		for _, c := range []*tune.Config{&batched, &unbatched, &bound} {
			c.BrokerCost, c.UnbatchedCost, c.ClientCost = nonZero(cal.BrokerCost), nonZero(cal.UnbatchedCost), nonZero(cal.ClientCost)
		}
		if cal.BrokerCost, err = fit(batched, cal.Batched, func(c *tune.Config, d time.Duration) { c.BrokerCost = nonZero(d) }); err != nil {
			return cal, err
		}
		unbatched.BrokerCost = nonZero(cal.BrokerCost)
		if cal.UnbatchedCost, err = fit(unbatched, cal.Unbatched, func(c *tune.Config, d time.Duration) { c.UnbatchedCost = nonZero(d) }); err != nil {
			return cal, err
		}
		bound.BrokerCost, bound.UnbatchedCost = nonZero(cal.BrokerCost), nonZero(cal.UnbatchedCost)
		if cal.ClientCost, err = fit(bound, cal.HandlerBound, func(c *tune.Config, d time.Duration) { c.ClientCost = nonZero(d) }); err != nil {
			return cal, err
		}
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
		"client cost per message:             %v  (fitted to %.0f msg/s: 2 consumers, prefetch 100, 1 ms handlers)\n"+
		"pass: --rtt %v --broker-cost %v --unbatched-cost %v --client-cost %v\n",
		c.RTT.Round(time.Microsecond), c.BrokerCost, c.Batched, c.UnbatchedCost, c.Unbatched, c.ClientCost, c.HandlerBound,
		c.RTT.Round(time.Microsecond), c.BrokerCost, c.UnbatchedCost, c.ClientCost)
}

// CalibrateMain runs `amqpsim tune calibrate` with args (the flags after
// "calibrate") and prints the calibration. It returns flag.ErrHelp for -h
// and a tune.UsageError for a bad command line.
func CalibrateMain(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("tune calibrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o CalibrateOptions
	fs.StringVar(&o.URL, "url", os.Getenv("AMQP_URL"), "the broker's AMQP URL (default $AMQP_URL)")
	fs.IntVar(&o.Messages, "messages", 20000, "messages per measurement")
	fs.IntVar(&o.Size, "size", 1024, "message size in bytes")
	fs.IntVar(&o.Repeat, "repeat", 3, "measurements per workload; the median is kept")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: amqpsim tune calibrate --url URL [--messages 20000] [--size 1024] [--repeat 3]")
		fmt.Fprintln(stderr, "\nMeasures the broker with amqp091-go consumers (a fresh queue, deleted afterwards)")
		fmt.Fprintln(stderr, "and prints the round trip and costs to pass to amqpsim tune. It takes about a minute.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return tune.UsageError{Msg: err.Error()}
	}
	if o.URL == "" {
		return tune.UsageError{Msg: "--url is required (or set AMQP_URL)"}
	}
	if fs.NArg() > 0 {
		return tune.UsageError{Msg: fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	cal, err := Calibrate(context.Background(), o)
	if err != nil {
		return err
	}
	_, err = fmt.Fprint(stdout, cal)
	return err
}
