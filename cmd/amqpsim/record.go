package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/amqpsim/amqpsim/scenarios"
)

// runRecord runs scenario files against a real broker and writes the
// broker's answers into them as their expectations (comments and steps
// kept), with a progress line per scenario and broker. Each broker's
// answers become its release's recording, beside the other releases'. With
// --check it writes nothing and fails when a broker's answers differ from
// its release's expectations in the files.
func runRecord(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("record", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var urls, ctls []string
	fs.Func("url", "a broker's AMQP URL, once per broker to record on (default $AMQP_URL)", func(v string) error {
		urls = append(urls, v)
		return nil
	})
	fs.Func("rabbitmqctl", "the command line that runs the broker's rabbitmqctl, once per --url in the same order (default $RABBITMQCTL, else rabbitmqctl)", func(v string) error {
		ctls = append(ctls, v)
		return nil
	})
	window := fs.Duration("window", scenarios.DefaultWindow, "how long the broker must stay silent after a step before its results are read")
	cluster := fs.String("cluster", "", "the command line that controls a real cluster, such as \"scripts/rabbitmq cluster\", to record\nthe cluster scenarios (those with a cluster directive) on")
	pending := fs.Duration("pending", scenarios.DefaultPending, "on a cluster, how long to wait for a method's answer before it counts as pending")
	check := fs.Bool("check", false, "compare the broker's answers with the files instead of rewriting them")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: amqpsim record --url URL [--rabbitmqctl CMD] [--url URL [--rabbitmqctl CMD]]... [--window 150ms] [--check] FILE|DIR...")
		fmt.Fprintln(stderr, "       amqpsim record --cluster CMD [--pending 2s] [--window 150ms] [--check] FILE|DIR...")
		fmt.Fprintln(stderr, "\nRuns each scenario against each broker and rewrites that broker's release's")
		fmt.Fprintln(stderr, "expectations with its answers, keeping other releases' recordings. Queue and")
		fmt.Fprintln(stderr, "exchange names get a random per-run prefix, and everything a run declares is")
		fmt.Fprintln(stderr, "deleted afterwards. Cluster scenarios are recorded on the cluster that --cluster")
		fmt.Fprintln(stderr, "controls (\"scripts/rabbitmq cluster\": its status, ctl N, stop-node N, kill-node N,")
		fmt.Fprintln(stderr, "start-node N, pause-node N, resume-node N, partition N and heal commands), the")
		fmt.Fprintln(stderr, "others on the --url brokers.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err.Error()}
	}
	if len(urls) == 0 && os.Getenv("AMQP_URL") != "" {
		urls = []string{os.Getenv("AMQP_URL")}
	}
	if len(urls) == 0 && *cluster == "" {
		return usageError{"--url is required (or set AMQP_URL), or --cluster for cluster scenarios"}
	}
	if len(ctls) > 0 && len(ctls) != len(urls) {
		return usageError{fmt.Sprintf("%d --rabbitmqctl for %d --url: give one per broker, in the same order", len(ctls), len(urls))}
	}
	ctls = append(ctls, make([]string, len(urls)-len(ctls))...)
	if fs.NArg() == 0 {
		return usageError{"name at least one scenario FILE or DIR"}
	}
	var list []*scenarios.Scenario
	for _, p := range fs.Args() {
		l, err := scenarios.Load(p)
		if err != nil {
			return err
		}
		list = append(list, l...)
	}
	differ := 0
	for i, s := range list {
		targets := urls
		if s.Cluster != nil {
			if *cluster == "" {
				return fmt.Errorf("%s runs on a cluster of %d nodes: record it with --cluster CMD", s.Path, s.Cluster.Nodes)
			}
			targets = []string{""}
		} else if len(urls) == 0 {
			return fmt.Errorf("%s runs on a single broker: record it with --url URL", s.Path)
		}
		for b, url := range targets {
			start := time.Now()
			o := scenarios.RecordOptions{Cluster: *cluster, Pending: *pending, Window: *window}
			if s.Cluster == nil {
				o = scenarios.RecordOptions{URL: url, Rabbitmqctl: ctls[b], Window: *window}
			}
			rec, res, err := scenarios.Record(s, o)
			if err != nil {
				return err
			}
			took := time.Since(start).Round(10 * time.Millisecond)
			release := res.Scenario.Version
			if *check {
				status, diff := "same   ", res.Diff()
				if diff != "" {
					status = "DIFFERS"
					differ++
				}
				fmt.Fprintf(stdout, "[%d/%d] %s %s on %s (%d steps, %s)\n", i+1, len(list), status, s.Path, release, len(s.Steps), took)
				// What differs, so that a race is seen as it happens.
				fmt.Fprint(stdout, diff)
				continue
			}
			if err := os.WriteFile(s.Path, rec.Format(), 0o644); err != nil {
				return err
			}
			s = rec // the next broker's answers join this one's
			fmt.Fprintf(stdout, "[%d/%d] recorded %s on %s (%d steps, %s)\n", i+1, len(list), s.Path, release, len(s.Steps), took)
		}
	}
	if differ > 0 {
		return fmt.Errorf("the broker answers differently from %d of %d files", differ, len(list))
	}
	return nil
}
