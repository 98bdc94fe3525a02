package main

import (
	"bytes"
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
// kept), with a progress line per scenario. With --check it writes nothing
// and fails when the broker's answers differ from the files.
func runRecord(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("record", flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("url", os.Getenv("AMQP_URL"), "the broker's AMQP URL (default $AMQP_URL)")
	window := fs.Duration("window", scenarios.DefaultWindow, "how long the broker must stay silent after a step before its results are read")
	check := fs.Bool("check", false, "compare the broker's answers with the files instead of rewriting them")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: amqpsim record --url URL [--window 150ms] [--check] FILE|DIR...")
		fmt.Fprintln(stderr, "\nRuns each scenario against the broker and rewrites its expectations with the")
		fmt.Fprintln(stderr, "broker's answers. Queue and exchange names get a random per-run prefix, and")
		fmt.Fprintln(stderr, "everything a run declares is deleted afterwards.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err.Error()}
	}
	if *url == "" {
		return usageError{"--url is required (or set AMQP_URL)"}
	}
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
		start := time.Now()
		rec, _, err := scenarios.Record(s, scenarios.RecordOptions{URL: *url, Window: *window})
		if err != nil {
			return err
		}
		took := time.Since(start).Round(10 * time.Millisecond)
		switch {
		case *check:
			// Compare results only: the source line's date changes.
			rec.Source = s.Source
			status := "same   "
			if !bytes.Equal(rec.Format(), s.Format()) {
				status = "DIFFERS"
				differ++
			}
			fmt.Fprintf(stdout, "[%d/%d] %s %s (%d steps, %s)\n", i+1, len(list), status, s.Path, len(s.Steps), took)
		default:
			if err := os.WriteFile(s.Path, rec.Format(), 0o644); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "[%d/%d] recorded %s (%d steps, %s)\n", i+1, len(list), s.Path, len(s.Steps), took)
		}
	}
	if differ > 0 {
		return fmt.Errorf("the broker answers differently from %d of %d files", differ, len(list))
	}
	return nil
}
