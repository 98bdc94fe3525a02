package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/amqpsim/amqpsim/scenarios"
)

// runReplay replays scenario files on the simulator: one line per scenario,
// a diff for each divergence, and a summary. With no arguments it replays
// the built-in library. It fails when any scenario diverges.
func runReplay(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	timeline := fs.Bool("timeline", false, "print, per consumer, what it held and when")
	svg := fs.String("svg", "", "draw each scenario as an SVG sequence diagram: a FILE for one scenario, a directory for several")
	verbose := fs.Bool("v", false, "print every step's results")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: amqpsim replay [--timeline] [--svg FILE|DIR] [-v] [FILE|DIR...]")
		fmt.Fprintln(stderr, "\nReplays scenarios on the simulator and compares the results with the expectations")
		fmt.Fprintln(stderr, "written in them. With no FILE or DIR it replays the built-in library.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err.Error()}
	}
	list, err := loadScenarios(fs.Args())
	if err != nil {
		return err
	}
	if len(list) == 0 {
		return usageError{"no scenarios (*.txt) found"}
	}
	diverged := 0
	for i, s := range list {
		res, err := scenarios.Replay(s)
		if err != nil {
			return err
		}
		diff := res.Diff()
		status := "ok  "
		if diff != "" {
			status = "FAIL"
			diverged++
		}
		fmt.Fprintf(stdout, "%s %-50s %3d steps\n", status, s.Name, len(s.Steps))
		if diff != "" {
			fmt.Fprint(stdout, diff)
		}
		if *verbose {
			for j, st := range s.Steps {
				fmt.Fprintf(stdout, "  %d: %s\n", st.Line, st.Text)
				for _, l := range res.Got[j] {
					fmt.Fprintf(stdout, "      %s\n", l)
				}
			}
		}
		if *timeline {
			fmt.Fprint(stdout, indentLines(res.Timeline()))
		}
		if *svg != "" {
			path := *svg
			if len(list) > 1 {
				if i == 0 {
					if err := os.MkdirAll(path, 0o755); err != nil {
						return err
					}
				}
				path = filepath.Join(path, s.Name+".svg")
			}
			if err := os.WriteFile(path, res.SVG(), 0o644); err != nil {
				return err
			}
		}
	}
	fmt.Fprintf(stdout, "%d scenarios: %d ok, %d diverged\n", len(list), len(list)-diverged, diverged)
	if diverged > 0 {
		return fmt.Errorf("%d of %d scenarios diverge from their expectations", diverged, len(list))
	}
	return nil
}

// loadScenarios parses the scenarios named on the command line, or the
// built-in library when there are none.
func loadScenarios(paths []string) ([]*scenarios.Scenario, error) {
	if len(paths) == 0 {
		return scenarios.LoadFS(scenarios.Library(), ".")
	}
	var out []*scenarios.Scenario
	for _, p := range paths {
		list, err := scenarios.Load(p)
		if err != nil {
			return nil, err
		}
		out = append(out, list...)
	}
	return out, nil
}

// indentLines indents every line of s by four spaces.
func indentLines(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		b.WriteString("    " + l + "\n")
	}
	return b.String()
}
