package modeltest

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/amqpsim/amqpsim/scenarios"
	"pgregory.net/rapid"
)

// TestCoverage checks that the generated sequences reach the situations
// the model is there to check; run it with -v to see how often.
func TestCoverage(t *testing.T) {
	// A fixed seed keeps the counts, and the test, stable.
	withRapidFlag(t, "rapid.checks", "300")
	withRapidFlag(t, "rapid.steps", steps)
	withRapidFlag(t, "rapid.seed", "20261130")
	total := map[string]int{}
	cx := newCounterexamples(t, "")
	rapid.Check(cx, prop(false, func(h *harness) {
		for k, n := range h.model.cover {
			total[k] += n
		}
	}, cx))
	for _, want := range []string{
		"consumer blocked by its prefetch",
		"consumer blocked by the global limit",
		"several consumers unblocked at once",
		"global limit released to several queues",
		"global limit switched on with basic.get deliveries unacked",
		"delivery filled the global limit",
		"single active consumer promoted",
		"redelivery to a consumer",
		"priority message delivered",
		"round robin within a band",
		"unroutable mandatory message returned",
		"error 403 basic.consume",
		"error 404 basic.consume",
		"error 406 basic.ack",
		"error 406 basic.nack",
		"error 406 basic.reject",
		"error 406 queue.declare",
		"error 406 queue.delete",
		"error 530 basic.consume",
		"error 540 basic.qos",
		"error 540 basic.recover",
		"consumer timeout",
		"message expired at the head",
		"message dropped from the head (max-length)",
		"reject-publish nack",
		"dead-lettered into another queue",
		"dead-lettered message delivered (expired)",
		"queue deleted by x-expires",
		"auto-delete queue deleted by a cancel",
		"auto-delete queue deleted by a channel close",
		"quorum return",
		"quorum return served first",
		"quorum requeue to the tail",
		"quorum message returned twice",
		"quorum delivery limit reached",
		"quorum delivery limit dead-lettered",
		"quorum consume refused: global qos",
		"quorum exclusive consume beside another",
		"error 540 queue.delete",
		"error 405 basic.get",
		"quorum single active consumer promoted",
		"quorum message expired at the head",
		"quorum returned message expired",
		"quorum TTL 0",
		"quorum close returns from several holders",
	} {
		if total[want] == 0 {
			t.Errorf("no sequence reached %q", want)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(total)) {
		t.Logf("%6d  %s", total[k], k)
	}
}

// TestFailureIsReadable runs the test against a model with a planted bug
// (consumers get one more than the channel's prefetch) and checks that
// rapid's report shows the shrunk sequence as scenario steps and the
// model/simulator diff.
func TestFailureIsReadable(t *testing.T) {
	withRapidFlag(t, "rapid.checks", "100")
	withRapidFlag(t, "rapid.nofailfile", "true")
	// A fixed seed and a shrink time far beyond what shrinking needs
	// (about a second) make the report the same on any machine: with 20 s,
	// a loaded CI machine once ran out of time before the sequence was
	// shrunk to what the checks below expect.
	withRapidFlag(t, "rapid.seed", "20261201")
	withRapidFlag(t, "rapid.shrinktime", "10m")
	rec := &recordingTB{name: t.Name()}
	rapid.Check(rec, prop(true, nil, nil))
	out := rec.out.String()
	if !rec.failed {
		t.Fatalf("the planted bug was not found; output:\n%s", out)
	}
	for _, want := range []string{
		"[rapid] failed",
		"  1  conn conn1\n",
		"  2  channel conn1.ch1\n",
		"  consume ch",
		"the simulator and the model disagree (-model +simulator)",
		"Prefetch:",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q; it is:\n%s", want, out)
		}
	}
	if testing.Verbose() {
		t.Logf("the report of a planted bug:\n%s", out)
	}
}

// recordingTB is a rapid.TB that records instead of failing.
type recordingTB struct {
	name   string
	out    strings.Builder
	failed bool
}

func (r *recordingTB) Helper()                       {}
func (r *recordingTB) Name() string                  { return r.name }
func (r *recordingTB) Logf(format string, a ...any)  { fmt.Fprintf(&r.out, format+"\n", a...) }
func (r *recordingTB) Log(a ...any)                  { fmt.Fprintln(&r.out, a...) }
func (r *recordingTB) Skipf(format string, a ...any) { r.Logf(format, a...) }
func (r *recordingTB) Skip(a ...any)                 { r.Log(a...) }
func (r *recordingTB) SkipNow()                      {}
func (r *recordingTB) Errorf(format string, a ...any) {
	r.failed = true
	r.Logf(format, a...)
}
func (r *recordingTB) Error(a ...any)                 { r.failed = true; r.Log(a...) }
func (r *recordingTB) Fatalf(format string, a ...any) { r.Errorf(format, a...) }
func (r *recordingTB) Fatal(a ...any)                 { r.Error(a...) }
func (r *recordingTB) FailNow()                       { r.failed = true }
func (r *recordingTB) Fail()                          { r.failed = true }
func (r *recordingTB) Failed() bool                   { return r.failed }

// fatalTB stops a harness at its first failure.
type fatalTB struct{ msg string }

func (*fatalTB) Helper()             {}
func (*fatalTB) Logf(string, ...any) {}
func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	panic(f)
}

// replayFails replays a sequence on a fresh harness and returns its
// failure, or "" when it passes.
func replayFails(ops []scenarios.Op, seed uint64, mutant bool) (msg string) {
	tb := &fatalTB{}
	defer func() {
		if r := recover(); r != nil && r != any(tb) {
			panic(r)
		}
		msg = tb.msg
	}()
	h := newHarness(tb, seed, mutant)
	for _, op := range ops {
		h.step(op)
	}
	h.checkDeterminism()
	return ""
}

// parse parses scenario text or fails the test.
func parse(t *testing.T, name, text string) *scenarios.Scenario {
	t.Helper()
	s, err := scenarios.Parse(name, []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// writeTemp writes a scenario to a temporary file and reads it back.
func writeTemp(t *testing.T, s *scenarios.Scenario) *scenarios.Scenario {
	t.Helper()
	path := filepath.Join(t.TempDir(), s.Name+".txt")
	if err := os.WriteFile(path, s.Format(), 0o644); err != nil {
		t.Fatal(err)
	}
	back, err := scenarios.ParseFile(path)
	if err != nil {
		t.Fatalf("%v\n%s", err, s.Format())
	}
	return back
}
