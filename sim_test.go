package amqpsim_test

// The model-based property tests of the whole broker (docs/fidelity.md,
// "Property tests of the simulator"). The harness - reference model,
// invariant checker, operation generators, counterexample writer - is
// internal/modeltest; its package doc says what is checked. The model is
// RabbitMQ 3.10's, so these tests run the simulator on 3.10
// (modeltest.Release), not on the default 4.3.

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/amqpsim/amqpsim/internal/modeltest"
	"github.com/amqpsim/amqpsim/scenarios"
)

// TestModel runs 1,000 random sequences (AMQPSIM_CHECKS=n runs n) against
// the simulator, the model and the invariants. A failure writes the shrunk
// sequence as a scenario file (AMQPSIM_COUNTEREXAMPLES=dir, or =testdata).
func TestModel(t *testing.T) { modeltest.Check(t) }

// TestModelRegressions replays the sequences in testdata/model through the
// harness: each once found a bug, or pins a rule (the file's comment says
// which). Each names the release it was found on ("rabbitmq 3.10"), and
// replays there. A file with result lines must also replay to them.
func TestModelRegressions(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "model", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no regressions in testdata/model (%v)", err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) {
			text, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			modeltest.Replay(t, f, string(text))
			s, err := scenarios.Parse(f, text)
			if err != nil {
				t.Fatal(err)
			}
			if slices.ContainsFunc(s.Steps, func(st *scenarios.Step) bool { return len(st.Expect) > 0 }) {
				scenarios.Check(t, s)
			}
		})
	}
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
