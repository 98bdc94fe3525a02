package modeltest

import (
	"flag"
	"os"
	"strconv"
	"sync"
	"testing"

	"github.com/amqpsim/amqpsim/scenarios"
	"pgregory.net/rapid"
)

// steps is the average number of actions per sequence unless -rapid.steps
// says otherwise.
const steps = "100"

// Check is the model-based property test: it runs AMQPSIM_CHECKS random
// sequences (else RAPID_CHECKS or -rapid.checks, else 1,000), each checked
// step by step against the model and the invariants and replayed at its
// end for determinism. On a failure rapid shrinks the sequence, and Check
// writes it as a scenario file and names the file and the commands that
// record and replay it.
func Check(t *testing.T) {
	checks(t)
	withRapidFlag(t, "rapid.steps", steps)
	cx := newCounterexamples(t, "")
	rapid.Check(cx, prop(false, nil, cx))
}

// Replay runs the steps of a scenario, given as its text, through the
// harness: each step on the simulator and the model, which must agree,
// with the invariants checked after it, and the whole replayed at the end
// for determinism. The scenario's seed directive seeds the simulator and
// the model, and its rabbitmq directive must name Release, the model's
// release. Its result lines, if any, are not read. The harness runs what
// its generators write: one body per publish, settlements by delivery tag,
// queue arguments of the kinds the generators draw, and "publish pub ..."
// (channel pub of connection broker) as Broker.Publish.
func Replay(t *testing.T, name, text string) {
	t.Helper()
	s, err := scenarios.Parse(name, []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if s.Version != Release {
		t.Fatalf("%s replays on RabbitMQ %s, but the reference model is %s's: add a line \"rabbitmq %s\" after its source line", name, s.Version, Release, Release)
	}
	newHarness(t, s.Seed, false).run(s)
}

// prop is one sequence. done, if set, sees each finished harness; cx, if
// set, writes the sequence rapid reports as failing as a scenario file.
func prop(mutant bool, done func(*harness), cx *counterexamples) func(*rapid.T) {
	return func(t *rapid.T) {
		h := newHarness(t, rapid.Uint64Range(1, 4).Draw(t, "seed"), mutant)
		passed := false
		if cx != nil {
			final := cx.reported
			t.Cleanup(func() { cx.ended(h, final, passed && !t.Failed(), t.Failed()) })
		}
		h.setup(t)
		t.Repeat(h.actions())
		h.checkDeterminism()
		if done != nil {
			done(h)
		}
		passed = true
	}
}

// cmdline records the flags set on the command line, before these tests
// set any themselves (flag.Visit cannot tell the two apart later).
var cmdline = sync.OnceValue(func() map[string]bool {
	set := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
})

// withRapidFlag sets a rapid flag for the duration of a test, unless the
// command line set it.
func withRapidFlag(t *testing.T, name, value string) {
	if cmdline()[name] {
		return
	}
	f := flag.Lookup(name)
	if f == nil {
		t.Fatalf("no flag %s", name)
	}
	old := f.Value.String()
	if err := flag.Set(name, value); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = flag.Set(name, old) })
}

// checks sets the number of sequences: AMQPSIM_CHECKS, else RAPID_CHECKS
// or -rapid.checks if given, else 1,000.
func checks(t *testing.T) {
	if s := os.Getenv("AMQPSIM_CHECKS"); s != "" {
		if _, err := strconv.Atoi(s); err != nil {
			t.Fatalf("AMQPSIM_CHECKS=%q: %v", s, err)
		}
		withRapidFlag(t, "rapid.checks", s)
		return
	}
	if _, ok := os.LookupEnv("RAPID_CHECKS"); !ok {
		withRapidFlag(t, "rapid.checks", "1000")
	}
}
