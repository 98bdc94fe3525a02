package scenarios

import (
	"strings"
	"testing"
)

// confirmReport is a three-step report whose second step the simulator
// answered with one delivery.
const confirmReport = `# a report
source simulator trace

conn c1
channel c1.ch1
consume ch1 q tag=A
  A <- m1 #1
fault nack-publishes 1
`

// runOf is a run of the report that answered its steps so.
func runOf(got ...[]string) *Result { return &Result{Got: got} }

// TestJudge: the verdict follows the runs' answers: all as the report's
// (the failure is the code's), one differing the same way in every run
// (a divergence, at that step), differing among themselves (a race), or
// stopped by a fault a broker cannot take (not confirmable past it).
func TestJudge(t *testing.T) {
	s, err := Parse("r.txt", []byte(confirmReport))
	if err != nil {
		t.Fatal(err)
	}
	same := runOf(nil, nil, []string{"A <- m1 #1"}, nil)
	none := runOf(nil, nil, nil, nil)
	other := runOf(nil, nil, []string{"A <- m2 #1"}, nil)
	late := runOf(nil, []string{"c1 <- connection.blocked"}, []string{"A <- m1 #1"}, nil) // strays at step 2
	for _, c := range []struct {
		name     string
		runs     []*Result
		stop     int
		outcome  Outcome
		step     int
		race     int
		matching int
		says     []string
	}{
		{"agrees", []*Result{same, same, same}, 4, Agrees, -1, -1, 3,
			[]string{"RabbitMQ 4.3.6 answers the same: the failure is in your code.", "all 3 runs answered every step as the simulator did"}},
		{"diverges", []*Result{none, none, none}, 4, Diverges, 2, -1, 0,
			[]string{"RabbitMQ 4.3.6 answers differently at step 3: this is a simulator divergence.", "Step 3 is r.txt:6: consume ch1 q tag=A",
				"It was answered so in all 3 runs, each of which answered every step before it as the simulator did.",
				"  the simulator answered | RabbitMQ 4.3.6 answered\n", "  A <- m1 #1             | (nothing)\n", "File the divergence with amqpsim"}},
		{"races", []*Result{none, other, other}, 4, Races, 2, 2, 0,
			[]string{"RabbitMQ 4.3.6 answers step 3 differently from run to run: RabbitMQ races there", "It was reached in all 3 runs",
				"RabbitMQ 4.3.6 answered (run 1)",
				"RabbitMQ 4.3.6 answered (runs 2, 3)", "  A <- m1 #1             | A <- m2 #1\n"}},
		{"agrees once", []*Result{none, same, other}, 4, Agrees, -1, 2, 1,
			[]string{"1 of 3 runs answered every step as the simulator did", "RabbitMQ races at step 3"}},
		{"not confirmable", []*Result{same, same, same}, 3, Unconfirmable, 3, -1, 3,
			[]string{"Not confirmable from step 4 on: r.txt:8: fault nack-publishes 1", "cannot take that fault on command: why."}},
		{"diverges before the fault", []*Result{other, other, other}, 3, Diverges, 2, -1, 0, nil},
		// A run that strays early (a late frame, a race) says nothing of
		// the later step the others reached.
		{"diverges, one run strayed", []*Result{late, none, none}, 4, Diverges, 2, 1, 0,
			[]string{"It was answered so in 2 of 3 runs (2, 3), each of which", "The other runs answered step 2 (r.txt:5: channel c1.ch1) otherwise first"}},
		{"races among the runs that reached it", []*Result{late, none, other}, 4, Races, 2, 1, 0,
			[]string{"It was reached in 2 of 3 runs (2, 3)", "RabbitMQ 4.3.6 answered (run 2)", "RabbitMQ 4.3.6 answered (run 3)"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := judge(s, c.runs, c.stop, "why")
			v.Broker = "RabbitMQ 4.3.6"
			if v.Outcome != c.outcome || v.Step != c.step || v.RaceStep != c.race || v.Matching != c.matching {
				t.Errorf("outcome %d, step %d, race %d, matching %d; want %d, %d, %d, %d", v.Outcome, v.Step, v.RaceStep, v.Matching,
					c.outcome, c.step, c.race, c.matching)
			}
			text := v.String()
			for _, want := range c.says {
				if !strings.Contains(text, want) {
					t.Errorf("the verdict lacks %q:\n%s", want, text)
				}
			}
		})
	}
}
