package scenarios_test

import (
	"bytes"
	"io/fs"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/amqpsim/amqpsim/scenarios"
	"github.com/amqpsim/amqpsim/sim"
)

// TestLibrary is the CI check: every built-in scenario, recorded on
// RabbitMQ 3.10.8, 4.0.5 and 4.3.6, replays identically on the simulator
// of each release. Run it with -scenarios.record=URL to record the library
// again on that broker.
func TestLibrary(t *testing.T) {
	scenarios.Run(t, "library")
}

func TestLibraryIsLargeAndRecorded(t *testing.T) {
	list, err := scenarios.LoadFS(scenarios.Library(), ".")
	if err != nil {
		t.Fatal(err)
	}
	if len(list) < 200 {
		t.Errorf("the library has %d scenarios, want at least 200", len(list))
	}
	want := []sim.Version{sim.V3_10, sim.V4_0, sim.V4_3}
	for _, s := range list {
		if got := s.Releases(); !slices.Equal(got, want) {
			t.Errorf("%s: recorded on %v: every library scenario is recorded on RabbitMQ 3.10.8, 4.0.5 and 4.3.6", s.Path, got)
		}
	}
}

// Replaying a scenario twice gives byte-identical results, timelines and
// diagrams (STYLE 12).
func TestReplayIsDeterministic(t *testing.T) {
	list, err := scenarios.LoadFS(scenarios.Library(), ".")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list {
		a, err1 := scenarios.Replay(s)
		b, err2 := scenarios.Replay(s)
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if !cmp.Equal(a.Got, b.Got) || a.Timeline() != b.Timeline() || !bytes.Equal(a.SVG(), b.SVG()) {
			t.Errorf("%s: two replays differ", s.Name)
		}
	}
}

func TestDiffNamesStepAndLine(t *testing.T) {
	src := `# one wrong expectation
source hand-written

conn c1
channel c1.ch1
declare-queue ch1 q
  declare-ok ready=0 consumers=0
consume ch1 q tag=A
publish ch1 q m1
  A <- m1 #2
`
	s, err := scenarios.Parse("wrong.txt", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	res, err := scenarios.Replay(s)
	if err != nil {
		t.Fatal(err)
	}
	d := res.Diff()
	for _, want := range []string{"wrong.txt:9: publish ch1 q m1", `-want from hand-written, +got`, `"A <- m1 #2"`, `"A <- m1 #1"`} {
		if !strings.Contains(d, want) {
			t.Errorf("diff lacks %q:\n%s", want, d)
		}
	}
	ms := res.Mismatches()
	if len(ms) != 1 || ms[0].Line != 9 {
		t.Errorf("mismatches = %+v", ms)
	}
	// Recording the run's results keeps comments and steps and fixes the
	// expectation.
	fixed := string(res.Recorded("").Format())
	if want := strings.Replace(src, "A <- m1 #2", "A <- m1 #1", 1); fixed != want {
		t.Errorf("Recorded:\n%s", cmp.Diff(want, fixed))
	}
}

func TestResultsOfEveryKind(t *testing.T) {
	src := `source hand-written
conn c1
channel c1.ch1
channel c1.ch2
declare-queue ch1 ""
declare-queue ch1 q
confirm ch1
publish ch1 q m1 m2
publish ch1 nowhere r1 mandatory
qos ch2 1
consume ch2 q tag=A
get ch1 q
get ch1 q
purge ch1 q
delete-queue ch1 q
ack ch2 m1
ack ch1 m9
held
queue q
qos ch1 1 size=10
qos ch2 1
`
	s, err := scenarios.Parse("kinds.txt", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	res, err := scenarios.Replay(s)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i, st := range s.Steps {
		for _, l := range res.Got[i] {
			got = append(got, st.Text+" => "+l)
		}
	}
	want := []string{
		`declare-queue ch1 "" => declare-ok amq.gen-* ready=0 consumers=0`,
		"declare-queue ch1 q => declare-ok ready=0 consumers=0",
		"publish ch1 q m1 m2 => ch1 <- confirm ack 1-2",
		`publish ch1 nowhere r1 mandatory => ch1 <- basic.return r1 312 NO_ROUTE exchange="" key=nowhere`,
		"publish ch1 nowhere r1 mandatory => ch1 <- confirm ack 3",
		"consume ch2 q tag=A => A <- m1 #1",
		"get ch1 q => get-ok m2 #1 left=0",
		"get ch1 q => get-empty",
		"purge ch1 q => purge-ok 0",
		"delete-queue ch1 q => delete-ok 0",
		"delete-queue ch1 q => ch2 <- basic.cancel A",
		"ack ch1 m9 => ! ch1 has had no delivery of m9",
		"held => ch1 get: m2 #1",
		"queue q => q not found",
		"qos ch1 1 size=10 => c1 <- connection.close 540 (basic.qos): NOT_IMPLEMENTED - prefetch_size!=0 (10)",
		"qos ch2 1 => ! ch2 is closed",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("results (-want +got):\n%s", d)
	}
}

// headers shows a delivered message's headers, x-death's time normalised.
func TestHeadersStep(t *testing.T) {
	// On 3.10, the release the expected headers are of: from 3.13 a dead
	// letter also carries x-last-death-*.
	src := `source hand-written
rabbitmq 3.10
conn c1
channel c1.ch1
declare-queue ch1 dlq
declare-queue ch1 q x-message-ttl=0 x-dead-letter-exchange="" x-dead-letter-routing-key=dlq
publish ch1 q m1 header.k=v
publish ch1 dlq m2
get ch1 dlq
headers ch1 m1
get ch1 dlq
headers ch1 m2
headers ch1 m9
`
	s, err := scenarios.Parse("headers.txt", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	res, err := scenarios.Replay(s)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"k=v",
			`x-death=[{count=long(1) exchange="" queue=q reason=expired routing-keys=[q] time=timestamp(*)}]`,
			`x-first-death-exchange=""`, "x-first-death-queue=q", "x-first-death-reason=expired"},
		{"no headers"},
		{"! ch1 has had no delivery of m9"},
	}
	got := [][]string{res.Got[7], res.Got[9], res.Got[10]}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("headers results (-want +got):\n%s", d)
	}
}

func TestTimelineAndSVG(t *testing.T) {
	s, err := scenarios.ParseFS(scenarios.Library(), "seed000-two-consumers.txt")
	if err != nil {
		t.Fatal(err)
	}
	res, err := scenarios.Replay(s)
	if err != nil {
		t.Fatal(err)
	}
	tl := res.Timeline()
	for _, want := range []string{
		"A (channel ch1, queue orders, prefetch 2): consuming line 16 -> end (still consuming)",
		"m1 #1                    line 18 -> line 30 acked",
		"B (channel ch2, queue orders, prefetch 2): consuming line 17 -> line 37 channel closed",
		"m2 #4 redelivered        line 40 -> end (still held)",
	} {
		if !strings.Contains(tl, want) {
			t.Errorf("timeline lacks %q:\n%s", want, tl)
		}
	}
	svg := string(res.SVG())
	for _, want := range []string{"<svg xmlns='http://www.w3.org/2000/svg'", ">orders</text>", ">m2 #4 redelivered</text>", ">ack m1</text>", ">m2 back (close)</text>", "</svg>"} {
		if !strings.Contains(svg, want) {
			t.Errorf("svg lacks %q", want)
		}
	}
}

func TestLoadDirectory(t *testing.T) {
	list, err := scenarios.Load("library")
	if err != nil {
		t.Fatal(err)
	}
	files, _ := fs.Glob(scenarios.Library(), "*.txt")
	races, _ := fs.Glob(scenarios.Library(), "races/*.txt")
	files = append(files, races...)
	if len(list) != len(files) || !strings.HasPrefix(list[0].Path, "library/") {
		t.Errorf("Load(library) = %d scenarios (first %s), want %d", len(list), list[0].Path, len(files))
	}
}

// TestRabbitMQDefectsStillDiverge replays recordings of RabbitMQ 3.10.8
// defects the simulator deliberately does not model: they must diverge, and
// first at the step the file's comment names.
func TestRabbitMQDefectsStillDiverge(t *testing.T) {
	list, err := scenarios.Load("testdata/rabbitmq-defects")
	if err != nil {
		t.Fatal(err)
	}
	first := map[string]string{"sac-cancel-with-ready-messages": "cancel ch1 A"}
	for _, s := range list {
		res, err := scenarios.Replay(s)
		if err != nil {
			t.Fatal(err)
		}
		ms := res.Mismatches()
		if len(ms) == 0 || ms[0].Text != first[s.Name] {
			t.Errorf("%s: mismatches %+v, want the first at %q", s.Name, ms, first[s.Name])
		}
	}
}

func TestWriteFileThenParse(t *testing.T) {
	path := t.TempDir() + "/regress.txt"
	ops := []scenarios.Op{
		scenarios.Conn{Name: "c1"},
		scenarios.OpenChannel{Conn: "c1", Name: "ch1"},
		scenarios.DeclareQueue{Channel: "ch1", Queue: "q"},
		scenarios.Publish{Channel: "ch1", Key: "q", Bodies: []string{"m 1"}},
		scenarios.Get{Channel: "ch1", Queue: "q"},
		scenarios.Settle{Method: "nack", Channel: "ch1", Msg: "m 1", Requeue: true},
	}
	if err := scenarios.WriteFile(path, "from a counterexample\nseed 99", ops...); err != nil {
		t.Fatal(err)
	}
	s, err := scenarios.ParseFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var got []scenarios.Op
	for _, st := range s.Steps {
		got = append(got, st.Op)
	}
	if d := cmp.Diff(ops, got); d != "" || s.Name != "regress" || s.Source != "hand-written" {
		t.Errorf("read back %s %q (-want +got):\n%s", s.Name, s.Source, d)
	}
	res, err := scenarios.Replay(s)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{`get-ok "m 1" #1 left=0`}; !cmp.Equal(res.Got[4], want) {
		t.Errorf("get: %q", res.Got[4])
	}
}

func TestSetSeed(t *testing.T) {
	s := scenarios.New("seeded", "a title", "",
		scenarios.Conn{Name: "c1"}, scenarios.OpenChannel{Conn: "c1", Name: "ch1"})
	s.SetSeed(7)
	s.SetSeed(8) // replaces, does not add a second directive
	want := "# a title\nsource hand-written\nseed 8\n\nconn c1\nchannel c1.ch1\n"
	if got := string(s.Format()); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	back, err := scenarios.Parse("seeded.txt", s.Format())
	if err != nil {
		t.Fatal(err)
	}
	if back.Seed != 8 || back.Steps[0].Line != s.Steps[0].Line || back.Steps[1].Line != 6 {
		t.Errorf("read back seed %d, lines %d %d; built lines %d %d", back.Seed, back.Steps[0].Line, back.Steps[1].Line, s.Steps[0].Line, s.Steps[1].Line)
	}
}

func TestSetVersion(t *testing.T) {
	s := scenarios.New("pinned", "a title", "",
		scenarios.Conn{Name: "c1"}, scenarios.OpenChannel{Conn: "c1", Name: "ch1"})
	s.SetSeed(7)
	if err := s.SetVersion(sim.V4_0); err != nil {
		t.Fatal(err)
	}
	if err := s.SetVersion(sim.V3_10); err != nil { // replaces, does not add a second directive
		t.Fatal(err)
	}
	want := "# a title\nsource hand-written\nseed 7\nrabbitmq 3.10\n\nconn c1\nchannel c1.ch1\n"
	if got := string(s.Format()); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	back, err := scenarios.Parse("pinned.txt", s.Format())
	if err != nil {
		t.Fatal(err)
	}
	if back.Version != sim.V3_10 || back.Steps[0].Line != s.Steps[0].Line {
		t.Errorf("read back version %v, line %d; built line %d", back.Version, back.Steps[0].Line, s.Steps[0].Line)
	}
	multi, err := scenarios.Parse("multi.txt", []byte("source rabbitmq 3.10.8 2026-11-30\nsource rabbitmq 4.3.6 2026-12-01\n\nconn c1\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := multi.SetVersion(sim.V3_10); err == nil {
		t.Error("a file recorded on two releases took a rabbitmq directive")
	}
}
