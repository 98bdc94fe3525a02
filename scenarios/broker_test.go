package scenarios_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/amqpsim/amqpsim/scenarios"
)

// brokerURL returns $AMQP_URL, or skips the test.
func brokerURL(t *testing.T) string {
	t.Helper()
	url := os.Getenv("AMQP_URL")
	if url == "" {
		t.Skip("needs a RabbitMQ broker: set AMQP_URL=amqp://guest:guest@127.0.0.1:5672/ to run")
	}
	return url
}

// realTime is how long a scenario's advance steps sleep against a broker.
func realTime(s *scenarios.Scenario) time.Duration {
	var d time.Duration
	for _, st := range s.Steps {
		if a, ok := st.Op.(scenarios.Advance); ok {
			d += a.D
		}
	}
	return d
}

// nodeWide says s changes the whole node (a resource alarm blocks every
// publishing connection), so it must not run beside other recordings.
func nodeWide(s *scenarios.Scenario) bool {
	for _, st := range s.Steps {
		if _, ok := st.Op.(scenarios.Alarm); ok {
			return true
		}
	}
	return false
}

// raceAttempts is how many recordings of a race file (Scenario.Race) may
// differ before the broker counts as answering it differently: under load
// the broker loses the race about half the time.
const raceAttempts = 8

// TestLibraryAgreesWithBroker records every library scenario again, into a
// temporary folder, and fails when the broker's answers differ from the
// committed files: the library still describes the broker. Scenarios that
// sleep more than a minute (the consumer timeout takes 31.5 minutes) run
// only when AMQP_SLOW is set as well. A race file passes when one of
// raceAttempts recordings agrees: the broker still gives that outcome.
func TestLibraryAgreesWithBroker(t *testing.T) {
	url := brokerURL(t)
	list, err := scenarios.LoadFS(scenarios.Library(), ".")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, s := range list {
		t.Run(s.Name, func(t *testing.T) {
			if realTime(s) > time.Minute && os.Getenv("AMQP_SLOW") == "" {
				t.Skipf("sleeps %s against the broker: set AMQP_SLOW=1 to run", realTime(s))
			}
			// Sequential subtests run before the parallel ones start, so
			// an alarm never blocks another file's publishers, and a race
			// runs on a broker the other files do not load.
			if !nodeWide(s) && !s.Race() {
				t.Parallel()
			}
			// A broker's frame that comes after the quiet window, on a
			// loaded machine, is a late answer, not a different one: a file
			// that differs is recorded again with a longer window before
			// it fails. The simulator's replays have no such window.
			windows := []time.Duration{scenarios.DefaultWindow, 2 * scenarios.DefaultWindow, 4 * scenarios.DefaultWindow}
			if s.Race() {
				windows = slices.Repeat(windows[2:], raceAttempts)
			}
			var diff string
			for _, window := range windows {
				rec, res, err := scenarios.Record(s, scenarios.RecordOptions{URL: url, Window: window})
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, s.Name+".txt"), rec.Format(), 0o644); err != nil {
					t.Fatal(err)
				}
				if diff = res.Diff(); diff == "" {
					return
				}
				t.Logf("window %v: the broker answered differently; recording again", window)
			}
			t.Errorf("the broker answers differently from the committed file (recorded in %s):\n%s", dir, diff)
		})
	}
}

// TestRecordingIsStable records the same scenarios three times in a row and
// requires identical files: the quiet window makes recordings repeatable.
func TestRecordingIsStable(t *testing.T) {
	url := brokerURL(t)
	for _, name := range []string{"seed000-two-consumers.txt", "ack-unknown-tag-requeues-channel.txt", "publish-confirms-and-returns.txt"} {
		s, err := scenarios.ParseFS(scenarios.Library(), name)
		if err != nil {
			t.Fatal(err)
		}
		var first []byte
		for run := 1; run <= 3; run++ {
			rec, _, err := scenarios.Record(s, scenarios.RecordOptions{URL: url})
			if err != nil {
				t.Fatal(err)
			}
			got := rec.Format()
			if run == 1 {
				first = got
				continue
			}
			if d := cmp.Diff(string(first), string(got)); d != "" {
				t.Errorf("%s: recording %d differs from recording 1:\n%s", name, run, d)
			}
		}
	}
}
