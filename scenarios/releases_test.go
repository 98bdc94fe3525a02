package scenarios

import (
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/amqpsim/amqpsim/sim"
)

const threeReleases = `# a file recorded on three releases
source rabbitmq 3.10.8 2026-12-01
source rabbitmq 4.0.5 2026-12-01
source rabbitmq 4.3.6 2026-12-01

conn c1
channel c1.ch1
declare-queue ch1 q
  declare-ok ready=0 consumers=0
consume ch1 q tag=A
  [3.10] ch1 <- channel.close 406 (basic.consume): old text
  [4.0 4.3] ch1 <- channel.close 406 (basic.consume): new text
`

func TestReleasesParseAndFormat(t *testing.T) {
	s, err := Parse("r.txt", []byte(threeReleases))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Releases(); !slices.Equal(got, []sim.Version{sim.V3_10, sim.V4_0, sim.V4_3}) {
		t.Errorf("Releases() = %v", got)
	}
	if got := string(s.Format()); got != threeReleases {
		t.Errorf("Format does not round-trip:\n%s", got)
	}
	for v, want := range map[sim.Version]string{sim.V3_10: "old text", sim.V4_0: "new text", sim.V4_3: "new text"} {
		view, ok := s.On(v)
		if !ok {
			t.Fatalf("no view of %s", v)
		}
		if view.Version != v || !strings.HasPrefix(view.Source, "rabbitmq "+v.String()) {
			t.Errorf("On(%s): version %s, source %q", v, view.Version, view.Source)
		}
		got := view.Steps[3].Expect
		if len(got) != 1 || !strings.HasSuffix(got[0], want) {
			t.Errorf("On(%s): consume expects %q, want one line ending %q", v, got, want)
		}
		if view.Steps[2].Expect[0] != "declare-ok ready=0 consumers=0" {
			t.Errorf("On(%s): the shared line is lost: %q", v, view.Steps[2].Expect)
		}
		if string(view.Format()) != threeReleases {
			t.Errorf("On(%s).Format() does not write every release", v)
		}
	}
	if _, ok := s.On(sim.V4_2); ok {
		t.Error("On(4.2) found a recording the file does not have")
	}
}

// A file recorded on several releases replays, and its Steps expect,
// sim.DefaultVersion's answers when it has them, wherever its recording
// stands in the file, else the last recording's, never the oldest's.
func TestReleasesDefaultView(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      sim.Version
		text      string
	}{
		{"three releases", threeReleases, sim.DefaultVersion, "new text"},
		{"the default first", strings.Replace(threeReleases,
			"source rabbitmq 3.10.8 2026-12-01\nsource rabbitmq 4.0.5 2026-12-01\nsource rabbitmq 4.3.6 2026-12-01\n",
			"source rabbitmq 4.3.6 2026-12-01\nsource rabbitmq 3.10.8 2026-12-01\nsource rabbitmq 4.0.5 2026-12-01\n", 1),
			sim.DefaultVersion, "new text"},
		{"without the default", strings.NewReplacer("source rabbitmq 4.3.6 2026-12-01\n", "", "[4.0 4.3]", "[4.0]").Replace(threeReleases),
			sim.V4_0, "new text"},
	} {
		s, err := Parse("r.txt", []byte(tc.src))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if s.Version != tc.want || !strings.HasPrefix(s.Source, "rabbitmq "+tc.want.String()) {
			t.Errorf("%s: version %s, source %q, want %s's", tc.name, s.Version, s.Source, tc.want)
		}
		if got := s.Steps[3].Expect; len(got) != 1 || !strings.HasSuffix(got[0], tc.text) {
			t.Errorf("%s: consume expects %q, want %s's line ending %q", tc.name, got, tc.want, tc.text)
		}
	}
}

func TestReleasesRecordingMerges(t *testing.T) {
	s, err := Parse("r.txt", []byte(threeReleases))
	if err != nil {
		t.Fatal(err)
	}
	view, _ := s.On(sim.V4_0)
	got := make([][]string, len(view.Steps))
	for i, st := range view.Steps {
		got[i] = st.Expect
	}
	got[3] = []string{"ch1 <- channel.close 406 (basic.consume): old text"} // 4.0 now agrees with 3.10
	rec := (&Result{Scenario: view, Got: got}).Recorded("rabbitmq 4.0.5 2026-12-02")
	out := string(rec.Format())
	for _, want := range []string{
		"source rabbitmq 4.0.5 2026-12-02\n",
		"  [3.10 4.0] ch1 <- channel.close 406 (basic.consume): old text\n",
		"  [4.3] ch1 <- channel.close 406 (basic.consume): new text\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("recorded file lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "4.0.5 2026-12-01") {
		t.Errorf("the older 4.0.5 recording's source line stayed:\n%s", out)
	}
	// A recording of a fourth release joins the others.
	rec2 := (&Result{Scenario: rec, Got: got}).Recorded("rabbitmq 4.2.1 2026-12-02")
	if !slices.Contains(rec2.Releases(), sim.V4_2) || len(rec2.Releases()) != 4 {
		t.Errorf("releases after recording 4.2: %v", rec2.Releases())
	}
}

// A hand-written file holds the answers of several releases as a
// recorded one does, one "source hand-written VERSION" line each: they
// replay each on its own profile, but are no broker's recording, so the
// upgrade check predicts from the profiles instead of reading them off,
// and a broker's recording of one of the releases replaces its answers.
func TestReleasesHandWritten(t *testing.T) {
	src := strings.NewReplacer("# a file recorded on three releases", "# a file written for three releases",
		"source rabbitmq 3.10.8 2026-12-01", "source hand-written 3.10",
		"source rabbitmq 4.0.5 2026-12-01", "source hand-written 4.2",
		"source rabbitmq 4.3.6 2026-12-01", "source hand-written 4.3",
		"[4.0 4.3]", "[4.2 4.3]").Replace(threeReleases)
	s, err := Parse("h.txt", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(s.Format()); got != src {
		t.Errorf("Format does not round-trip:\n%s", got)
	}
	if got := s.Releases(); !slices.Equal(got, []sim.Version{sim.V3_10, sim.V4_2, sim.V4_3}) || len(s.Recorded()) > 0 {
		t.Errorf("Releases() = %v, Recorded() = %v; want three releases, none recorded", got, s.Recorded())
	}
	if s.Version != sim.V4_3 || s.Source != "hand-written 4.3" {
		t.Errorf("the default view is %s from %q", s.Version, s.Source)
	}
	view, ok := s.On(sim.V4_2)
	if !ok || view.Steps[3].Expect[0] != "ch1 <- channel.close 406 (basic.consume): new text" {
		t.Fatalf("On(4.2): %v", view)
	}
	c, err := Compare(s, sim.V3_10, sim.V4_2)
	if err != nil || c.Recorded {
		t.Errorf("Compare read the hand-written answers off as a recording: %v %+v", err, c)
	}
	rec := (&Result{Scenario: view, Got: [][]string{nil, nil, {"declare-ok ready=0 consumers=0"}, nil}}).Recorded("rabbitmq 4.2.1 2026-12-02")
	if got := rec.Recorded(); !slices.Equal(got, []sim.Version{sim.V4_2}) || len(rec.Releases()) != 3 {
		t.Errorf("after a broker recorded 4.2: Recorded() = %v, Releases() = %v", got, rec.Releases())
	}
	if out := string(rec.Format()); !strings.Contains(out, "source rabbitmq 4.2.1 2026-12-02\nsource hand-written 4.3\n") {
		t.Errorf("the broker's recording did not replace 4.2's hand-written answers:\n%s", out)
	}
}

func TestReleasesParseErrors(t *testing.T) {
	for src, want := range map[string]string{
		"source rabbitmq 3.10.8 d\nconn c1\n  [4.0] x\n":                             "r.txt:3:3: [4.0]: the file has no recording of RabbitMQ 4.0",
		"source hand-written\nconn c1\n  [4.0] x\n":                                  "needs their source rabbitmq lines",
		"source rabbitmq 3.10.8 d\nsource rabbitmq 3.10.9 d\nconn c1\n":              "a second recording of RabbitMQ 3.10",
		"source rabbitmq 3.10.8 d\nsource rabbitmq 4.3.6 d\nrabbitmq 4.3\nconn c1\n": "remove the rabbitmq directive",
		"source hand-written\nsource rabbitmq 4.3.6 d\nconn c1\n":                    "a file has one source",
		"source hand-written\nsource hand-written 4.2\nconn c1\n":                    "a file has one source",
		"source hand-written 4.2\nsource hand-written 4.2\nconn c1\n":                "a second recording of RabbitMQ 4.2",
		"source hand-written 3.11\nconn c1\n":                                        "r.txt:1:8: source \"hand-written 3.11\": ",
		"source hand-written 4.2 2026-12-01\nconn c1\n":                              `expected "source hand-written VERSION"`,
	} {
		if _, err := Parse("r.txt", []byte(src)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want %q", src, err, want)
		}
	}
}

// Keeping the lines of one sequence from the merge gives that sequence
// back, and a line every sequence has in the same place is written once.
func TestMergeResultsKeepsEverySequence(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		line := rapid.SampledFrom([]string{"a", "b", "c", "d"})
		seqs := rapid.SliceOfN(rapid.SliceOfN(line, 0, 6), 1, 4).Draw(t, "seqs")
		merged := mergeResults(seqs)
		for k, seq := range seqs {
			var back []string
			for _, l := range merged {
				if slices.Contains(l.in, k) {
					back = append(back, l.text)
				}
			}
			if !slices.Equal(back, seq) {
				t.Fatalf("sequence %d: merged %v gives back %q, want %q", k, merged, back, seq)
			}
		}
		if allEqual(seqs) {
			if len(merged) != len(seqs[0]) {
				t.Fatalf("equal sequences merged into %d lines, want %d", len(merged), len(seqs[0]))
			}
		}
	})
}

func allEqual(seqs [][]string) bool {
	for _, s := range seqs[1:] {
		if !slices.Equal(s, seqs[0]) {
			return false
		}
	}
	return true
}
