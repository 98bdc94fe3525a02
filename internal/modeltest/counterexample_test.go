package modeltest

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/amqpsim/amqpsim/scenarios"
	"pgregory.net/rapid"
)

// everyOp is a sequence with every kind of operation and option the
// generators draw.
const everyOp = `# every operation
source hand-written
seed 1

conn conn1
channel conn1.ch1
channel conn1.ch2
declare-queue ch1 q1 x-dead-letter-exchange="" x-dead-letter-routing-key=q2 x-expires=90000 x-max-length=3 x-max-length-bytes=8 x-max-priority=5 x-message-ttl=60000 x-overflow=reject-publish-dlx
declare-queue ch1 q2 auto-delete x-single-active-consumer=true
declare-queue ch1 q2 passive
confirm ch1
conn broker
channel broker.pub
publish pub q1 m1 priority=3 expiration=5000
publish ch1 q1 m2 mandatory
publish ch1 nosuch m3 mandatory
qos ch2 2 global
consume ch2 q1 tag=c1 exclusive x-priority=-1
consume ch2 q2 tag=c2 no-ack
get ch1 q1
publish pub q1 m4
get ch1 q1 no-ack
nack ch1 #0 multiple requeue
reject ch2 #1 requeue=false
ack ch2 #0 multiple
cancel ch2 c2
advance 10s
purge ch1 q1
delete-queue ch1 q2 if-unused if-empty
close ch2
channel conn1.ch3
conn conn2
channel conn2.ch4
qos ch4 1 size=1024
close conn2
publish ch1 q1 m5 exchange=nosuch
recover ch3 requeue=false
`

// TestScenario runs a sequence with every kind of operation and writes it
// as a counterexample does: the steps read back as they ran, and replayed
// on the simulator by the scenarios package they run to the end and leave
// the queues as the harness's run did.
func TestScenario(t *testing.T) {
	s := parse(t, "every-op", everyOp)
	h := newHarness(t, s.Seed, false)
	h.run(s)
	ops, notes := h.scenario()
	if len(notes) != 3 {
		t.Errorf("notes: %q", notes)
	}
	written := scenarios.New("every-op", "every operation", "", ops...)
	if err := written.SetVersion(Release); err != nil { // as a counterexample is written
		t.Fatal(err)
	}
	back := writeTemp(t, written)
	if len(back.Steps) != len(s.Steps)+3 { // held, queue q1, queue q2
		t.Errorf("%d steps, want %d", len(back.Steps), len(s.Steps)+3)
	}
	for i, st := range back.Steps {
		if st.Op.String() != ops[i].String() {
			t.Errorf("step %d reads back as %q, want %q", i+1, st.Op, ops[i])
		}
		if i < len(s.Steps) && st.Text != s.Steps[i].Text {
			t.Errorf("step %d is %q, it was written %q", i+1, st.Text, s.Steps[i].Text)
		}
	}
	checkReplays(t, back, h)
}

// checkReplays replays a written counterexample on the simulator: every
// step runs, the queues end as they did in the harness's run h, and the
// results recorded from the simulator replay unchanged.
func checkReplays(t *testing.T, s *scenarios.Scenario, h *harness) {
	t.Helper()
	res, err := scenarios.Replay(s)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Steps) != len(s.Steps) {
		t.Fatalf("ran %d of %d steps", len(res.Steps), len(s.Steps))
	}
	stats := map[string]string{}
	for _, q := range h.world.b.Queues() {
		stats[q.Name] = fmt.Sprintf("ready=%d unacked=%d consumers=%d", q.Ready, q.Unacked, q.Consumers)
	}
	shown := 0
	for i, st := range s.Steps {
		q, ok := st.Op.(scenarios.ShowQueue)
		if !ok {
			continue
		}
		shown++
		want := q.Queue + " not found"
		if st, ok := stats[q.Queue]; ok {
			want = q.Queue + " " + st
		}
		if got := strings.Join(res.Got[i], "; "); got != want {
			t.Errorf("%s: %s, but the harness's run left %s", st.Text, got, want)
		}
	}
	if shown == 0 {
		t.Errorf("no queue step in\n%s", s.Format())
	}
	rec, err := scenarios.Parse(s.Path, res.Recorded("").Format())
	if err != nil {
		t.Fatal(err)
	}
	again, err := scenarios.Replay(rec)
	if err != nil {
		t.Fatal(err)
	}
	if d := again.Diff(); d != "" {
		t.Errorf("the results recorded from the simulator do not replay:\n%s", d)
	}
	if testing.Verbose() {
		t.Logf("%s recorded on the simulator:\n%s", s.Path, rec.Format())
	}
}

// TestCounterexampleScenario plants a bug in the model, as
// TestFailureIsReadable does, and checks that the failure writes one
// scenario file, of the shrunk sequence, that replays on the simulator.
func TestCounterexampleScenario(t *testing.T) {
	withRapidFlag(t, "rapid.checks", "100")
	withRapidFlag(t, "rapid.nofailfile", "true")
	withRapidFlag(t, "rapid.shrinktime", "10m") // shrinking ends by converging, never by the clock
	withRapidFlag(t, "rapid.seed", "1")         // quick to shrink; -rapid.seed=0 tries random ones
	rec := &recordingTB{name: t.Name()}
	dir := t.TempDir()
	cx := newCounterexamples(rec, dir)
	rapid.Check(cx, prop(true, nil, cx))
	out := rec.out.String()
	if !rec.failed {
		t.Fatalf("the planted bug was not found; output:\n%s", out)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(cx.written) != 1 || len(files) != 1 {
		t.Fatalf("wrote %q, the directory has %q: want one file\n%s", cx.written, files, out)
	}
	path := cx.written[0]
	for _, want := range []string{
		" is written as a scenario: " + path,
		"go run ./cmd/amqpsim record --url $AMQP_URL " + path,
		"go run ./cmd/amqpsim replay " + path,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks %q; it is:\n%s", want, out)
		}
	}

	// The file holds a failing sequence: the one rapid printed as the
	// failure, the shrunk one, unless its replay passed.
	if msg := replayFails(cx.last.ops, cx.last.seed, true); msg == "" {
		t.Errorf("the sequence written passes")
	}
	_, shown, _ := strings.Cut(out, "[rapid] failed")
	var logged []string
	for _, m := range regexp.MustCompile(`(?m)^\s*\d+  (.*)$`).FindAllStringSubmatch(shown, -1) {
		logged = append(logged, m[1])
	}
	var ran []string
	for _, o := range cx.last.ops {
		ran = append(ran, o.String())
	}
	if !cx.fallback && !slices.Equal(logged, ran) {
		t.Errorf("the file has the operations\n%s\nbut rapid reported\n%s", strings.Join(ran, "\n"), strings.Join(logged, "\n"))
	}
	if cx.fallback && len(ran) > len(cx.shortest.ops) {
		t.Errorf("the fallback has %d operations, the shortest failing run %d", len(ran), len(cx.shortest.ops))
	}

	s, err := scenarios.ParseFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(s.Format())
	m := rapidSeed.FindStringSubmatch(cx.repro)
	if m == nil || filepath.Base(path) != "testcounterexamplescenario-seed-"+m[1]+".txt" {
		t.Errorf("file %s, reproduction %q", path, cx.repro)
	}
	for _, want := range []string{
		"# Counterexample from TestCounterexampleScenario, ",
		"# Reproduce it: go test . " + cx.repro + "\n",
		"# It failed: after ",
		"source hand-written\nseed ",
		// The steps are the operations as they ran, word for word.
		"\n\n" + strings.Join(ran, "\n") + "\nheld\nqueue q1\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the file lacks %q:\n%s", want, text)
		}
	}
	ops, _ := cx.last.scenario()
	if s.Seed != cx.last.seed || len(s.Steps) != len(ops) || s.Version != Release {
		t.Errorf("seed %d, %d steps, RabbitMQ %v; want seed %d, %d steps, %v", s.Seed, len(s.Steps), s.Version, cx.last.seed, len(ops), Release)
	}
	checkReplays(t, s, cx.last)
	if testing.Verbose() {
		t.Logf("the report:\n%s", out)
	}
}

// TestNoCounterexampleWhenPassing checks that passing runs write no file.
func TestNoCounterexampleWhenPassing(t *testing.T) {
	withRapidFlag(t, "rapid.checks", "20")
	withRapidFlag(t, "rapid.steps", steps)
	dir := t.TempDir()
	cx := newCounterexamples(t, dir)
	rapid.Check(cx, prop(false, nil, cx))
	if files, _ := filepath.Glob(filepath.Join(dir, "*")); len(files) > 0 || len(cx.written) > 0 {
		t.Errorf("a passing test wrote %q", files)
	}
}

// TestCounterexampleFallback checks what is written when rapid's replay of
// its shrunk sequence passes: the shortest run that failed before it.
func TestCounterexampleFallback(t *testing.T) {
	rec := &recordingTB{name: "TestModel"}
	cx := newCounterexamples(rec, t.TempDir())
	run := func(text string) *harness {
		h := newHarness(t, 2, false)
		h.run(parse(t, "run", "seed 2\n"+text))
		return h
	}
	long := run("conn conn1\nchannel conn1.ch1\ndeclare-queue ch1 q1\nconn broker\nchannel broker.pub\npublish pub q1 m1\n")
	short := run("conn conn1\nchannel conn1.ch1\ndeclare-queue ch1 q1\n")
	short.failure = `after "declare-queue ch1 q1" something`
	cx.ended(long, false, false, true)
	cx.ended(short, false, false, true)
	cx.ended(long, false, false, true) // longer: not kept
	cx.ended(run("conn conn1\n"), false, true, false)
	if len(cx.written) != 0 {
		t.Fatalf("wrote %q before rapid's report", cx.written)
	}
	cx.Errorf("[rapid] failed after 3 tests: boom\nTo reproduce, specify -run=\"TestModel\" -rapid.seed=42\nFailed test output:")
	cx.ended(long, true, true, false) // rapid's replay passed
	if len(cx.written) != 1 || cx.last != short || !cx.fallback {
		t.Fatalf("wrote %q (fallback %v); want the short sequence", cx.written, cx.fallback)
	}
	if want := "testmodel-seed-42.txt"; filepath.Base(cx.written[0]) != want {
		t.Errorf("wrote %s, want %s", cx.written[0], want)
	}
	s, err := scenarios.ParseFile(cx.written[0])
	if err != nil {
		t.Fatal(err)
	}
	text := string(s.Format())
	for _, want := range []string{
		"# Counterexample from TestModel, the shortest failing sequence rapid ran (3 operations): its replay of the shrunk one passed.\n",
		"# Reproduce it: go test . -run=\"TestModel\" -rapid.seed=42\n",
		"# It failed: after \"declare-queue ch1 q1\" something\n",
		"seed 2\nrabbitmq 3.10\n\nconn conn1\nchannel conn1.ch1\ndeclare-queue ch1 q1\nheld\nqueue q1\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the file lacks %q:\n%s", want, text)
		}
	}
	if out := rec.out.String(); !strings.Contains(out, "rapid's replay passed; the shortest failing sequence (3 operations) is written as a scenario: "+cx.written[0]) {
		t.Errorf("the report is:\n%s", out)
	}
}
