package scenarios_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/amqpsim/amqpsim/scenarios"
	"github.com/amqpsim/amqpsim/sim"
)

func TestVersionDirectives(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want sim.Version
	}{
		{"conn c1\n", sim.DefaultVersion},
		{"source hand-written\nconn c1\n", sim.DefaultVersion},
		{"source rabbitmq 3.10.8 2026-12-01\nconn c1\n", sim.V3_10},
		{"source rabbitmq 4.0.9 2026-12-01\nconn c1\n", sim.V4_0},
		{"rabbitmq 4.3\nconn c1\n", sim.V4_3},
		// An explicit rabbitmq line wins over the source, either order.
		{"source rabbitmq 3.10.8 2026-12-01\nrabbitmq 4.2\nconn c1\n", sim.V4_2},
		{"rabbitmq 4.2\nsource rabbitmq 3.10.8 2026-12-01\nconn c1\n", sim.V4_2},
	} {
		s, err := scenarios.Parse("v.txt", []byte(tc.src))
		if err != nil {
			t.Fatalf("%q: %v", tc.src, err)
		}
		if s.Version != tc.want {
			t.Errorf("%q: version %v, want %v", tc.src, s.Version, tc.want)
		}
		if got := string(s.Format()); got != tc.src {
			t.Errorf("Format does not round-trip:\n%s\nwant\n%s", got, tc.src)
		}
	}
	for src, want := range map[string]string{
		"source rabbitmq 3.11.5 2026-12-01\nconn c1\n": `v.txt:1:17: sim: no profile for RabbitMQ "3.11.5"`,
		"rabbitmq 9.9\nconn c1\n":                      `v.txt:1:10: sim: no profile for RabbitMQ "9.9"`,
		"conn c1\nrabbitmq 4.3\n":                      "v.txt:2:1: the rabbitmq directive must come before the first step",
	} {
		if _, err := scenarios.Parse("v.txt", []byte(src)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want %q", src, err, want)
		}
	}
}

// A scenario with a rabbitmq line replays on that profile, over the wire
// too: on 3.10 an unknown exchange type closes the connection with 503
// (the default, 4.3, closes the channel with 406).
func TestReplayUsesTheScenarioVersion(t *testing.T) {
	src := "rabbitmq 3.10\nconn c1\nchannel c1.ch1\ndeclare-exchange ch1 x nosuchtype\n" +
		"  c1 <- connection.close 503 (exchange.declare): COMMAND_INVALID - unknown exchange type 'nosuchtype'\n"
	s, err := scenarios.Parse("v310.txt", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	scenarios.Check(t, s)
	scenarios.CheckWire(t, s)
}

// Compare finds each difference and its cause; the replay on the
// release the scenario was recorded on must match the file.
func TestCompareNamesCauses(t *testing.T) {
	s, err := scenarios.ParseFS(scenarios.Library(), "quorum-get.txt")
	if err != nil {
		t.Fatal(err)
	}
	c, err := scenarios.Compare(s, sim.V3_10, sim.V3_12)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Baseline) != 0 {
		t.Errorf("quorum-get does not replay on 3.10: %v", c.Baseline)
	}
	if len(c.Differences) != 2 {
		t.Fatalf("differences: %v", c.Differences)
	}
	for _, d := range c.Differences {
		if d.Kind != "headers: x-delivery-count" || len(d.Causes) != 1 || d.Causes[0] != "quorum basic.get without x-delivery-count 0" || d.FollowOn {
			t.Errorf("difference %+v", d)
		}
	}
	if c, _ := scenarios.Compare(s, sim.V3_10, sim.V3_10); len(c.Differences) != 0 {
		t.Errorf("3.10 differs from itself: %v", c.Differences)
	}
}

// A difference after one that closed a channel follows from it, though
// its step was sent and answered: on 4.3 the declare of a queue of
// version 1 closes ch1, so the queue is missing when ch2 consumes it.
func TestCompareFollowsFromAClose(t *testing.T) {
	s, err := scenarios.Parse("follow.txt", []byte(`source rabbitmq 3.10.8 2026-12-01
conn c1
channel c1.ch1
declare-queue ch1 q x-queue-version=1
  declare-ok ready=0 consumers=0
channel c1.ch2
consume ch2 q tag=A
publish ch2 q m1
  A <- m1 #1
`))
	if err != nil {
		t.Fatal(err)
	}
	c, err := scenarios.Compare(s, sim.V3_10, sim.V4_3)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range c.Differences {
		got = append(got, fmt.Sprintf("%d %s follow-on=%t", d.Line, d.Kind, d.FollowOn))
	}
	want := []string{
		"4 queue.declare: channel.close 406 PRECONDITION_FAILED follow-on=false",
		"7 basic.consume: channel.close 404 NOT_FOUND follow-on=true",
		"8 basic.publish: not sent, the channel is closed follow-on=true",
	}
	if !slices.Equal(got, want) {
		t.Errorf("differences:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// The upgrade check of a scenario recorded on RabbitMQ 3.10.8: what 4.3
// answers differently, and why.
func ExampleCompare() {
	s, _ := scenarios.Parse("orders.txt", []byte(`source rabbitmq 3.10.8 2026-12-01
conn c1
channel c1.ch1
declare-queue ch1 orders
  declare-ok ready=0 consumers=0
qos ch1 1 global
consume ch1 orders tag=A
consume ch1 orders tag=B
publish ch1 orders m1 m2
  A <- m1 #1
`))
	c, _ := scenarios.Compare(s, sim.V3_10, sim.V4_3, "transient_nonexcl_queues")
	for _, d := range c.Differences {
		fmt.Println(d)
	}
	fmt.Print(scenarios.Summarize(sim.V3_10, sim.V4_3, []*scenarios.Comparison{c}))
	// Output:
	// orders.txt:9: publish ch1 orders m1 m2: 4.3 answers B <- m2 #2 instead of nothing [global_qos denied]
	// upgrade check 3.10 -> 4.3: 1 of 1 scenarios answer differently, 1 steps (0 follow from an earlier difference)
	//      1  global_qos denied  (1 file: orders)
	//         basic.qos global=true sets the per-consumer prefetch instead of a channel-wide limit; permit the feature to keep it (from 4.3)
	//         for a consumer: docs/upgrading-consumers.md#global-qos-denied
}

// Recording a file whose rabbitmq line names another release than the
// broker's fails: its expectations would not be that release's.
func TestRecordRefusesAnotherRelease(t *testing.T) {
	url := brokerURL(t)
	plain, _ := scenarios.Parse("plain.txt", []byte("conn c1\n"))
	rec, _, err := scenarios.Record(plain, scenarios.RecordOptions{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	broker := rec.Version // the broker's release series
	other := sim.V3_12    // a release no broker here runs
	s, err := scenarios.Parse("other.txt", []byte("rabbitmq "+other.String()+"\nconn c1\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := scenarios.Record(s, scenarios.RecordOptions{URL: url}); err == nil || !strings.Contains(err.Error(), "its rabbitmq line says "+other.String()) {
		t.Errorf("Record: %v", err)
	}
	s, _ = scenarios.Parse("same.txt", []byte("rabbitmq "+broker.String()+"\nconn c1\n"))
	if _, _, err := scenarios.Record(s, scenarios.RecordOptions{URL: url}); err != nil {
		t.Errorf("Record on the named release: %v", err)
	}
}

// The upgrade check's prediction for a scenario recorded on one release
// (CompareProfiles) is measured against what the library's recordings of
// the other releases show (Compare reads them): every differing step
// predicted is a recorded difference (precision) and every recorded
// difference is predicted (recall), for each pair of recorded releases.
func TestUpgradePredictionMatchesRecordings(t *testing.T) {
	list, err := scenarios.LoadFS(scenarios.Library(), ".")
	if err != nil {
		t.Fatal(err)
	}
	pairs := [][2]sim.Version{{sim.V3_10, sim.V4_0}, {sim.V3_10, sim.V4_3}, {sim.V4_0, sim.V4_3}}
	for _, p := range pairs {
		var predicted, recorded, both int
		for _, s := range list {
			if _, ok := s.On(p[0]); !ok {
				continue
			}
			if _, ok := s.On(p[1]); !ok {
				continue
			}
			real, err := scenarios.Compare(s, p[0], p[1])
			if err != nil {
				t.Fatal(err)
			}
			guess, err := scenarios.CompareProfiles(s, p[0], p[1])
			if err != nil {
				t.Fatal(err)
			}
			if !real.Recorded || guess.Recorded {
				t.Fatalf("%s: Compare read the recordings: %v, CompareProfiles: %v", s.Name, real.Recorded, guess.Recorded)
			}
			lines := map[int]bool{}
			for _, d := range real.Differences {
				lines[d.Line] = true
			}
			recorded += len(real.Differences)
			predicted += len(guess.Differences)
			for _, d := range guess.Differences {
				if lines[d.Line] {
					both++
				} else {
					t.Errorf("%s:%d: %s: predicted from %s to %s, not recorded: %s", s.Path, d.Line, d.Step, p[0], p[1], d.Detail)
				}
			}
			for _, d := range real.Differences {
				if !slices.ContainsFunc(guess.Differences, func(g scenarios.Difference) bool { return g.Line == d.Line }) {
					t.Errorf("%s:%d: %s: recorded from %s to %s, not predicted: %s", s.Path, d.Line, d.Step, p[0], p[1], d.Detail)
				}
			}
		}
		t.Logf("%s -> %s: %d differing steps recorded, %d predicted, %d both: precision %.1f%%, recall %.1f%%",
			p[0], p[1], recorded, predicted, both, 100*float64(both)/float64(max(predicted, 1)), 100*float64(both)/float64(max(recorded, 1)))
	}
}
