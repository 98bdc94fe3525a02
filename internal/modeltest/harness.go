package modeltest

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/amqpsim/amqpsim/scenarios"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// harness runs one sequence of operations against the simulator (through
// the world), the model and the invariant checker.
type harness struct {
	t     tb
	seed  uint64
	world *world
	model *model
	inv   *checker
	ops   []scenarios.Op
	// Counters for fresh names: bodies m1, m2, ...; consumer tags c1,
	// c2, ...; channels ch1, ch2, ... (unique in the sequence, as a
	// scenario needs).
	msgs, tags, chans int
	// failure is the first line of the check that failed, for the header
	// of a counterexample file.
	failure string
}

// tb is what the harness needs of *rapid.T or *testing.T.
type tb interface {
	Helper()
	Logf(format string, args ...any)
	Fatalf(format string, args ...any)
}

func newHarness(t tb, seed uint64, mutant bool) *harness {
	h := &harness{t: t, seed: seed, world: newWorld(seed), model: newModel(seed), inv: newChecker()}
	h.model.mutant = mutant
	return h
}

// diffOpts make a model/simulator diff readable: bodies as text.
var diffOpts = []cmp.Option{
	cmpopts.EquateEmpty(),
	cmp.Transformer("text", func(b []byte) string { return string(b) }),
}

// step performs one operation everywhere and checks the outcome.
func (h *harness) step(op scenarios.Op) {
	t := h.t
	t.Helper()
	h.ops = append(h.ops, op)
	t.Logf("%3d  %s", len(h.ops), op)
	got := h.world.observe(h.world.apply(op))
	want := h.model.observe(h.model.apply(op))
	if !reflect.DeepEqual(got, want) {
		if diff := cmp.Diff(want, got, diffOpts...); diff != "" {
			h.failure = fmt.Sprintf("after %q the simulator and the model disagree", op)
			t.Fatalf("after %q the simulator and the model disagree (-model +simulator):\n%s", op, diff)
		}
	}
	if bad := h.inv.check(op, got, h.world.b.Trace()); len(bad) > 0 {
		first, _, _ := strings.Cut(bad[0], "\n")
		h.failure = fmt.Sprintf("after %q: %s", op, first)
		t.Fatalf("after %q:\n%s", op, strings.Join(bad, "\n"))
	}
}

// checkDeterminism replays the sequence on a fresh broker: the trace must
// be the same (invariant 10).
func (h *harness) checkDeterminism() {
	w := newWorld(h.seed)
	for _, op := range h.ops {
		w.apply(op)
	}
	first, replay := h.world.b.Trace(), w.b.Trace()
	if reflect.DeepEqual(first, replay) {
		return
	}
	if diff := cmp.Diff(first, replay); diff != "" {
		h.failure = "invariant 10: the same operations gave a different trace"
		h.t.Fatalf("invariant 10: the same operations gave a different trace (-first +replay):\n%s", diff)
	}
}

// run performs a scenario's steps, then checks determinism.
func (h *harness) run(s *scenarios.Scenario) {
	h.t.Helper()
	for _, st := range s.Steps {
		h.step(st.Op)
	}
	h.checkDeterminism()
}
