package sim_test

import (
	"strings"
	"testing"

	"github.com/amqpsim/amqpsim/sim"
)

// SetPolicy refuses what rabbitmqctl set_policy refuses, changing nothing;
// ClearPolicy of a missing policy is an error; Policies lists by name.
func TestPolicyValidation(t *testing.T) {
	b := sim.New(sim.Config{})
	for _, tc := range []struct {
		p    sim.Policy
		want string
	}{
		{sim.Policy{Name: "p", Pattern: "(", Definition: sim.Table{"max-length": 1}}, "pattern"},
		{sim.Policy{Name: "p", Pattern: ".*", ApplyTo: "bindings", Definition: sim.Table{"max-length": 1}}, "apply-to"},
		{sim.Policy{Name: "p", Pattern: ".*"}, "empty definition"},
		{sim.Policy{Name: "p", Pattern: ".*", Definition: sim.Table{"max-length": -1}}, "invalid value"},
		{sim.Policy{Name: "p", Pattern: ".*", Definition: sim.Table{"expires": 0}}, "invalid value"},
		{sim.Policy{Name: "p", Pattern: ".*", Definition: sim.Table{"message-ttl": int64(315360000001)}}, "invalid value"},
		{sim.Policy{Name: "p", Pattern: ".*", Definition: sim.Table{"overflow": "drop-tail"}}, "invalid value"},
		{sim.Policy{Name: "p", Pattern: ".*", Definition: sim.Table{"ha-mode": "all"}}, "not a policy key"},
	} {
		if err := b.SetPolicy("/", tc.p); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.p, err, tc.want)
		}
	}
	if err := b.SetPolicy("nosuchvhost", sim.Policy{Name: "p", Pattern: ".*", Definition: sim.Table{"max-length": 1}}); err == nil {
		t.Error("a policy for a missing vhost")
	}
	if len(b.Policies("/")) != 0 {
		t.Fatal("a refused policy was kept")
	}
	for _, n := range []string{"b", "a"} {
		if err := b.SetPolicy("/", sim.Policy{Name: n, Pattern: "^x", Definition: sim.Table{"max-length": 1}}); err != nil {
			t.Fatal(err)
		}
	}
	if ps := b.Policies("/"); len(ps) != 2 || ps[0].Name != "a" || ps[0].ApplyTo != "all" {
		t.Errorf("policies %+v", ps)
	}
	if err := b.ClearPolicy("/", "nosuch"); err == nil {
		t.Error("clearing a missing policy")
	}
}

// Of two policies with one priority, the first by name applies.
func TestPolicyTieGoesToTheFirstName(t *testing.T) {
	e := newEnv(t)
	e.must(e.b.SetPolicy("/", sim.Policy{Name: "b", Pattern: "^q$", Definition: sim.Table{"max-length": 2}}))
	e.must(e.b.SetPolicy("/", sim.Policy{Name: "a", Pattern: "^q$", Definition: sim.Table{"max-length": 1}}))
	e.declare("q", sim.QueueOptions{})
	e.publish("q", "m1", "m2", "m3")
	diff(t, "ready", []string{"m3"}, e.ready("q"))
}
