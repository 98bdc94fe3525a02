package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/amqpsim/amqpsim/scenarios"
	"github.com/amqpsim/amqpsim/sim"
)

// runUpgradeCheck replays scenarios on two RabbitMQ profiles and reports
// where the newer one answers differently: each differing step (unless
// --summary), then the counts per kind of difference and the files
// affected. It fails when any scenario answers differently, so that CI can
// gate on it.
func runUpgradeCheck(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("upgrade-check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var from, to sim.Version
	fs.Var(&from, "from", "the release to upgrade from (default: each scenario's own, from its source or rabbitmq line; in a file recorded on several releases, the oldest)")
	fs.Var(&to, "to", "the release to check (required): 3.10, 3.12, 3.13, 4.0, 4.1, 4.2 or 4.3")
	summary := fs.Bool("summary", false, "print only the summary")
	permit := permitFlag(fs)
	all := fs.Bool("all", false, "also list the differences that follow from an earlier one in the same scenario")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: amqpsim upgrade-check --to VERSION [--from VERSION] [--summary] [--all] [FILE|DIR...]")
		fmt.Fprintln(stderr, "\nReplays scenarios on the simulator of two RabbitMQ releases and reports, step by step,")
		fmt.Fprintln(stderr, "where the newer one answers differently, then a summary. With no FILE or DIR it checks")
		fmt.Fprintln(stderr, "the built-in library. It exits 1 when any scenario answers differently, so a CI job")
		fmt.Fprintln(stderr, "can gate on it.")
		fs.PrintDefaults()
	}
	if err := parseInterspersed(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err.Error()}
	}
	fromSet := isSet(fs, "from")
	if !isSet(fs, "to") {
		return usageError{"--to VERSION is required"}
	}
	list, err := loadScenarios(fs.Args())
	if err != nil {
		return err
	}
	if len(list) == 0 {
		return usageError{"no scenarios (*.txt) found"}
	}
	var cs []*scenarios.Comparison
	base := from
	for _, s := range list {
		f := s.Version
		if r := s.Releases(); len(r) > 1 {
			f = r[0] // the oldest recording: the upgrade is read off the file
		}
		if fromSet {
			f = from
		} else {
			base = f
		}
		c, err := scenarios.Compare(s, f, to, *permit...)
		if err != nil {
			return err
		}
		cs = append(cs, c)
		if *summary {
			continue
		}
		for _, d := range c.Differences {
			if d.FollowOn && !*all {
				continue
			}
			fmt.Fprintln(stdout, d)
		}
	}
	fmt.Fprint(stdout, scenarios.Summarize(base, to, cs))
	differ, unfaithful := 0, 0
	for _, c := range cs {
		if len(c.Differences) > 0 {
			differ++
		}
		if len(c.Baseline) > 0 {
			unfaithful++
		}
	}
	switch {
	case unfaithful > 0 && differ > 0:
		return fmt.Errorf("%d of %d scenarios answer differently on %v, and %d do not replay as recorded on their own release", differ, len(cs), to, unfaithful)
	case unfaithful > 0:
		return fmt.Errorf("%d of %d scenarios do not replay as recorded on their own release", unfaithful, len(cs))
	case differ > 0:
		return fmt.Errorf("%d of %d scenarios answer differently on %v", differ, len(cs), to)
	}
	return nil
}

// permitFlag registers --permit, a comma-separated list of deprecated
// features to permit (sim.Config.Permit), checked as it is parsed.
func permitFlag(fs *flag.FlagSet) *[]string {
	var names []string
	fs.Func("permit", "permit these deprecated features although the release denies them, comma-separated: "+
		strings.Join(sim.DeprecatedFeatures, ", ")+" (rabbitmq.conf deprecated_features.permit.NAME = true)", func(v string) error {
		for _, n := range strings.Split(v, ",") {
			if n = strings.TrimSpace(n); n != "" {
				names = append(names, n)
			}
		}
		return sim.CheckPermit(names)
	})
	return &names
}

// isSet reports whether the command line set the flag, as opposed to its
// zero value standing.
func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// parseInterspersed parses flags that may come after the positional
// arguments ("upgrade-check DIR --to 4.3").
func parseInterspersed(fs *flag.FlagSet, args []string) error {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
	return fs.Parse(pos)
}
