package fuzz

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/amqpsim/amqpsim/scenarios"
	"github.com/amqpsim/amqpsim/sim"
)

// The same seed gives the same scenario; another seed another one.
func TestGenerateIsDeterministic(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		a, b := Generate(seed, Options{}).Format(), Generate(seed, Options{}).Format()
		if !bytes.Equal(a, b) {
			t.Fatalf("seed %d gave two scenarios:\n%s\n---\n%s", seed, a, b)
		}
		if c := Generate(seed+1000, Options{}).Format(); bytes.Equal(a, c) {
			t.Fatalf("seeds %d and %d gave the same scenario", seed, seed+1000)
		}
	}
}

// Every generated scenario is a valid file: it parses back to the same
// steps, and the simulator runs it to the end.
func TestGeneratedScenariosParseAndRun(t *testing.T) {
	for seed := uint64(1); seed <= 150; seed++ {
		s := Generate(seed, Options{})
		p, err := scenarios.Parse(s.Name+".txt", s.Format())
		if err != nil {
			t.Fatalf("seed %d does not parse: %v\n%s", seed, err, s.Format())
		}
		if !bytes.Equal(p.Format(), s.Format()) {
			t.Fatalf("seed %d does not round-trip:\n%s\n---\n%s", seed, s.Format(), p.Format())
		}
		if _, err := scenarios.Replay(p); err != nil {
			t.Fatalf("seed %d does not run on the simulator: %v\n%s", seed, err, s.Format())
		}
	}
}

// The generator uses every verb of the grammar but the alarms (which
// block every publisher of the broker, other recordings' too) and the
// cluster's, and every queue type, exchange kind and settlement.
func TestGeneratorCoversTheGrammar(t *testing.T) {
	want := []string{"conn", "channel", "close", "declare-queue", "declare-exchange", "delete-queue", "delete-exchange",
		"bind", "unbind", "bind-exchange", "purge", "qos", "consume", "cancel", "publish", "confirm", "tx", "commit",
		"rollback", "get", "ack", "nack", "reject", "recover", "advance", "queue", "held", "headers", "envelope",
		"policy", "clear-policy", "operator-policy", "clear-operator-policy", "user", "permissions", "clear-permissions",
		"topic-permissions", "user-tags", "delete-user",
		// words of steps
		"x-queue-type=quorum", "x-queue-type=stream", " fanout", " topic", " headers", " direct", "x-match=", "multiple",
		"requeue=false", "mandatory", "expiration=", "x-stream-offset=", "x-dead-letter-exchange=", "x-max-length=",
		"x-overflow=", "x-delivery-limit=", "x-max-priority=", "x-single-active-consumer=", "alternate-exchange=",
		" global", " no-ack", " exclusive", "persistent", "header.", "amq.rabbitmq.reply-to", "user=", "#.", "*",
	}
	seen := map[string]int{}
	steps := 0
	const n = 400
	for seed := uint64(1); seed <= n; seed++ {
		s := Generate(seed, Options{})
		steps += len(s.Steps)
		for _, st := range s.Steps {
			verb, _, _ := strings.Cut(st.Text, " ")
			seen[verb]++
			for _, w := range want {
				if strings.Contains(st.Text, w) {
					seen[w]++
				}
			}
		}
	}
	var missing []string
	for _, w := range want {
		if seen[w] == 0 {
			missing = append(missing, w)
		}
	}
	if len(missing) > 0 {
		t.Errorf("%d scenarios never use %q", n, missing)
	}
	if mean := float64(steps) / n; mean < 20 {
		t.Errorf("a scenario has %.1f steps on average, want 20 or more", mean)
	}
}

// Most steps do something: few answers are errors, and most scenarios
// deliver messages and settle them.
func TestGeneratedScenariosAreMostlyMeaningful(t *testing.T) {
	steps, errs, delivering, settling := 0, 0, 0, 0
	const n = 200
	for seed := uint64(1); seed <= n; seed++ {
		s := Generate(seed, Options{})
		res, err := scenarios.Replay(s)
		if err != nil {
			t.Fatal(err)
		}
		delivered, settled := false, false
		for i, lines := range res.Got {
			steps++
			for _, l := range lines {
				if strings.Contains(l, "<- channel.close") || strings.Contains(l, "<- connection.close") || strings.HasPrefix(l, "! ") {
					errs++
					break
				}
			}
			if slices.ContainsFunc(lines, func(l string) bool { return strings.Contains(l, " <- m") || strings.HasPrefix(l, "get-ok") }) {
				delivered = true
			}
			verb, _, _ := strings.Cut(s.Steps[i].Text, " ")
			if delivered && (verb == "ack" || verb == "nack" || verb == "reject") {
				settled = true
			}
		}
		if delivered {
			delivering++
		}
		if settled {
			settling++
		}
	}
	if rate := float64(errs) / float64(steps); rate > 0.2 {
		t.Errorf("%.0f%% of steps are answered with an error or refused, want at most 20%%", 100*rate)
	}
	if delivering < n*8/10 {
		t.Errorf("%d of %d scenarios deliver a message, want at least 80%%", delivering, n)
	}
	// 4.3 refuses a topic binding key with more than two '#' words
	// (sim.Profile.TopicMaxHashWords), which the generator writes on
	// purpose; the refusal closes the channel, and of these 200
	// scenarios 99 settle a delivery (100 did before the limit).
	if settling < n/2 {
		t.Errorf("%d of %d scenarios settle a delivery, want at least half", settling, n)
	}
}

func ExampleGenerate() {
	s := Generate(42, Options{Steps: 8})
	fmt.Println(s.Steps[0].Text)
	fmt.Println(s.Steps[1].Text)
	// Output:
	// conn c1
	// channel c1.ch1
}

// Cluster scenarios fault nodes, one at a time, and never cut off node 1
// (the recorder observes queues through the lowest running node).
func TestClusterScenariosFaultNodes(t *testing.T) {
	faults := map[string]int{}
	for seed := uint64(1); seed <= 100; seed++ {
		s := Generate(seed, Options{Nodes: 3})
		if s.Cluster == nil || s.Cluster.Nodes != 3 {
			t.Fatalf("seed %d: no cluster directive", seed)
		}
		down := 0
		for _, st := range s.Steps {
			switch o := st.Op.(type) {
			case scenarios.StopNode, scenarios.KillNode, scenarios.Partition:
				verb, _, _ := strings.Cut(st.Text, " ")
				faults[verb]++
				if down++; down > 1 {
					t.Fatalf("seed %d: two nodes faulted at once at %q", seed, st.Text)
				}
				if p, ok := o.(scenarios.Partition); ok && p.Node == 1 {
					t.Fatalf("seed %d: node 1 cut off", seed)
				}
			case scenarios.StartNode, scenarios.Heal:
				faults[strings.Fields(st.Text)[0]]++
				down--
			}
			if d, ok := st.Op.(scenarios.DeclareQueue); ok && (d.Exclusive || d.Args["x-queue-type"] == "stream") {
				t.Fatalf("seed %d: %q on a cluster", seed, st.Text)
			}
		}
	}
	for _, v := range []string{"stop-node", "kill-node", "partition", "start-node", "heal"} {
		if faults[v] == 0 {
			t.Errorf("100 cluster scenarios never %s", v)
		}
	}
}

// A step that shows a stream's count comes a tick of
// rabbit_osiris_metrics after the last dead letter, as after the last
// publish: the dead letter may have reached the stream, and before the
// tick the count depends on the tick's phase on the broker (seed 31107).
func TestStreamCountsWaitOutDeadLetters(t *testing.T) {
	checked := 0
	for seed := uint64(1); seed <= 2000; seed++ {
		s := Generate(seed, Options{})
		streams := map[string]bool{}
		for i, st := range s.Steps {
			switch op := st.Op.(type) {
			case scenarios.DeclareQueue:
				if op.Args["x-queue-type"] == "stream" {
					streams[op.Queue] = true
				}
			case scenarios.ShowQueue:
				if !streams[op.Queue] {
					continue
				}
				// The steps before this one, and the dead letters they made.
				before := *s
				before.Steps = s.Steps[:i]
				res, err := scenarios.Replay(&before)
				if err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
				last := time.Duration(-1)
				for _, e := range res.Trace {
					if e.Kind == sim.EventDeadLetter && !e.Dropped {
						last = e.At
					}
				}
				if last < 0 {
					continue
				}
				checked++
				if wait := res.End - last; wait < streamCountLag {
					t.Errorf("seed %d, line %d (%s): %v after a dead letter, under %v", seed, st.Line, st.Text, wait, streamCountLag)
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no generated scenario showed a stream's count after a dead letter")
	}
}
