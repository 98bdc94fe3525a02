package scenarios_test

import (
	"fmt"
	"os"

	"github.com/amqpsim/amqpsim/scenarios"
)

// A sequence of operations, such as a shrunk property-test counterexample,
// becomes a scenario file; replaying it on the simulator gives the results
// that recording it against RabbitMQ must confirm.
func ExampleNew() {
	s := scenarios.New("regress-cancel", "A cancelled consumer's delivery can still be acked.", "",
		scenarios.Conn{Name: "c1"},
		scenarios.OpenChannel{Conn: "c1", Name: "ch1"},
		scenarios.DeclareQueue{Channel: "ch1", Queue: "q"},
		scenarios.Consume{Channel: "ch1", Queue: "q", Tag: "A"},
		scenarios.Publish{Channel: "ch1", Key: "q", Bodies: []string{"m1", "m2"}},
		scenarios.Cancel{Channel: "ch1", Tag: "A"},
		scenarios.Settle{Method: "ack", Channel: "ch1", Msg: "m1"},
		scenarios.ShowHeld{},
	)
	res, _ := scenarios.Replay(s)
	os.Stdout.Write(res.Recorded("").Format())
	// Output:
	// # A cancelled consumer's delivery can still be acked.
	// source hand-written
	//
	// conn c1
	// channel c1.ch1
	// declare-queue ch1 q
	//   declare-ok ready=0 consumers=0
	// consume ch1 q tag=A
	// publish ch1 q m1 m2
	//   A <- m1 #1
	//   A <- m2 #2
	// cancel ch1 A
	// ack ch1 m1
	// held
	//   A (cancelled): m2 #2
}

// Replaying a recorded scenario on the simulator: no divergence.
func ExampleReplay() {
	s, _ := scenarios.ParseFS(scenarios.Library(), "seed000-two-consumers.txt")
	res, _ := scenarios.Replay(s)
	fmt.Printf("%s: %d steps, diff %q\n", s.Name, len(s.Steps), res.Diff())
	// Output:
	// seed000-two-consumers: 18 steps, diff ""
}
