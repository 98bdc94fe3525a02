package amqptest

import (
	"fmt"
	"slices"
	"strings"

	"github.com/amqpsim/amqpsim/sim"
)

// A schedule that failed once and then passed its re-runs failed by the
// order its goroutines ran in. The traces of the failing run and of a
// passing re-run show where: the first events they differ in.

// flakyContext and flakyShown are how many events firstDifference shows
// before the first difference, and of each run from it.
const (
	flakyContext = 3
	flakyShown   = 4
)

// firstDifference says where two runs' traces first differ.
func firstDifference(failingTrace, passingTrace []sim.Event) string {
	failing, passing := eventLines(failingTrace), eventLines(passingTrace)
	i := 0
	for i < len(failing) && i < len(passing) && failing[i] == passing[i] {
		i++
	}
	if i == len(failing) && i == len(passing) {
		return "the failing run's trace and a passing re-run's are the same: the failure came from the consumer's own goroutines"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "the failing run and a passing re-run first differ at event %d of their traces (the ordering that mattered):\n", i)
	for _, e := range failing[max(0, i-flakyContext):i] {
		fmt.Fprintf(&b, "\tboth:    %s\n", e)
	}
	show := func(label string, tr []string) {
		if i == len(tr) {
			fmt.Fprintf(&b, "\t%s (its trace ends here)\n", label)
		}
		for _, e := range tr[i:min(len(tr), i+flakyShown)] {
			fmt.Fprintf(&b, "\t%s %s\n", label, e)
		}
	}
	show("failing:", failing)
	show("passing:", passing)
	return strings.TrimSuffix(b.String(), "\n")
}

// eventLines are a trace's events as lines, with each consumer tag named
// by the order of its first use (ctag1, ctag2...): amqp091-go's tags
// count the consumers of the whole process, so they differ from run to
// run.
func eventLines(trace []sim.Event) []string {
	var tags []string
	for _, e := range trace {
		if e.ConsumerTag != "" && !slices.Contains(tags, e.ConsumerTag) {
			tags = append(tags, e.ConsumerTag)
		}
	}
	// Longest first, so that no tag is replaced inside a longer one.
	order := slices.Clone(tags)
	slices.SortFunc(order, func(a, b string) int { return len(b) - len(a) })
	var pairs []string
	for _, t := range order {
		pairs = append(pairs, t, fmt.Sprintf("ctag%d", slices.Index(tags, t)+1))
	}
	r := strings.NewReplacer(pairs...)
	out := make([]string, len(trace))
	for i, e := range trace {
		out[i] = r.Replace(e.String())
	}
	return out
}
