package fuzz

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// Write prints the report: a row per release, then each finding with its
// difference.
func (r *Report) Write(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "release\tbroker\tscenarios\tsteps\tagreed\tdivergences\traces\ttoo slow\terrors\t")
	for _, rr := range r.Releases {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t\n", rr.Release, rr.Broker, rr.Scenarios, rr.Steps, rr.Agreed, rr.Divergences, rr.Races, rr.Slow, rr.Errors)
	}
	tw.Flush()
	for _, f := range r.Findings {
		if f.Slow != "" {
			fmt.Fprintf(w, "\nseed %d on %s: %s\n", f.Seed, f.Release, f.Slow)
			continue
		}
		kind := "divergence"
		if f.Race {
			kind = "race in RabbitMQ (set aside)"
		}
		fmt.Fprintf(w, "\nseed %d on %s: %s, %s", f.Seed, f.Release, kind, f.Where)
		if f.File != "" {
			fmt.Fprintf(w, ": %s", f.File)
		}
		fmt.Fprintln(w)
		diff := f.Diff
		if f.Race {
			diff = f.Raced
		}
		for _, l := range strings.Split(strings.TrimRight(diff, "\n"), "\n") {
			fmt.Fprintln(w, "  "+l)
		}
	}
	fmt.Fprintf(w, "\n%d scenarios in %v\n", r.scenarios(), r.Elapsed.Round(time.Second))
}

func (r *Report) scenarios() int {
	n := 0
	for _, rr := range r.Releases {
		n += rr.Scenarios
	}
	return n
}
