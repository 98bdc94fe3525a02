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
