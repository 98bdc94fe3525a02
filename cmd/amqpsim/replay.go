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
	"github.com/amqpsim/amqpsim/sim"
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
	var on sim.Version
	permit := permitFlag(fs)
	fs.Var(&on, "rabbitmq", "replay on this RabbitMQ release's profile (3.10 to 4.3) and report, step by step, where it answers\nthe scenarios differently from the release they were recorded on (see also upgrade-check)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: amqpsim replay [--rabbitmq VERSION] [--timeline] [--svg FILE|DIR] [-v] [FILE|DIR...]")
		fmt.Fprintln(stderr, "\nReplays scenarios on the simulator and compares the results with the expectations")
		fmt.Fprintln(stderr, "written in them. With no FILE or DIR it replays the built-in library.")
		fs.PrintDefaults()
	}
	if err := parseInterspersed(fs, args); err != nil {
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
	if isSet(fs, "rabbitmq") {
		return replayOn(list, on, *permit, stdout)
	}
	diverged, unrecorded := 0, 0
	for i, s := range list {
		res, err := scenarios.Replay(s)
		if err != nil {
			return err
		}
		diff, err := replayEveryRelease(s, res)
		if err != nil {
			return err
		}
		status, note := "ok  ", ""
		switch {
		case s.Unrecorded():
			// Nothing to compare with: not a divergence.
			status, note, diff = "NEW ", " without expectations: record them first (amqpsim record --url URL FILE), or write them", ""
			unrecorded++
		case diff != "":
			status = "FAIL"
			diverged++
		}
		fmt.Fprintf(stdout, "%s %-50s %3d steps%s\n", status, s.Name, len(s.Steps), note)
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
	fmt.Fprintf(stdout, "%d scenarios: %d ok, %d diverged", len(list), len(list)-diverged-unrecorded, diverged)
	if unrecorded > 0 {
		fmt.Fprintf(stdout, ", %d without expectations (record them first)", unrecorded)
	}
	fmt.Fprintln(stdout)
	if diverged > 0 {
		return fmt.Errorf("%d of %d scenarios diverge from their expectations", diverged, len(list))
	}
	if unrecorded == len(list) {
		return fmt.Errorf("no expectations to compare with: record the scenarios first (amqpsim record --url URL FILE), or write their results")
	}
	return nil
}

// replayEveryRelease returns the differences of a scenario's replays
// from each release's recording it holds, each on its own release's
// profile; res is the replay of the scenario's own release.
func replayEveryRelease(s *scenarios.Scenario, res *scenarios.Result) (string, error) {
	rels := s.Releases()
	if len(rels) < 2 {
		return res.Diff(), nil
	}
	var b strings.Builder
	for _, v := range rels {
		view, _ := s.On(v)
		r := res
		if v != s.Version {
			var err error
			if r, err = scenarios.Replay(view); err != nil {
				return "", err
			}
		}
		if d := r.Diff(); d != "" {
			fmt.Fprintf(&b, "  on %s:\n%s", v, d)
		}
	}
	return b.String(), nil
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

// replayOn replays each scenario on release v and reports every step where
// v answers differently from the release the scenario was recorded on,
// then the upgrade summary; a scenario the simulator does not reproduce
// on its own release is a FAIL. It fails when any scenario differs.
func replayOn(list []*scenarios.Scenario, v sim.Version, permit []string, stdout io.Writer) error {
	var cs []*scenarios.Comparison
	differ := 0
	for _, s := range list {
		c, err := scenarios.CompareProfiles(s, s.Version, v, permit...)
		if err != nil {
			return err
		}
		cs = append(cs, c)
		status := "same"
		switch {
		case s.Unrecorded():
			// Only the two releases' answers are compared.
			status = "NEW "
			if len(c.Differences) > 0 {
				status = "DIFF"
				differ++
			}
		case len(c.Baseline) > 0:
			status = "FAIL"
			differ++
		case len(c.Differences) > 0:
			status = "DIFF"
			differ++
		}
		on := "recorded on " + s.Version.String()
		if s.Unrecorded() {
			on = "not recorded: the simulator of " + s.Version.String() + " against " + v.String()
		}
		fmt.Fprintf(stdout, "%s %-50s %3d steps (%s)\n", status, s.Name, len(s.Steps), on)
		for _, m := range c.Baseline {
			fmt.Fprintf(stdout, "  line %d: %s: the simulator of %s does not answer as recorded: %q instead of %q\n",
				m.Line, m.Text, s.Version, m.Got, m.Want)
		}
		for _, d := range c.Differences {
			fmt.Fprintf(stdout, "  line %d: %s: %s", d.Line, d.Step, d.Detail)
			if len(d.Causes) > 0 {
				fmt.Fprintf(stdout, " [%s]", strings.Join(d.Causes, ", "))
			}
			if d.FollowOn {
				fmt.Fprint(stdout, " (follows from an earlier difference)")
			}
			fmt.Fprintln(stdout)
		}
	}
	from := sim.DefaultVersion
	if len(list) > 0 {
		from = list[0].Version
	}
	fmt.Fprint(stdout, scenarios.Summarize(from, v, cs))
	if differ > 0 {
		return fmt.Errorf("%d of %d scenarios answer differently on RabbitMQ %s", differ, len(list), v)
	}
	return nil
}
