package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"testing"
	"time"

	"github.com/amqpsim/amqpsim/fuzz"
	"github.com/amqpsim/amqpsim/internal/bubble"
)

// inBubble runs f with a *testing.T, for the replays over the in-memory
// wire (synctest bubbles). A program has none: bubble.Main gives it one
// and exits with f's code. Tests of the command set it to run f with
// their own.
var inBubble = func(f func(t *testing.T) int) int {
	bubble.Main(f)
	return 1 // not reached
}

// runFuzz generates random scenarios, records them on real brokers,
// replays them on the simulator, and shrinks each divergence into a file
// for the library.
func runFuzz(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("fuzz", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var urls, ctls []string
	fs.Func("url", "a broker's AMQP URL, once per broker (release) to record on (default $AMQP_URL)", func(v string) error {
		urls = append(urls, v)
		return nil
	})
	fs.Func("rabbitmqctl", "the command line of the broker's rabbitmqctl, once per --url in the same order (default $RABBITMQCTL, else rabbitmqctl)", func(v string) error {
		ctls = append(ctls, v)
		return nil
	})
	seed := fs.Uint64("seed", 0, "the first scenario's seed; the others follow (default: from the clock, printed)")
	count := fs.Int("count", 100, "how many scenarios")
	steps := fs.Int("steps", fuzz.DefaultSteps, "the number of steps a scenario aims for")
	cluster := fs.String("cluster", "", "the command line that controls a real cluster, such as \"scripts/rabbitmq cluster\":\ngenerate scenarios with node faults and record them on it")
	nodes := fs.Int("nodes", 3, "with --cluster, the cluster's number of nodes")
	parallel := fs.Int("parallel", 4, "scenarios recorded at once on each broker")
	recordings := fs.Int("recordings", 3, "recordings of a divergent scenario before it counts as a divergence, not a race in RabbitMQ")
	window := fs.Duration("window", 0, "the recorder's quiet window after a step (default 150ms)")
	shrink := fs.Bool("shrink", true, "shrink each divergence to the smallest scenario that still diverges")
	out := fs.String("out", "fuzz-findings", "the directory for the divergences' files, each recorded on every broker")
	keepDir := fs.String("keep", "", "a directory to write every recording to, agreed or not, to replay the batch again later")
	print := fs.Bool("print", false, "print the generated scenarios and record nothing")
	noWire := fs.Bool("no-wire", false, "replay in process only, not also through amqp091-go over the in-memory wire")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: amqpsim fuzz --url URL [--rabbitmqctl CMD] [--url URL [--rabbitmqctl CMD]]... [--seed N] [--count N] [--out DIR]")
		fmt.Fprintln(stderr, "       amqpsim fuzz --cluster CMD [--nodes 3] [--seed N] [--count N]")
		fmt.Fprintln(stderr, "       amqpsim fuzz --print [--seed N] [--count N]")
		fmt.Fprintln(stderr, "\nGenerates random scenarios from a seed, records each on every broker, replays each")
		fmt.Fprintln(stderr, "release's answers on its profile (in process and over the wire), records a scenario")
		fmt.Fprintln(stderr, "that diverges again to tell a race inside RabbitMQ from a divergence, shrinks each")
		fmt.Fprintln(stderr, "divergence, and writes it recorded on every broker to --out. Exit status 1 on a")
		fmt.Fprintln(stderr, "divergence or a scenario that could not be recorded.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return usageError{"fuzz takes no arguments: " + strings.Join(fs.Args(), " ")}
	}
	if *seed == 0 {
		*seed = uint64(time.Now().UnixNano() % 1_000_000_000)
	}
	opts := fuzz.Options{Steps: *steps}
	if *cluster != "" {
		opts.Nodes = *nodes
	}
	if *print {
		for i := range *count {
			s := fuzz.Generate(*seed+uint64(i), opts)
			fmt.Fprintf(stdout, "%s\n", s.Format())
		}
		return nil
	}
	if len(urls) == 0 && os.Getenv("AMQP_URL") != "" {
		urls = []string{os.Getenv("AMQP_URL")}
	}
	if len(urls) == 0 && *cluster == "" {
		return usageError{"--url is required (or set AMQP_URL), or --cluster"}
	}
	if len(ctls) > 0 && len(ctls) != len(urls) {
		return usageError{fmt.Sprintf("%d --rabbitmqctl for %d --url: give one per broker, in the same order", len(ctls), len(urls))}
	}
	ctls = append(ctls, make([]string, len(urls)-len(ctls))...)
	cfg := fuzz.Config{Seed: *seed, Count: *count, Options: opts, Cluster: *cluster, Parallel: *parallel,
		Recordings: *recordings, Window: *window, Shrink: *shrink, Out: *out, Keep: *keepDir, Log: stderr}
	for i, u := range urls {
		if *cluster != "" {
			break
		}
		cfg.Brokers = append(cfg.Brokers, fuzz.Broker{URL: u, Rabbitmqctl: ctls[i]})
	}
	fmt.Fprintf(stdout, "amqpsim fuzz --seed %d --count %d\n", *seed, *count)
	var runErr error
	code := inBubble(func(t *testing.T) int {
		if !*noWire {
			cfg.Wire = fuzz.WireReplay(t)
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
		defer stop()
		rep, err := fuzz.Run(ctx, cfg)
		if rep != nil {
			rep.Write(stdout)
		}
		switch {
		case err != nil:
			runErr = err
			fmt.Fprintln(stderr, "amqpsim fuzz:", err)
			return 1
		case rep.Failed():
			runErr = errDiverged
			return 1
		}
		return 0
	})
	if code != 0 && runErr == nil {
		return errDiverged
	}
	return runErr
}

// errDiverged is the fuzz command's failure: a divergence, or a scenario
// that could not be recorded; the report says which.
var errDiverged = errors.New("the simulator diverged from RabbitMQ, or a scenario could not be recorded (see the report)")
