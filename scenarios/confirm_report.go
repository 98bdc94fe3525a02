package scenarios

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ConfirmOptions say where to confirm a failure report, and how often.
type ConfirmOptions struct {
	// RecordOptions name the broker (URL, and Rabbitmqctl for the steps
	// AMQP cannot take), or the cluster of a cluster report (Cluster).
	RecordOptions
	// Runs is how many times the report runs on the broker (3 when
	// zero or less): RabbitMQ itself races in places, and a step it answers
	// differently from run to run is no one's bug.
	Runs int
	// Ran, if set, is told when each run ends, with its error.
	Ran func(run int, err error)
}

// Outcome is what ConfirmReport concludes.
type Outcome int

const (
	// Agrees: RabbitMQ answers every step as the report says the
	// simulator did (in one run at least), so a client that ran as the
	// report's did would have failed on RabbitMQ too: the failure is in
	// the code under test.
	Agrees Outcome = iota + 1
	// Diverges: RabbitMQ answers a step differently, the same way in
	// every run: the simulator is wrong there.
	Diverges
	// Races: RabbitMQ's runs answer a step differently from each other,
	// and none answered the whole report as the simulator did: RabbitMQ
	// races there, and neither side is to blame.
	Races
	// Unconfirmable: the report has a fault a real broker cannot take on
	// command (NotConfirmableError); RabbitMQ answered the steps before
	// it as the simulator did.
	Unconfirmable
)

// Verdict is ConfirmReport's finding.
type Verdict struct {
	Outcome Outcome
	Report  *Scenario
	Broker  string // "RabbitMQ 4.3.6"
	Where   string // the broker's URL (password hidden), or the cluster's command
	Runs    int
	// Step is the step the verdict is about: the divergence, the race
	// or the fault; -1 for Agrees. Sim is the report's answer there, and
	// Answers the answers of the runs that reached it answering every
	// step before as the report did, Reached (numbered from 1).
	Step    int
	Sim     []string
	Answers [][]string
	Reached []int
	// Why is an Unconfirmable fault's reason.
	Why string
	// Renamed says how a cluster report's nodes were given the real
	// cluster's names ("rabbit@node1 as rmq-c1@localhost, ..."), if they
	// were.
	Renamed string
	// Matching is how many runs answered every step the runs took as
	// the report did; RaceStep is the first step the runs answered
	// differently from each other (-1: none).
	Matching int
	RaceStep int
}

// ConfirmReport runs a failure report (a scenario FromTrace wrote, such as
// amqptest.WithFailureReport's) as written against a real broker, or
// the real cluster for a cluster report, Runs times, and compares
// RabbitMQ's answers with the simulator's, step by step. The report's
// rabbitmq line must name the broker's release. A fault the broker cannot
// take stops every run there (Unconfirmable). It returns an error when a
// run cannot be made at all.
func ConfirmReport(report *Scenario, o ConfirmOptions) (*Verdict, error) {
	runs := o.Runs
	if runs <= 0 {
		runs = 3
	}
	where, renamed := redact(o.URL), ""
	if report.Cluster != nil {
		where = o.Cluster
		c, err := newClusterCtl(o.Cluster, o.Pending)
		if err != nil {
			return nil, err
		}
		report, renamed = renameNodes(report, c.names)
	}
	var got []*Result
	stop, why, broker := len(report.Steps), "", ""
	for run := range runs {
		_, res, err := Record(report, o.RecordOptions)
		if o.Ran != nil {
			o.Ran(run+1, err)
		}
		var nc *NotConfirmableError
		switch {
		case errors.As(err, &nc):
			why = nc.Why
			stop = min(stop, len(res.Steps)-1)
		case err != nil:
			return nil, err
		}
		broker = "RabbitMQ " + cmp.Or(res.Broker, report.Version.String())
		got = append(got, res)
	}
	v := judge(report, got, stop, why)
	v.Broker, v.Where, v.Renamed = broker, where, renamed
	return v, nil
}

// renameNodes gives a cluster report's nodes the real cluster's names,
// node by node, in its cluster directive and in its answers (texts that
// name a node), and says how, or "" when they are the same.
func renameNodes(report *Scenario, names []string) (*Scenario, string) {
	old := report.Cluster.Names
	if len(old) == 0 || len(old) != len(names) || slices.Equal(old, names) {
		return report, ""
	}
	var pairs, said []string
	for i, n := range old {
		pairs = append(pairs, n, names[i])
		said = append(said, n+" as "+names[i])
	}
	r := strings.NewReplacer(pairs...)
	s := report.Clone()
	s.Cluster.Names = slices.Clone(names)
	for _, st := range s.Steps {
		for i, l := range st.Expect {
			st.Expect[i] = r.Replace(l)
		}
	}
	return s, strings.Join(said, ", ")
}

// judge compares the runs' answers to the report's up to step stop, where
// a fault stopped them (why). A run that answered every step as the
// report did makes it Agrees (or Unconfirmable, when a fault stopped the
// runs). Otherwise the verdict is at the furthest step a run reached
// answering as the report: a run that strayed earlier met a race there,
// or a frame of RabbitMQ's that came after the quiet window on a loaded
// machine, and says nothing of the later step. The runs that reached it
// answered it all the same way (Diverges) or not (Races).
func judge(report *Scenario, got []*Result, stop int, why string) *Verdict {
	v := &Verdict{Report: report, Runs: len(got), Step: -1, RaceStep: raceStep(got, stop), Why: why}
	first := make([]int, len(got)) // each run's first step that differs from the report
	for r, res := range got {
		first[r] = stop
		for i := range stop {
			if !slices.Equal(res.Got[i], report.Steps[i].Expect) {
				first[r] = i
				break
			}
		}
		if first[r] == stop {
			v.Matching++
		}
	}
	switch {
	case v.Matching > 0 && stop < len(report.Steps):
		v.Outcome, v.Step = Unconfirmable, stop
	case v.Matching > 0:
		v.Outcome = Agrees
	default:
		v.Outcome, v.Step = Diverges, slices.Max(first)
		for r, res := range got {
			if first[r] < v.Step {
				continue
			}
			if len(v.Answers) > 0 && !slices.Equal(v.Answers[0], res.Got[v.Step]) {
				v.Outcome = Races
			}
			v.Answers = append(v.Answers, res.Got[v.Step])
			v.Reached = append(v.Reached, r+1)
		}
	}
	if v.Step >= 0 {
		v.Sim = report.Steps[v.Step].Expect
	}
	return v
}

// raceStep is the first of the first n steps the runs answered
// differently, or -1.
func raceStep(got []*Result, n int) int {
	for i := range n {
		for _, res := range got[1:] {
			if !slices.Equal(res.Got[i], got[0].Got[i]) {
				return i
			}
		}
	}
	return -1
}

// String says the verdict plainly, with the answers side by side and
// what to do next.
func (v *Verdict) String() string {
	var b strings.Builder
	runs := fmt.Sprintf("%d runs", v.Runs)
	if v.Runs == 1 {
		runs = "1 run"
	}
	switch v.Outcome {
	case Agrees:
		fmt.Fprintf(&b, "%s answers the same: the failure is in your code.\n", v.Broker)
		fmt.Fprintf(&b, "%s of %s (%d steps) on %s: %s answered every step as the simulator did.\n",
			runs, v.Report.Path, len(v.Report.Steps), v.Where, v.matching())
		if v.RaceStep >= 0 {
			fmt.Fprintf(&b, "(RabbitMQ races at step %d, %s; the simulator's answer is one of RabbitMQ's.)\n", v.RaceStep+1, v.stepText(v.RaceStep))
		}
	case Diverges:
		fmt.Fprintf(&b, "%s answers differently at step %d: this is a simulator divergence.\n", v.Broker, v.Step+1)
		fmt.Fprintf(&b, "Step %d is %s\nIt was answered so in %s, each of which answered every step before it as the simulator did.\n",
			v.Step+1, v.stepText(v.Step), v.reached())
		b.WriteString(v.strayed())
		b.WriteString("\n" + sideBySide("the simulator answered", v.Sim, v.Broker+" answered", v.Answers[0]))
		fmt.Fprintf(&b, "\nThe failure may not be in your code. File the divergence with amqpsim: attach %s and this output\n"+
			"(the report's steps up to %d reproduce it: \"amqpsim replay %s\" shows the simulator's side).\n", v.Report.Path, v.Step+1, v.Report.Path)
	case Races:
		fmt.Fprintf(&b, "%s answers step %d differently from run to run: RabbitMQ races there, so neither the simulator nor your code is to blame.\n",
			v.Broker, v.Step+1)
		fmt.Fprintf(&b, "Step %d is %s\nIt was reached in %s, answering every step before it as the simulator did.\n",
			v.Step+1, v.stepText(v.Step), v.reached())
		b.WriteString(v.strayed() + "\n")
		answers := v.distinct()
		for i, a := range answers {
			which := "run " + a.runs
			if strings.Contains(a.runs, ",") {
				which = "runs " + a.runs
			}
			b.WriteString(sideBySide("the simulator answered", v.Sim, fmt.Sprintf("%s answered (%s)", v.Broker, which), a.lines))
			if i < len(answers)-1 {
				b.WriteByte('\n')
			}
		}
		b.WriteString("\nA test that depends on this order fails on RabbitMQ too, some of the time.\n")
	case Unconfirmable:
		fmt.Fprintf(&b, "Not confirmable from step %d on: %s\n", v.Step+1, v.stepText(v.Step))
		fmt.Fprintf(&b, "%s cannot take that fault on command: %s.\n", v.Broker, v.Why)
		fmt.Fprintf(&b, "Up to it, %s answered the %d steps before as the simulator did; what follows is not confirmed.\n", v.matching(), v.Step)
	}
	if v.Renamed != "" {
		fmt.Fprintf(&b, "(The report's nodes ran as the cluster's: %s.)\n", v.Renamed)
	}
	return b.String()
}

// matching says how many runs matched: "all 3 runs", "2 of 3 runs".
func (v *Verdict) matching() string {
	switch {
	case v.Runs == 1:
		return "the run"
	case v.Matching == v.Runs:
		return fmt.Sprintf("all %d runs", v.Runs)
	}
	return fmt.Sprintf("%d of %d runs", v.Matching, v.Runs)
}

// stepText names step i by its place in the report: "REPORT.txt:23: ack
// ch1 #2".
func (v *Verdict) stepText(i int) string {
	st := v.Report.Steps[i]
	return fmt.Sprintf("%s:%d: %s", v.Report.Path, st.Line, st.Text)
}

// answer is one of the answers the runs gave at the verdict's step.
type answer struct {
	lines []string
	runs  string // "1, 3"
}

// distinct groups the runs' answers at the verdict's step.
func (v *Verdict) distinct() []answer {
	var out []answer
	for r, a := range v.Answers {
		i := slices.IndexFunc(out, func(x answer) bool { return slices.Equal(x.lines, a) })
		if i < 0 {
			out = append(out, answer{lines: a, runs: fmt.Sprint(v.Reached[r])})
			continue
		}
		out[i].runs += fmt.Sprintf(", %d", v.Reached[r])
	}
	return out
}

// reached says which runs reached the verdict's step: "all 3 runs", "2
// of 3 runs (2, 3)", "the run".
func (v *Verdict) reached() string {
	switch {
	case v.Runs == 1:
		return "the run"
	case len(v.Reached) == v.Runs:
		return fmt.Sprintf("all %d runs", v.Runs)
	}
	runs := make([]string, len(v.Reached))
	for i, r := range v.Reached {
		runs[i] = fmt.Sprint(r)
	}
	return fmt.Sprintf("%d of %d runs (%s)", len(v.Reached), v.Runs, strings.Join(runs, ", "))
}

// strayed says where the runs that did not reach the verdict's step first
// answered differently, or "".
func (v *Verdict) strayed() string {
	if len(v.Reached) == v.Runs || v.RaceStep < 0 {
		return ""
	}
	return fmt.Sprintf("The other runs answered step %d (%s) otherwise first: RabbitMQ races there, or a frame came after the quiet window "+
		"on a loaded machine (amqpsim confirm --window 300ms waits longer); run again to see more runs reach step %d.\n",
		v.RaceStep+1, v.stepText(v.RaceStep), v.Step+1)
}

// sideBySide renders two answers as two columns under their titles.
func sideBySide(leftTitle string, left []string, rightTitle string, right []string) string {
	if len(left) == 0 {
		left = []string{"(nothing)"}
	}
	if len(right) == 0 {
		right = []string{"(nothing)"}
	}
	width := len(leftTitle)
	for _, l := range left {
		width = max(width, len(l))
	}
	var b strings.Builder
	row := func(l, r string) { fmt.Fprintf(&b, "  %-*s | %s\n", width, l, r) }
	row(leftTitle, rightTitle)
	row(strings.Repeat("-", width), strings.Repeat("-", len(rightTitle)))
	for i := range max(len(left), len(right)) {
		var l, r string
		if i < len(left) {
			l = left[i]
		}
		if i < len(right) {
			r = right[i]
		}
		row(l, r)
	}
	return b.String()
}
