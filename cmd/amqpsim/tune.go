package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/amqpsim/amqpsim/tune"
	"github.com/amqpsim/amqpsim/tune/measure"
)

// runTune runs a prefetch sweep on the simulator, or with "calibrate" first
// measures a real broker's costs for it.
func runTune(args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "calibrate" {
		return runCalibrate(args[1:], stdout, stderr)
	}
	return runSweep(args, stdout, stderr)
}

// runSweep runs `amqpsim tune` with args (the flags after "tune"), writing
// the sweep (tune.Sweep) to stdout in the chosen format and, with --svg,
// the plot to a file.
func runSweep(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("tune", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg tune.Config
	fs.IntVar(&cfg.Consumers, "consumers", 1, "number of consumers")
	fs.IntVar(&cfg.ConsumersPerChannel, "per-channel", 1, "consumers sharing a channel")
	fs.IntVar(&cfg.ChannelsPerConnection, "per-connection", 1, "channels sharing a connection")
	handler := fs.String("handler", "1ms", "handler time per message: 5ms, uniform:1ms,9ms, exp:5ms (mean), lognormal:5ms,0.5 (median, sigma) or file:PATH (one duration per line)")
	fs.DurationVar(&cfg.RTT, "rtt", time.Millisecond, "round trip between clients and broker, as a client measures it (calibrate prints it)")
	bandwidth := fs.String("bandwidth", "0", "each connection's broker-to-client bandwidth: 1Gbit, 100Mbit, 50MB (bytes/s); 0 is unlimited")
	size := fs.String("size", "1KiB", "message body size: 512, 1KiB, 4MB")
	fs.IntVar(&cfg.Backlog, "backlog", 0, "messages waiting when the consumers start (default 20000 without --rate)")
	fs.Float64Var(&cfg.Rate, "rate", 0, "publish --messages more messages at this many per second")
	fs.IntVar(&cfg.Messages, "messages", 0, "messages published at --rate")
	fs.IntVar(&cfg.AckEvery, "ack-every", 1, "ack each message (1) or every k-th with multiple=true")
	fs.DurationVar(&cfg.BrokerCost, "broker-cost", tune.DefaultBrokerCost, "broker's time per message (from calibrate)")
	fs.DurationVar(&cfg.UnbatchedCost, "unbatched-cost", tune.DefaultUnbatchedCost, "extra time for a delivery that travels alone (from calibrate)")
	fs.DurationVar(&cfg.ClientCost, "client-cost", 0, "a consumer's own time per message besides the handler, beyond what calibrate measured")
	prefetch := fs.String("prefetch", "1,2,5,10,20,50,100,200,500,1000", "prefetch values to sweep, comma-separated (0: unlimited)")
	fs.BoolVar(&cfg.Global, "global", false, "apply the prefetch per channel (basic.qos global=true) instead of per consumer;\nneeds --rabbitmq 4.2 or older (4.3 denies global_qos)")
	fs.Var(&cfg.Version, "rabbitmq", "the RabbitMQ release to simulate: 3.10, 3.12, 3.13, 4.0, 4.1, 4.2 or 4.3 (default)")
	fs.Uint64Var(&cfg.Seed, "seed", 1, "seed for the handler times")
	format := fs.String("format", "table", "output: table, csv or json")
	svg := fs.String("svg", "", "also write the plot (SVG) to this file")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: amqpsim tune [flags]")
		fmt.Fprintln(stderr, "       amqpsim tune calibrate --url URL")
		fmt.Fprintln(stderr, "\nSimulates the consumers on the simulator's virtual clock once per prefetch value and")
		fmt.Fprintln(stderr, "recommends the smallest that reaches 95% of the best throughput.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	var err error
	if cfg.Handler, err = tune.ParseDist(*handler); err != nil {
		return usageError{"--handler: " + err.Error()}
	}
	if cfg.Bandwidth, err = parseBandwidth(*bandwidth); err != nil {
		return usageError{"--bandwidth: " + err.Error()}
	}
	n, err := parseSize(*size)
	if err != nil {
		return usageError{"--size: " + err.Error()}
	}
	cfg.Size = n
	if cfg.Prefetch, err = parsePrefetch(*prefetch); err != nil {
		return usageError{"--prefetch: " + err.Error()}
	}
	if cfg.Backlog == 0 && cfg.Rate == 0 {
		cfg.Backlog = 20000
	}
	// A flag's 0 means none, not Config's default.
	if cfg.BrokerCost == 0 {
		cfg.BrokerCost = -1
	}
	if cfg.UnbatchedCost == 0 {
		cfg.UnbatchedCost = -1
	}
	cfg.Workers = runtime.GOMAXPROCS(0)
	if *format != "table" && *format != "csv" && *format != "json" {
		return usageError{fmt.Sprintf("--format %q: want table, csv or json", *format)}
	}
	if err := cfg.Validate(); err != nil {
		return usageError{err.Error()}
	}
	res, err := tune.Sweep(cfg)
	if err != nil {
		return err
	}
	switch *format {
	case "csv":
		err = res.WriteCSV(stdout)
	case "json":
		err = res.WriteJSON(stdout)
	default:
		err = res.WriteTable(stdout)
	}
	if err != nil {
		return err
	}
	if *svg != "" {
		return os.WriteFile(*svg, res.SVG(), 0o644)
	}
	return nil
}

// parsePrefetch reads a comma-separated list of prefetch values.
func parsePrefetch(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 0 || n > 65535 {
			return nil, fmt.Errorf("%q: want whole numbers from 0 (unlimited) to 65535", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// parseSize reads a byte count: a number with an optional unit B, KB, MB,
// GB (powers of 1000) or KiB, MiB, GiB (powers of 1024).
func parseSize(s string) (int, error) {
	v, err := parseUnit(s, map[string]float64{"": 1, "B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30})
	if err != nil {
		return 0, err
	}
	if v > 1<<31 {
		return 0, fmt.Errorf("%q: at most 2GiB", s)
	}
	return int(v), nil
}

// parseBandwidth reads a bandwidth in bytes per second: bits with bit,
// Kbit, Mbit, Gbit, or bytes with B, KB, MB, GB (an optional "/s" after
// either); 0 means unlimited.
func parseBandwidth(s string) (float64, error) {
	return parseUnit(strings.TrimSuffix(s, "/s"), map[string]float64{
		"": 1, "B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9,
		"bit": 1.0 / 8, "Kbit": 1e3 / 8, "Mbit": 1e6 / 8, "Gbit": 1e9 / 8,
	})
}

// parseUnit reads a number and one of units, which it is multiplied by.
func parseUnit(s string, units map[string]float64) (float64, error) {
	s = strings.TrimSpace(s)
	i := strings.IndexFunc(s, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if i < 0 {
		i = len(s)
	}
	v, err := strconv.ParseFloat(s[:i], 64)
	m, ok := units[strings.TrimSpace(s[i:])]
	if err != nil || !ok || v < 0 || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%q: want a number and a unit", s)
	}
	return v * m, nil
}

// runCalibrate runs `amqpsim tune calibrate` with args (the flags after
// "calibrate") and prints the calibration (measure.Calibrate).
func runCalibrate(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("tune calibrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o measure.CalibrateOptions
	fs.StringVar(&o.URL, "url", os.Getenv("AMQP_URL"), "the broker's AMQP URL (default $AMQP_URL)")
	fs.IntVar(&o.Messages, "messages", 20000, "messages per measurement")
	fs.IntVar(&o.Size, "size", 1024, "message size in bytes")
	fs.IntVar(&o.Repeat, "repeat", 3, "measurements per workload; the median is kept")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: amqpsim tune calibrate --url URL [--messages 20000] [--size 1024] [--repeat 3]")
		fmt.Fprintln(stderr, "\nMeasures the broker with amqp091-go consumers (a fresh queue, deleted afterwards)")
		fmt.Fprintln(stderr, "and prints the round trip and costs to pass to amqpsim tune. It takes about ten seconds.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err.Error()}
	}
	if o.URL == "" {
		return usageError{"--url is required (or set AMQP_URL)"}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	cal, err := measure.Calibrate(context.Background(), o)
	if err != nil {
		return err
	}
	_, err = fmt.Fprint(stdout, cal)
	return err
}
