package scenarios_test

import (
	"strings"
	"testing"

	"github.com/amqpsim/amqpsim/scenarios"
)

// handWritten are the folders of scenarios whose answers no broker here
// can record, written by hand: testdata/profiles holds the rules of
// releases that cannot be run here (3.12, 3.13, 4.1, 4.2) and the sides of
// a change the library's three releases do not show, each file on the
// releases before and after the change, following the rabbitmq-server
// source its comment cites; testdata/measured holds answers measured on
// a real broker by hand where a recording cannot hold them: under
// settings the recorder does not change (the config directive), at
// timings its quiet windows blur, with names its per-run prefix would
// change, or beside a release whose broker crashes on the same steps;
// testdata/cluster holds what a simulated 4.3 cluster answers where the
// recordings of scenarios/cluster leave it open: exact timeouts within
// their ranges, following the rabbitmq-server source, and steps they do
// not take.
var handWritten = []string{"testdata/profiles", "testdata/measured", "testdata/cluster"}

// TestHandWritten replays every hand-written scenario on the simulator of
// each release it names, in process and through amqp091-go over the
// in-memory wire, as TestLibrary does the library: a rule of a profile
// is pinned by one row of sim.Changes and one file here.
func TestHandWritten(t *testing.T) {
	for _, dir := range handWritten {
		t.Run(dir, func(t *testing.T) { scenarios.Run(t, dir) })
	}
}

// A hand-written file says where its answers come from before its first
// step, and holds no broker's recording: a file a broker can record
// belongs in the library, recorded on all three releases.
func TestHandWrittenSayWhy(t *testing.T) {
	for _, dir := range handWritten {
		list, err := scenarios.Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(list) == 0 {
			t.Errorf("%s: no scenarios", dir)
		}
		for _, s := range list {
			if r := s.Recorded(); len(r) > 0 {
				t.Errorf("%s holds a broker's recording of %v: record it on 3.10.8, 4.0.5 and 4.3.6 and move it to the library", s.Path, r)
			}
			if len(s.Releases()) == 0 {
				t.Errorf("%s: want a \"source hand-written VERSION\" line per release it pins", s.Path)
			}
			src := string(s.Format())
			cites := func(w string) bool { return strings.Contains(src, w) }
			if !strings.HasPrefix(src, "# ") || !cites("rabbitmq-server") && !cites("3.10.8") && !cites("4.0.5") && !cites("4.3.6") {
				t.Errorf("%s: want a leading comment that cites the rabbitmq-server source or the measurement it follows", s.Path)
			}
		}
	}
}
