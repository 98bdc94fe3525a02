// Command scale measures how a broker's cost grows with what it holds —
// topic bindings, queues, consumers, ready messages, 10 to 100,000 of
// each — on amqpsim and on a RabbitMQ broker side by side, in one run,
// through amqp091-go over TCP on loopback, and writes the plot and the
// table of docs/benchmarks.md's "Cost as the broker grows".
//
//	go run ./scripts/scale -url amqp://guest:guest@127.0.0.1:5692/ -rabbitmqctl scripts/rabbitmqctl-4.3
//	go run ./scripts/scale -sizes 10,1000 -svg '' -doc ''   # amqpsim alone, small, printed only
//
// amqpsim is served in this process (sim and wire, as amqpsim serve
// runs them, trace off) on a fresh broker per measurement. For each kind
// and size it builds the topology on a setup connection, then a probe
// connection publishes -messages 128-byte messages with publisher
// confirms (100 unconfirmed at most) and, where the workload consumes, a
// consumer takes and acks them; the rate is messages per second, the
// median of -repeat runs. Everything it makes on RabbitMQ is exclusive to
// the setup connection or auto-deleted with it, under names that start
// with amqpsim-scale-PID-, and goes when the connection closes.
//
// Memory per binding and per ready message is the growth of the Go heap
// in use (after a collection) for amqpsim, and of erlang:memory(total)
// (after collecting every process) for RabbitMQ, read with -rabbitmqctl;
// without it RabbitMQ's column is left empty.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "scale:", err)
		os.Exit(1)
	}
}

// options are the command's flags.
type options struct {
	url, ctl        string
	metadataMax     int
	sizes           []int
	messages        int
	repeat          int
	svg, doc        string
	ccKeys, ccBinds int
	kinds           []kind
	cpuProfile      string
}

func parse(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("scale", flag.ContinueOnError)
	fs.StringVar(&o.url, "url", "", "the RabbitMQ broker to compare with (empty: amqpsim alone)")
	fs.StringVar(&o.ctl, "rabbitmqctl", "", "rabbitmqctl for that broker, to read its memory (empty: not read)")
	fs.IntVar(&o.metadataMax, "rabbitmq-metadata-max", 10000, "the most bindings or queues to make on that broker (0: no limit); RabbitMQ 4.3 writes each to its metadata store, 23 a second here under load")
	sizes := fs.String("sizes", "10,100,1000,10000,100000", "the sizes, comma-separated")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the run (amqpsim and the client) to this file")
	only := fs.String("kinds", "", "the kinds to measure, comma-separated (bindings, queues, consumers, ready; empty: all)")
	fs.IntVar(&o.messages, "messages", 2000, "messages per measurement")
	fs.IntVar(&o.repeat, "repeat", 3, "runs per measurement; the median is kept")
	fs.StringVar(&o.svg, "svg", "docs/scale.svg", "where to write the plot (empty: nowhere)")
	fs.StringVar(&o.doc, "doc", "docs/benchmarks.md", "the page whose generated table to rewrite (empty: print it only)")
	fs.IntVar(&o.ccBinds, "cc-bindings", 1000, "topic bindings of the CC measurement")
	fs.IntVar(&o.ccKeys, "cc-keys", 8000, "routing keys in the CC header of the CC measurement")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	for _, f := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 2 || n > 1000000 {
			return o, fmt.Errorf("-sizes: %q is not a size from 2 to 1,000,000", f)
		}
		o.sizes = append(o.sizes, n)
	}
	slices.Sort(o.sizes)
	o.kinds = kinds
	if *only != "" {
		o.kinds = nil
		for _, name := range strings.Split(*only, ",") {
			i := slices.IndexFunc(kinds, func(k kind) bool { return k.name == strings.TrimSpace(name) })
			if i < 0 {
				return o, fmt.Errorf("-kinds: no kind %q", name)
			}
			o.kinds = append(o.kinds, kinds[i])
		}
	}
	if o.messages < 1 || o.repeat < 1 {
		return o, errors.New("-messages and -repeat must be positive")
	}
	return o, nil
}

// result is one kind's measurements on one target.
type result struct {
	rate []float64 // messages per second, by size
	// perItem is the memory per item at the largest size measured,
	// perItemAt, in bytes; 0 when not measured.
	perItem   float64
	perItemAt int
}

// report is everything one run measured.
type report struct {
	opts    options
	targets []string            // "amqpsim", then "RabbitMQ 4.3.6"
	results map[string][]result // by kind name, by target
	cc      []time.Duration     // the CC publish, by target
	started time.Time
	machine string
}

// run runs the command line, writing the table to out and the
// measurements as they come to progress.
func run(args []string, out, progress io.Writer) error {
	o, err := parse(args)
	if err != nil {
		return err
	}
	if o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	targets := []target{simTarget()}
	if o.url != "" {
		t, err := rabbitTarget(o.url, o.ctl, o.metadataMax)
		if err != nil {
			return err
		}
		targets = append(targets, t)
	}
	r := &report{opts: o, results: map[string][]result{}, started: time.Now(), machine: machine()}
	for _, t := range targets {
		r.targets = append(r.targets, t.name)
	}
	for _, k := range o.kinds {
		res := make([]result, len(targets))
		for _, n := range o.sizes {
			rates, perItem, err := measure(targets, k, n, o)
			if err != nil {
				return fmt.Errorf("%s, %d %s: %w", k.name, n, k.items, err)
			}
			for i, t := range targets {
				if !math.IsNaN(rates[i]) {
					fmt.Fprintf(progress, "%s: %d %s on %s: %.0f msgs/s\n", k.name, n, k.items, t.name, rates[i])
				}
				res[i].rate = append(res[i].rate, rates[i])
				if perItem[i] > 0 {
					res[i].perItem, res[i].perItemAt = perItem[i], n
				}
			}
		}
		r.results[k.name] = res
	}
	for _, t := range targets {
		d, err := measureCC(t, o)
		if err != nil {
			return fmt.Errorf("the CC publish on %s: %w", t.name, err)
		}
		fmt.Fprintf(progress, "CC publish of %d keys over %d bindings on %s: %v\n", o.ccKeys, o.ccBinds, t.name, d)
		r.cc = append(r.cc, d)
	}
	table := r.markdown()
	fmt.Fprint(out, table)
	if o.svg != "" {
		if err := os.WriteFile(o.svg, r.svg(), 0o644); err != nil {
			return err
		}
	}
	if o.doc != "" {
		return rewriteSection(o.doc, table)
	}
	return nil
}

// measure builds n items of kind k on each target, one after the other,
// then measures them in turns, o.repeat times, so that the load of the
// machine weighs on all alike; it returns each target's median rate (NaN
// for a size it does not take) and, at the largest size it takes, its
// memory per item.
func measure(targets []target, k kind, n int, o options) (rates, perItem []float64, err error) {
	sessions := make([]*session, len(targets))
	defer func() {
		for _, s := range sessions {
			if s != nil {
				s.close()
			}
		}
	}()
	perItem = make([]float64, len(targets))
	for i, t := range targets {
		if !t.takes(k, n) {
			continue // not measured: NaN
		}
		largest := k.memory
		for _, m := range o.sizes {
			largest = largest && (m <= n || !t.takes(k, m))
		}
		s, err := t.open()
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", t.name, err)
		}
		sessions[i] = s
		var before uint64
		if largest {
			if before, err = s.memory(); err != nil {
				return nil, nil, err
			}
		}
		if err := k.setup(s, n); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", t.name, err)
		}
		if largest {
			after, err := s.memory()
			if err != nil {
				return nil, nil, err
			}
			if after > before {
				perItem[i] = float64(after-before) / float64(n)
			}
		}
	}
	runs := make([][]float64, len(targets))
	for range o.repeat {
		for i, s := range sessions {
			if s == nil {
				continue
			}
			r, err := k.measure(s, o.messages)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %w", targets[i].name, err)
			}
			runs[i] = append(runs[i], r)
		}
	}
	for _, rs := range runs {
		if len(rs) == 0 {
			rates = append(rates, math.NaN())
			continue
		}
		slices.Sort(rs)
		rates = append(rates, rs[len(rs)/2])
	}
	return rates, perItem, nil
}
