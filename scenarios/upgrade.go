package scenarios

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/amqpsim/amqpsim/sim"
)

// Difference is a step of a scenario where one RabbitMQ release answers
// differently from another: what the upgrade check reports.
type Difference struct {
	Scenario string // the scenario's name
	Path     string
	Line     int
	Step     string // the step as written
	// Kind classifies the difference, e.g. "queue.declare: connection.close
	// 541 INTERNAL_ERROR" or "headers: x-delivery-count"; the summary
	// counts by it.
	Kind string
	// Detail says what the newer release does, in a sentence.
	Detail string
	// From and To are the step's result lines on each release.
	From, To []string
	// Causes name the profile changes (sim.Change) that, each undone
	// alone, make the step answer as on the older release; empty when
	// none does by itself.
	Causes []string
	// FollowOn is set for a difference after an earlier one of the same
	// scenario closed a channel or a connection, and for a step the
	// client could not send because of an earlier difference (a message
	// it never received): most likely a consequence, not a difference of
	// its own.
	FollowOn bool
}

// String is "path:12: queue.declare ...: 4.3 closes the connection with 541 ...".
func (d Difference) String() string {
	tag := ""
	if d.FollowOn {
		tag = " (follows from an earlier difference)"
	}
	return fmt.Sprintf("%s:%d: %s: %s%s%s", d.Path, d.Line, d.Step, d.Detail, d.causeText(), tag)
}

func (d Difference) causeText() string {
	if len(d.Causes) == 0 {
		return ""
	}
	return " [" + strings.Join(d.Causes, ", ") + "]"
}

// group is what the summary counts a difference under: its cause, or its
// kind when no single change explains it.
func (d Difference) group() string {
	if len(d.Causes) > 0 {
		return strings.Join(d.Causes, " + ")
	}
	return d.Kind
}

// Comparison is one scenario replayed on two releases.
type Comparison struct {
	Scenario *Scenario
	From, To sim.Version
	// Baseline lists the steps where the replay on From differs from the
	// scenario's own expectations: where it does, the simulator does not
	// reproduce the file on From and the differences below are suspect.
	Baseline []Mismatch
	// Differences are the steps whose results differ between From and To,
	// in file order.
	Differences []Difference
	// Recorded says the differences were read off the file's recordings
	// of both releases, not predicted by the profiles.
	Recorded bool
}

// Compare returns every step of a scenario where release to answers
// differently from release from: the upgrade check. When the file holds
// broker recordings of both releases (Scenario.Recorded), the differences
// are read off the recordings, exactly (Comparison.Recorded); otherwise,
// hand-written answers included, they are
// predicted by replaying it on the simulator of each release
// (CompareProfiles). permit names deprecated features both releases
// permit (sim.Config.Permit); no recording has them, so with permit the
// profiles answer. Each difference names its causes: the changes
// (sim.Changes) that, undone one at a time on to, make the step answer as
// on from.
func Compare(s *Scenario, from, to sim.Version, permit ...string) (*Comparison, error) {
	a, okFrom := s.On(from)
	b, okTo := s.On(to)
	recorded := s.Recorded()
	if !okFrom || !okTo || len(permit) > 0 || !slices.Contains(recorded, from) || !slices.Contains(recorded, to) {
		return CompareProfiles(s, from, to, permit...)
	}
	c := &Comparison{Scenario: a, From: from, To: to, Recorded: true}
	x, y := expectations(a), expectations(b)
	c.Differences = differences(a, x, y, to)
	if len(c.Differences) > 0 {
		if err := c.attribute(x, nil); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// CompareProfiles replays a scenario on the simulator of release from and
// of release to, and returns every step where to answers differently: the
// upgrade check's prediction for a scenario not recorded on both. Both
// replays are deterministic, so a difference is the profiles'
// (sim.Profile), not chance.
func CompareProfiles(s *Scenario, from, to sim.Version, permit ...string) (*Comparison, error) {
	if v, ok := s.On(from); ok {
		s = v // the baseline is from's own recording
	}
	a, err := ReplayOn(s, from, permit...)
	if err != nil {
		return nil, err
	}
	c := &Comparison{Scenario: s, From: from, To: to}
	if from == s.Version && !s.Unrecorded() {
		c.Baseline = a.Mismatches()
	}
	b, err := ReplayOn(s, to, permit...)
	if err != nil {
		return nil, err
	}
	c.Differences = differences(s, a.Got, b.Got, to)
	if len(c.Differences) > 0 {
		if err := c.attribute(a.Got, permit); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// expectations are a scenario's expected results, step by step.
func expectations(s *Scenario) [][]string {
	out := make([][]string, len(s.Steps))
	for i, st := range s.Steps {
		out[i] = st.Expect
	}
	return out
}

// differences lists the steps whose results from and to differ, in file
// order, marking those that follow from an earlier one.
func differences(s *Scenario, from, to [][]string, v sim.Version) []Difference {
	var out []Difference
	closed := false
	for i, st := range s.Steps {
		var x, y []string
		if i < len(from) {
			x = from[i]
		}
		if i < len(to) {
			y = to[i]
		}
		if slices.Equal(x, y) {
			continue
		}
		kind, detail, closes := classify(st.Text, x, y, v)
		unsent := len(y) > 0 && strings.HasPrefix(y[0], "! ")
		out = append(out, Difference{Scenario: s.Name, Path: s.Path, Line: st.Line, Step: st.Text,
			Kind: kind, Detail: detail, From: x, To: y, FollowOn: closed || unsent && len(out) > 0})
		closed = closed || closes
	}
	return out
}

// attribute finds the causes of the differences: for every change the two
// profiles differ by, it replays on to with that change undone, and the
// steps that then answer as on from have it as a cause.
func (c *Comparison) attribute(from [][]string, permit []string) error {
	fromP := sim.New(sim.Config{Version: c.From, Permit: permit}).Profile()
	toP := sim.New(sim.Config{Version: c.To, Permit: permit}).Profile()
	index := map[int]int{} // step line -> step index
	for i, st := range c.Scenario.Steps {
		index[st.Line] = i
	}
	for _, ch := range sim.Changes() {
		undone := ch.Undo(toP, fromP)
		if undone == toP {
			continue
		}
		r, err := replayWith(c.Scenario, sim.Config{Profile: &undone})
		if err != nil {
			return err
		}
		for j := range c.Differences {
			d := &c.Differences[j]
			i := index[d.Line]
			if i < len(r.Got) && i < len(from) && slices.Equal(r.Got[i], from[i]) {
				d.Causes = append(d.Causes, ch.Name)
			}
		}
	}
	return nil
}

// closeRE reads a close result line: "C <- connection.close 541 (queue.declare): INTERNAL_ERROR - ...".
var closeRE = regexp.MustCompile(`^\S+ <- (connection|channel)\.close (\d+) \(([^)]*)\): ([A-Z_]+)`)

// classify names a difference: its kind (the summary's key), a sentence
// for the report, and whether the newer release closes something the
// older one kept open.
func classify(step string, from, to []string, v sim.Version) (kind, detail string, closes bool) {
	verb, _, _ := strings.Cut(step, " ")
	what := whatStep(verb)
	added, removed := lineDiff(from, to)
	for _, l := range added {
		if m := closeRE.FindStringSubmatch(l); m != nil {
			_, text, _ := strings.Cut(l, "): ")
			return fmt.Sprintf("%s: %s.close %s %s", what, m[1], m[2], m[4]),
				fmt.Sprintf("%s closes the %s with %s %s", v, m[1], m[2], text), true
		}
	}
	if len(to) > 0 && strings.HasPrefix(to[0], "! ") {
		if strings.HasSuffix(to[0], " is closed") {
			return what + ": not sent, the channel is closed",
				fmt.Sprintf("on %s the channel or connection is already closed", v), false
		}
		return what + ": not sent", fmt.Sprintf("on %s the step cannot be sent: %s", v, strings.TrimPrefix(to[0], "! ")), false
	}
	for _, l := range removed {
		if m := closeRE.FindStringSubmatch(l); m != nil {
			return fmt.Sprintf("%s: no %s.close %s %s", what, m[1], m[2], m[4]),
				fmt.Sprintf("%s does not close the %s (%s %s before); it answers %s", v, m[1], m[2], m[4], orNothing(added)), false
		}
	}
	if verb == "headers" {
		var names []string
		for _, l := range append(slices.Clone(added), removed...) {
			if n, _, ok := strings.Cut(l, "="); ok && !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
		slices.Sort(names)
		return "headers: " + strings.Join(names, ", "),
			fmt.Sprintf("%s's headers differ: %s instead of %s", v, orNothing(added), orNothing(removed)), false
	}
	aspect := "results"
	switch {
	case anyContains(added, removed, " <- basic.return"):
		aspect = "basic.return"
	case anyContains(added, removed, " <- confirm "):
		aspect = "confirms"
	case anyContains(added, removed, " <- basic.cancel"):
		aspect = "broker cancel"
	case anyContains(added, removed, "get-ok", "get-empty"):
		aspect = "basic.get reply"
	case anyContains(added, removed, "declare-ok"):
		aspect = "declare-ok counts"
	case anyContains(added, removed, " <- "):
		aspect = "deliveries"
	case anyContains(added, removed, " ready="):
		aspect = "queue counts"
	}
	return what + ": " + aspect, fmt.Sprintf("%s answers %s instead of %s", v, orNothing(added), orNothing(removed)), false
}

// lineDiff returns the lines only in b (added) and only in a (removed),
// counting repeats.
func lineDiff(a, b []string) (added, removed []string) {
	left := map[string]int{}
	for _, l := range a {
		left[l]++
	}
	for _, l := range b {
		if left[l] > 0 {
			left[l]--
			continue
		}
		added = append(added, l)
	}
	right := map[string]int{}
	for _, l := range b {
		right[l]++
	}
	for _, l := range a {
		if right[l] > 0 {
			right[l]--
			continue
		}
		removed = append(removed, l)
	}
	return added, removed
}

func anyContains(a, b []string, subs ...string) bool {
	for _, l := range append(slices.Clone(a), b...) {
		for _, s := range subs {
			if strings.Contains(l, s) {
				return true
			}
		}
	}
	return false
}

func orNothing(ls []string) string {
	if len(ls) == 0 {
		return "nothing"
	}
	return strings.Join(ls, "; ")
}

// UpgradeReport sums up the comparisons of many scenarios: what a team
// upgrading from one release to another must look at.
type UpgradeReport struct {
	From, To  sim.Version
	Scenarios int
	// Affected are the scenarios with at least one difference, by name.
	Affected []string
	// Kinds counts the differences by cause (Difference.Causes), or by
	// kind when no single change explains them, follow-ons left out;
	// Files lists, per key, the scenarios that have it.
	Kinds map[string]int
	Files map[string][]string
	// Steps counts every differing step, FollowOns those that follow from
	// an earlier one.
	Steps, FollowOns int
	// Unreproduced names the scenarios the simulator does not replay
	// exactly on From (Comparison.Baseline).
	Unreproduced []string
}

// Summarize builds the report of comparisons from one release to another.
func Summarize(from, to sim.Version, cs []*Comparison) *UpgradeReport {
	r := &UpgradeReport{From: from, To: to, Scenarios: len(cs), Kinds: map[string]int{}, Files: map[string][]string{}}
	for _, c := range cs {
		if len(c.Baseline) > 0 {
			r.Unreproduced = append(r.Unreproduced, c.Scenario.Name)
		}
		if len(c.Differences) > 0 {
			r.Affected = append(r.Affected, c.Scenario.Name)
		}
		for _, d := range c.Differences {
			r.Steps++
			if d.FollowOn {
				r.FollowOns++
				continue
			}
			g := d.group()
			r.Kinds[g]++
			if fs := r.Files[g]; !slices.Contains(fs, d.Scenario) {
				r.Files[g] = append(fs, d.Scenario)
			}
		}
	}
	return r
}

// String renders the report: the totals, then one line per kind, most
// frequent first, with the scenarios that have it.
func (r *UpgradeReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "upgrade check %s -> %s: %d of %d scenarios answer differently, %d steps (%d follow from an earlier difference)\n",
		r.From, r.To, len(r.Affected), r.Scenarios, r.Steps, r.FollowOns)
	kinds := make([]string, 0, len(r.Kinds))
	for k := range r.Kinds {
		kinds = append(kinds, k)
	}
	slices.SortFunc(kinds, func(a, c string) int {
		if r.Kinds[a] != r.Kinds[c] {
			return r.Kinds[c] - r.Kinds[a]
		}
		return strings.Compare(a, c)
	})
	for _, k := range kinds {
		files := r.Files[k]
		list := strings.Join(files[:min(len(files), 5)], ", ")
		if len(files) > 5 {
			list += fmt.Sprintf(", and %d more", len(files)-5)
		}
		noun := "files"
		if len(files) == 1 {
			noun = "file"
		}
		fmt.Fprintf(&b, "  %4d  %s  (%d %s: %s)\n", r.Kinds[k], k, len(files), noun, list)
		for _, ch := range sim.Changes() {
			if ch.Name == k {
				fmt.Fprintf(&b, "        %s (from %s)\n", ch.Why, ch.Since)
			}
		}
		if doc := ConsumerDoc(k); doc != "" {
			fmt.Fprintf(&b, "        for a consumer: %s\n", doc)
		}
	}
	if len(r.Unreproduced) > 0 {
		fmt.Fprintf(&b, "  note: %d scenarios do not replay exactly on %s, so their differences are suspect: %s\n",
			len(r.Unreproduced), r.From, strings.Join(r.Unreproduced, ", "))
	}
	return b.String()
}

// consumerChanges are the changes (sim.Change names) that
// docs/upgrading-consumers.md has a row for: what a consumer's code has
// to answer when it moves from 3.x to 4.3 (TestUpgradingConsumersDoc).
var consumerChanges = []string{"publisher's x-death ignored", "x-last-death headers", "classic delivery-count",
	"global_qos denied", "consumer timeout on quorum queues only", "quorum queues time deliveries out",
	"basic.reject and basic.nack counted apart", "quorum queues expire every head", "quorum delivery limit 20", "x-queue-type defaults to classic",
	"stream nack, reject and recover", "max_message_size 16 MiB"}

// ConsumerDoc returns the row of docs/upgrading-consumers.md for the
// change named change (a sim.Change), with its recording and the fix a
// consumer needs, or "" when the page has none.
func ConsumerDoc(change string) string {
	if !slices.Contains(consumerChanges, change) {
		return ""
	}
	return "docs/upgrading-consumers.md#" + anchor(change)
}

// anchor is a change's anchor in docs/upgrading-consumers.md: its name in
// lower case, each run of other characters than letters and digits a '-'.
func anchor(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(strings.ReplaceAll(name, "'", "")) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
			continue
		}
		dash = true
	}
	return b.String()
}
