package sim_test

import (
	"fmt"
	"testing"

	"github.com/amqpsim/amqpsim/sim"
)

// TestConnLabels: a later connection under a name already used gets the
// first free suffix, a connection literally named like a suffixed label
// included; each event takes the label of the latest connection so named.
func TestConnLabels(t *testing.T) {
	b := sim.New(sim.Config{})
	b.Connect("a").Close()
	b.Connect("a-2")
	ch, _ := b.Connect("a").Channel()
	ch.QueueDeclare("q", sim.QueueOptions{})
	b.Publish("/", "", "q", sim.Message{})
	trace := b.Trace()
	labels := sim.ConnLabels(trace)
	var got []string
	for i, e := range trace {
		got = append(got, fmt.Sprintf("%s %s", e.Kind, labels[i]))
	}
	want := []string{"connection.open a", "connection.close a", "connection.open a-2", "connection.open a-3",
		"channel.open a-3", "call a-3", "publish "}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("labels\n got %q\nwant %q", got, want)
	}
}

// TestQosEventSaysGlobalDenied: the trace's basic.qos keeps the flag the
// client sent and says when the release applied global=true per consumer
// (4.3 denies global_qos unless permitted; 3.10 does not).
func TestQosEventSaysGlobalDenied(t *testing.T) {
	for _, tc := range []struct {
		cfg    sim.Config
		global bool
		denied bool
	}{
		{sim.Config{Version: sim.V4_3}, true, true},
		{sim.Config{Version: sim.V4_3}, false, false},
		{sim.Config{Version: sim.V4_3, Permit: []string{"global_qos"}}, true, false},
		{sim.Config{Version: sim.V3_10}, true, false},
	} {
		b := sim.New(tc.cfg)
		ch, _ := b.Connect("app").Channel()
		ch.Qos(5, 0, tc.global)
		e := b.Trace()[len(b.Trace())-1]
		if e.Global != tc.global || e.GlobalDenied != tc.denied {
			t.Errorf("%v permit %v, global=%v: event %v, want GlobalDenied %v", tc.cfg.Version, tc.cfg.Permit, tc.global, e, tc.denied)
		}
	}
}
