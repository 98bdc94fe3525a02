package modeltest

// A failing property test writes its shrunk sequence as a scenario file,
// which recorded against RabbitMQ becomes a regression test. The sequence
// is made of scenarios.Op values already, so the file is its steps as they
// ran, plus steps at the end that show the state it left.
//
// rapid calls the property many times while it shrinks a failure, and most
// of those runs fail too. It then reports the failure through the test's
// Errorf ("[rapid] failed after ...") and runs the property once more on
// the shrunk sequence, to print its output. counterexamples is the TB that
// rapid reports to: it notices that report, and only the run after it
// writes a file. So nothing is written while shrinking, exactly one file is
// written per failure, and none when the test passes.
//
// That last run should fail as the shrunk one did, but need not: rapid
// (v1.3.0) drops the draws of the actions it rejected (a t.Skip after a
// draw, such as "nothing to settle") from the sequence it keeps, and
// without them its repeat may stop at another point. When the last run
// passes, the file holds the shortest sequence that failed during the
// search and shrinking instead, and says so.
//
// The file goes to $AMQPSIM_COUNTEREXAMPLES, testdata/counterexamples/ when
// that is "testdata", or a new temporary directory; the failure message
// names it, with the commands that record and replay it.

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/amqpsim/amqpsim/scenarios"
	"pgregory.net/rapid"
)

// counterexamples passes everything on to the test, notices rapid's report
// of a failure, and writes the sequence of the run that follows it.
type counterexamples struct {
	rapid.TB
	dir      string   // "" for $AMQPSIM_COUNTEREXAMPLES or a temporary directory
	reported bool     // rapid has reported a failure: the next run replays it
	flaky    bool     // rapid could not reproduce it: the next run is the original sequence
	repro    string   // rapid's reproduction flags: -run="TestModel" -rapid.seed=N
	shortest *harness // the shortest run that failed before the report
	written  []string
	last     *harness // the run written last
	fallback bool     // it is shortest: rapid's last run passed
}

func newCounterexamples(t rapid.TB, dir string) *counterexamples {
	return &counterexamples{TB: t, dir: dir}
}

// Errorf passes the message on, and notices rapid's report of a failure.
func (cx *counterexamples) Errorf(format string, args ...any) {
	cx.TB.Helper()
	msg := fmt.Sprintf(format, args...)
	if strings.HasPrefix(msg, "[rapid] ") {
		cx.reported = true
		cx.flaky = strings.Contains(msg, "flaky")
		if _, rest, ok := strings.Cut(msg, "reproduce, specify "); ok {
			cx.repro, _, _ = strings.Cut(rest, "\n")
		}
	}
	cx.TB.Errorf("%s", msg)
}

// ended sees each run of the property end: final when it started after
// rapid's report, passed when it ran to its end without failing, failed
// when it failed a check (a panic is neither).
func (cx *counterexamples) ended(h *harness, final, passed, failed bool) {
	switch {
	case final && !passed:
		cx.write(h, false)
	case final && cx.shortest != nil:
		cx.write(cx.shortest, true)
	case final:
		cx.TB.Logf("rapid's replay of the failing sequence passed, and no run failed a check: no scenario written")
	case failed && (cx.shortest == nil || len(h.ops) <= len(cx.shortest.ops)):
		cx.shortest = h
	}
}

var rapidSeed = regexp.MustCompile(`-rapid\.seed=(\d+)`)

// write writes h's sequence as a scenario file and says where.
func (cx *counterexamples) write(h *harness, fallback bool) {
	path, err := cx.save(h, fallback)
	if err != nil {
		cx.TB.Logf("could not write the failing sequence as a scenario: %v", err)
		return
	}
	cx.written = append(cx.written, path)
	cx.last, cx.fallback = h, fallback
	which := "the failing sequence"
	if fallback {
		which = fmt.Sprintf("rapid's replay passed; the shortest failing sequence (%d operations)", len(h.ops))
	}
	cx.TB.Logf("%s is written as a scenario: %s\n"+
		"to make it a regression test, record RabbitMQ's answers, then replay them on the simulator:\n"+
		"  go run ./cmd/amqpsim record --url $AMQP_URL %s\n"+
		"  go run ./cmd/amqpsim replay %s", which, path, path, path)
}

func (cx *counterexamples) save(h *harness, fallback bool) (string, error) {
	dir := cx.dir
	if dir == "" {
		dir = os.Getenv("AMQPSIM_COUNTEREXAMPLES")
	}
	switch dir {
	case "":
		d, err := os.MkdirTemp("", "amqpsim-counterexamples-")
		if err != nil {
			return "", err
		}
		dir = d
	case "testdata":
		dir = filepath.Join("testdata", "counterexamples")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	test := cx.TB.Name()
	name := strings.Trim(regexp.MustCompile(`[^a-z0-9]+`).ReplaceAllString(strings.ToLower(test), "-"), "-")
	if m := rapidSeed.FindStringSubmatch(cx.repro); m != nil {
		name += "-seed-" + m[1]
	} else {
		name += "-" + time.Now().Format("20060102-150405")
	}
	path := filepath.Join(dir, name+".txt")

	how := fmt.Sprintf("shrunk by rapid to %d operations", len(h.ops))
	switch {
	case fallback:
		how = fmt.Sprintf("the shortest failing sequence rapid ran (%d operations): its replay of the shrunk one passed", len(h.ops))
	case cx.flaky:
		how = fmt.Sprintf("not shrunk: rapid could not reproduce the failure (%d operations)", len(h.ops))
	}
	title := []string{fmt.Sprintf("Counterexample from %s, %s.", test, how)}
	if cx.repro != "" {
		title = append(title, "Reproduce it: go test . "+cx.repro)
	}
	if h.failure != "" {
		title = append(title, "It failed: "+h.failure)
	}
	title = append(title,
		"The seed directive below is the simulator's seed for the sequence (sim.Config.Seed), and the rabbitmq",
		"directive the release the reference model restates (modeltest.Release): record it on that release.",
		"To make it a regression test, record RabbitMQ's answers, then replay them on the simulator:",
		"  go run ./cmd/amqpsim record --url $AMQP_URL "+path,
		"  go run ./cmd/amqpsim replay "+path)
	ops, notes := h.scenario()
	for _, n := range notes {
		title = append(title, "Note: "+n)
	}
	s := scenarios.New(name, strings.Join(title, "\n"), "", ops...)
	s.SetSeed(h.seed)
	if err := s.SetVersion(Release); err != nil {
		return "", err
	}
	return path, os.WriteFile(path, s.Format(), 0o644)
}

// scenario returns the sequence as a scenario's steps: the operations as
// they ran, then "held" and a "queue" step for each queue it declared,
// which show the state it left; and notes on reading it against RabbitMQ.
func (h *harness) scenario() ([]scenarios.Op, []string) {
	ops := slices.Clone(h.ops)
	var queues []string
	publisher, timed := false, false
	for _, op := range h.ops {
		switch o := op.(type) {
		case scenarios.DeclareQueue:
			if !slices.Contains(queues, o.Queue) {
				queues = append(queues, o.Queue)
			}
			a := argsOf(o.Args)
			timed = timed || a.HasTTL || a.Expires > 0
		case scenarios.Publish:
			publisher = publisher || o.Channel == BrokerChannel
			timed = timed || o.Props.Expiration != ""
		case scenarios.Advance:
			timed = true
		}
	}
	ops = append(ops, scenarios.ShowHeld{})
	for _, q := range queues {
		ops = append(ops, scenarios.ShowQueue{Queue: q})
	}
	var notes []string
	if publisher {
		notes = append(notes, fmt.Sprintf("the test published on channel %s of connection %s with Broker.Publish, which has no channel.", BrokerChannel, BrokerConn))
	}
	if timed {
		notes = append(notes, "against RabbitMQ each step lets about 150 ms pass that the simulator does not see, and advance sleeps, so a short TTL or x-expires may fire a step earlier there.")
	}
	notes = append(notes, "the held and queue steps at the end are not operations of the sequence: they show the state it left.")
	return ops, notes
}
