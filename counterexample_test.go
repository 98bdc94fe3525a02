package amqpsim_test

// A failing property test writes its shrunk sequence as a scenario file
// (package scenarios), which recorded against RabbitMQ becomes a
// regression test.
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
	"testing"
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

	ops, notes := scenarioOps(h.ops)
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
		"The seed directive below is the simulator's seed for the sequence (sim.Config.Seed).",
		"To make it a regression test, record RabbitMQ's answers, then replay them on the simulator:",
		"  go run ./cmd/amqpsim record --url $AMQP_URL "+path,
		"  go run ./cmd/amqpsim replay "+path)
	for _, n := range notes {
		title = append(title, "Note: "+n)
	}
	s := scenarios.New(name, strings.Join(title, "\n"), "", ops...)
	s.SetSeed(h.seed)
	return path, os.WriteFile(path, s.Format(), 0o644)
}

// The connection and channel that carry broker.Publish in a scenario.
const (
	publisherConn = "broker"
	publisherChan = "pub"
)

// scenarioOps maps a sequence as the harness ran it (labels filled in) to
// scenario steps, followed by steps that show the state it left (held, and
// queue for each queue it declared), and says what it had to approximate.
//
// Connections keep their names (conn1). A channel labelled conn1.ch2 is
// ch2, or conn1-ch2 when several connections have a ch2 (scenario names are
// unique in a file); conn1.ch2~2, the second channel with id 2 on conn1, is
// ch2-2. broker.Publish, which has no channel, is a publish on a channel of
// a connection of its own.
func scenarioOps(ops []op) ([]scenarios.Op, []string) {
	conns := map[int]string{} // connection handle → name
	type chLabel struct{ conn, short string }
	labels := map[int]chLabel{} // channel handle → label parts
	owners := map[string]map[string]bool{}
	for _, o := range ops {
		switch o.Kind {
		case opConnect:
			conns[o.Conn] = o.Label
			if o.Label == "" {
				conns[o.Conn] = fmt.Sprintf("conn%d", o.Conn+1)
			}
		case opOpenChannel:
			c, short, ok := strings.Cut(o.Label, ".")
			if !ok {
				c, short = conns[o.Conn], fmt.Sprintf("ch%d", o.Ch+1)
			}
			short = strings.ReplaceAll(short, "~", "-")
			labels[o.Ch] = chLabel{c, short}
			if owners[short] == nil {
				owners[short] = map[string]bool{}
			}
			owners[short][c] = true
		}
	}
	chans := map[int]string{}
	renamed := false
	for h, l := range labels {
		chans[h] = l.short
		if len(owners[l.short]) > 1 {
			chans[h], renamed = l.conn+"-"+l.short, true
		}
	}

	var out []scenarios.Op
	var queues []string
	var notes []string
	brokerPublish, timed := false, false
	for _, o := range ops {
		ch := chans[o.Ch]
		switch o.Kind {
		case opConnect:
			out = append(out, scenarios.Conn{Name: conns[o.Conn]})
		case opCloseConn:
			out = append(out, scenarios.Close{Name: conns[o.Conn]})
		case opOpenChannel:
			out = append(out, scenarios.OpenChannel{Conn: conns[o.Conn], Name: ch})
		case opCloseChannel:
			out = append(out, scenarios.Close{Name: ch})
		case opDeclare:
			out = append(out, scenarios.DeclareQueue{Channel: ch, Queue: o.Queue, Passive: o.Passive, Args: queueArgTable(o.Args)})
			if !slices.Contains(queues, o.Queue) {
				queues = append(queues, o.Queue)
			}
			timed = timed || o.Args.HasTTL || o.Args.Expires > 0
		case opBrokerPublish:
			if !brokerPublish {
				brokerPublish = true
				out = append(out, scenarios.Conn{Name: publisherConn}, scenarios.OpenChannel{Conn: publisherConn, Name: publisherChan})
			}
			out = append(out, publishOp(o, publisherChan))
			timed = timed || o.Expire != ""
		case opPublish:
			p := publishOp(o, ch)
			p.Exchange, p.Mandatory = o.Exchange, o.Mandatory
			out = append(out, p)
			timed = timed || o.Expire != ""
		case opConfirm:
			out = append(out, scenarios.Confirm{Channel: ch})
		case opQos:
			out = append(out, scenarios.Qos{Channel: ch, Count: o.Count, Size: o.Size, Global: o.Global})
		case opConsume:
			out = append(out, scenarios.Consume{Channel: ch, Queue: o.Queue, Tag: o.Tag, NoAck: o.NoAck, Exclusive: o.Exclusive,
				Args: consumeOptions(o).Args})
		case opCancel:
			out = append(out, scenarios.Cancel{Channel: ch, Tag: o.Tag})
		case opGet:
			out = append(out, scenarios.Get{Channel: ch, Queue: o.Queue, NoAck: o.NoAck})
		case opAck:
			out = append(out, scenarios.Settle{Method: "ack", Channel: ch, Tag: o.DTag, Multiple: o.Multiple})
		case opNack:
			out = append(out, scenarios.Settle{Method: "nack", Channel: ch, Tag: o.DTag, Multiple: o.Multiple, Requeue: o.Requeue})
		case opReject:
			out = append(out, scenarios.Settle{Method: "reject", Channel: ch, Tag: o.DTag, Requeue: o.Requeue})
		case opRecover:
			out = append(out, scenarios.Recover{Channel: ch, Requeue: o.Requeue})
		case opPurge:
			out = append(out, scenarios.Purge{Channel: ch, Queue: o.Queue})
		case opDelete:
			out = append(out, scenarios.DeleteQueue{Channel: ch, Queue: o.Queue, IfUnused: o.IfUnused, IfEmpty: o.IfEmpty})
		case opAdvance:
			out = append(out, scenarios.Advance{D: o.D})
			timed = true
		default:
			panic(fmt.Sprintf("scenarioOps: no mapping for %s", o))
		}
	}
	out = append(out, scenarios.ShowHeld{})
	for _, q := range queues {
		out = append(out, scenarios.ShowQueue{Queue: q})
	}

	if brokerPublish {
		notes = append(notes, fmt.Sprintf("broker.Publish has no channel: it is a publish on channel %s of connection %s, opened where it is first used.",
			publisherChan, publisherConn))
	}
	if renamed {
		notes = append(notes, "a channel that several connections have, such as conn2.ch1, is named conn2-ch1: names are unique in a file.")
	}
	if timed {
		notes = append(notes, "against RabbitMQ each step lets about 150 ms pass that the simulator does not see, and advance sleeps, so a short TTL or x-expires may fire a step earlier there.")
	}
	notes = append(notes, "the held and queue steps at the end are not operations of the sequence: they show the state it left.")
	return out, notes
}

func publishOp(o op, ch string) scenarios.Publish {
	p := scenarios.Publish{Channel: ch, Key: o.Queue, Bodies: []string{o.Body}}
	p.Props.Priority, p.Props.Expiration = o.Priority, o.Expire
	return p
}

// TestCounterexamples replays the counterexamples kept in
// testdata/counterexamples once RabbitMQ's answers are recorded in them.
func TestCounterexamples(t *testing.T) {
	dir := filepath.Join("testdata", "counterexamples")
	if _, err := os.Stat(dir); os.IsNotExist(err) {
		t.Log("no counterexamples kept in testdata/counterexamples")
		return
	}
	list, err := scenarios.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list {
		t.Run(s.Name, func(t *testing.T) {
			// A kept counterexample is a regression test only once RabbitMQ's
			// answers are its expectations.
			if !strings.HasPrefix(s.Source, "rabbitmq ") {
				t.Fatalf("%s is not recorded yet: go run ./cmd/amqpsim record --url $AMQP_URL %s", s.Path, s.Path)
			}
			scenarios.Check(t, s)
		})
	}
}

// everyOp is a sequence with every kind of operation and option the
// harness generates.
func everyOp() []op {
	return []op{
		{Kind: opConnect}, {Kind: opOpenChannel}, {Kind: opOpenChannel},
		{Kind: opDeclare, Queue: "q1", Args: qArgs{MaxPrio: 5, HasTTL: true, TTL: 60000, Expires: 90000, HasMaxLen: true, MaxLen: 3,
			HasMaxBytes: true, MaxBytes: 8, Overflow: "reject-publish-dlx", DLX: true, DLRK: "q2"}},
		{Kind: opDeclare, Queue: "q2", Args: qArgs{SAC: true}},
		{Kind: opDeclare, Queue: "q2", Passive: true},
		{Kind: opConfirm},
		{Kind: opBrokerPublish, Queue: "q1", Body: "m1", Priority: 3, Expire: "5000"},
		{Kind: opPublish, Queue: "q1", Body: "m2", Mandatory: true},
		{Kind: opPublish, Queue: "nosuch", Body: "m3", Mandatory: true},
		{Kind: opQos, Ch: 1, Count: 2, Global: true},
		{Kind: opConsume, Ch: 1, Queue: "q1", Tag: "c1", Exclusive: true, HasXPrio: true, XPrio: -1},
		{Kind: opConsume, Ch: 1, Queue: "q2", Tag: "c2", NoAck: true},
		{Kind: opGet, Queue: "q1"}, {Kind: opBrokerPublish, Queue: "q1", Body: "m4"}, {Kind: opGet, Queue: "q1", NoAck: true},
		{Kind: opNack, DTag: 0, Multiple: true, Requeue: true},
		{Kind: opReject, Ch: 1, DTag: 1, Requeue: false},
		{Kind: opAck, Ch: 1, DTag: 0, Multiple: true},
		{Kind: opCancel, Ch: 1, Tag: "c2"},
		{Kind: opAdvance, D: 10 * time.Second},
		{Kind: opPurge, Queue: "q2"},
		{Kind: opDelete, Queue: "q2", IfUnused: true, IfEmpty: true},
		{Kind: opCloseChannel, Ch: 1},
		{Kind: opOpenChannel},                             // conn1.ch2~2
		{Kind: opConnect}, {Kind: opOpenChannel, Conn: 1}, // conn2.ch1
		{Kind: opQos, Ch: 3, Count: 1, Size: 1024},
		{Kind: opCloseConn, Conn: 1},
		{Kind: opPublish, Exchange: "nosuch", Queue: "q1", Body: "m5"},
		{Kind: opRecover, Ch: 2, Requeue: false},
	}
}

// TestScenarioOps maps a sequence with every kind of operation: the steps
// read back the same, and replayed on the simulator they run to the end and
// leave the queues as the harness's run did.
func TestScenarioOps(t *testing.T) {
	h := newHarnessSeed(t, 1, false)
	h.replay(everyOp()...)
	ops, notes := scenarioOps(h.ops)
	if len(notes) < 3 {
		t.Errorf("notes: %q", notes)
	}
	path := filepath.Join(t.TempDir(), "every-op.txt")
	s := scenarios.New("every-op", "every operation", "", ops...)
	s.SetSeed(h.seed)
	if err := os.WriteFile(path, s.Format(), 0o644); err != nil {
		t.Fatal(err)
	}
	back, err := scenarios.ParseFile(path)
	if err != nil {
		t.Fatalf("%v\n%s", err, s.Format())
	}
	for i, st := range back.Steps {
		if st.Op.String() != ops[i].String() {
			t.Errorf("step %d reads back as %q, want %q", i+1, st.Op, ops[i])
		}
	}
	for _, want := range []string{"channel conn1.conn1-ch1", "channel conn1.ch2-2", "channel conn2.conn2-ch1",
		"conn broker\nchannel broker.pub\npublish pub q1 m1 priority=3 expiration=5000",
		"nack conn1-ch1 #0 multiple requeue", "consume ch2 q1 tag=c1 exclusive x-priority=-1", "recover ch2-2 requeue=false",
		"delete-queue conn1-ch1 q2 if-unused if-empty", "publish conn1-ch1 q1 m5 exchange=nosuch", "held\nqueue q1\nqueue q2"} {
		if !strings.Contains(string(s.Format()), "\n"+want+"\n") {
			t.Errorf("no step %q in\n%s", want, s.Format())
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
	for _, q := range h.sim.b.Queues() {
		stats[q.Name] = fmt.Sprintf("ready=%d unacked=%d consumers=%d", q.Ready, q.Unacked, q.Consumers)
	}
	for i, st := range s.Steps {
		q, ok := st.Op.(scenarios.ShowQueue)
		if !ok {
			continue
		}
		want := q.Queue + " not found"
		if st, ok := stats[q.Queue]; ok {
			want = q.Queue + " " + st
		}
		if got := strings.Join(res.Got[i], "; "); got != want {
			t.Errorf("%s: %s, but the harness's run left %s", st.Text, got, want)
		}
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

// TestModelCounterexampleScenario plants a bug in the model, as
// TestModelFailureIsReadable does, and checks that the failure writes one
// scenario file, of the shrunk sequence, that replays on the simulator.
func TestModelCounterexampleScenario(t *testing.T) {
	withRapidFlag(t, "rapid.checks", "100")
	withRapidFlag(t, "rapid.nofailfile", "true")
	withRapidFlag(t, "rapid.shrinktime", "20s")
	withRapidFlag(t, "rapid.seed", "1") // quick to shrink; -rapid.seed=0 tries random ones
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
	if m == nil || filepath.Base(path) != "testmodelcounterexamplescenario-seed-"+m[1]+".txt" {
		t.Errorf("file %s, reproduction %q", path, cx.repro)
	}
	for _, want := range []string{
		"# Counterexample from TestModelCounterexampleScenario, ",
		"# Reproduce it: go test . " + cx.repro + "\n",
		"# It failed: after ",
		"source hand-written\nseed ",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the file lacks %q:\n%s", want, text)
		}
	}
	ops, _ := scenarioOps(cx.last.ops)
	if s.Seed != cx.last.seed || len(s.Steps) != len(ops) {
		t.Errorf("seed %d, %d steps; want seed %d, %d steps", s.Seed, len(s.Steps), cx.last.seed, len(ops))
	}
	checkReplays(t, s, cx.last)
	if testing.Verbose() {
		t.Logf("the report:\n%s", out)
	}
}

// TestModelNoCounterexampleWhenPassing checks that passing runs write no
// file.
func TestModelNoCounterexampleWhenPassing(t *testing.T) {
	withRapidFlag(t, "rapid.checks", "20")
	withRapidFlag(t, "rapid.steps", steps)
	dir := t.TempDir()
	cx := newCounterexamples(t, dir)
	rapid.Check(cx, prop(false, nil, cx))
	if files, _ := filepath.Glob(filepath.Join(dir, "*")); len(files) > 0 || len(cx.written) > 0 {
		t.Errorf("a passing test wrote %q", files)
	}
}

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
func replayFails(ops []op, seed uint64, mutant bool) (msg string) {
	tb := &fatalTB{}
	defer func() {
		if r := recover(); r != nil && r != any(tb) {
			panic(r)
		}
		msg = tb.msg
	}()
	newHarnessSeed(tb, seed, mutant).replay(ops...)
	return ""
}

// TestCounterexampleFallback checks what is written when rapid's replay of
// its shrunk sequence passes: the shortest run that failed before it.
func TestCounterexampleFallback(t *testing.T) {
	rec := &recordingTB{name: "TestModel"}
	cx := newCounterexamples(rec, t.TempDir())
	run := func(ops ...op) *harness {
		h := newHarnessSeed(t, 2, false)
		h.replay(ops...)
		return h
	}
	long := run(op{Kind: opConnect}, op{Kind: opOpenChannel}, op{Kind: opDeclare, Queue: "q1"}, op{Kind: opBrokerPublish, Queue: "q1", Body: "m1"})
	short := run(op{Kind: opConnect}, op{Kind: opOpenChannel}, op{Kind: opDeclare, Queue: "q1"})
	short.failure = "after conn1.ch1.QueueDeclare(q1) something"
	cx.ended(long, false, false, true)
	cx.ended(short, false, false, true)
	cx.ended(long, false, false, true) // longer: not kept
	cx.ended(run(op{Kind: opConnect}), false, true, false)
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
		"# It failed: after conn1.ch1.QueueDeclare(q1) something\n",
		"seed 2\n\nconn conn1\nchannel conn1.ch1\ndeclare-queue ch1 q1\nheld\nqueue q1\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the file lacks %q:\n%s", want, text)
		}
	}
	if out := rec.out.String(); !strings.Contains(out, "rapid's replay passed; the shortest failing sequence (3 operations) is written as a scenario: "+cx.written[0]) {
		t.Errorf("the report is:\n%s", out)
	}
}
