package sim_test

import (
	"testing"

	"github.com/amqpsim/amqpsim/sim"
)

// A shell's connection holds at most DefaultMaxUnsent deliveries not yet
// written: a no-ack consumer whose client does not read keeps the rest
// queued, and each write lets as many more follow.
func TestFlowShellStopsAtMaxUnsent(t *testing.T) {
	b := sim.New(sim.Config{})
	conn, _ := b.Dial(sim.ConnectOptions{Shell: sim.ShellOptions{MaxUnsent: sim.DefaultMaxUnsent, SentWhenWritten: true}})
	ch, _ := conn.Channel()
	ch.QueueDeclare("q", sim.QueueOptions{})
	if _, err := ch.Consume("q", sim.ConsumeOptions{Tag: "c", NoAck: true}); err != nil {
		t.Fatal(err)
	}
	for range 1000 {
		b.Publish("/", "", "q", sim.Message{Body: make([]byte, 10<<10)})
	}
	ready := func() int { st, _ := b.QueueStats("/", "q"); return st.Ready }
	if got := ready(); got != 1000-sim.DefaultMaxUnsent {
		t.Fatalf("ready = %d, want %d", got, 1000-sim.DefaultMaxUnsent)
	}
	if n := len(conn.Drain(nil)); n != sim.DefaultMaxUnsent {
		t.Fatalf("drained %d", n)
	}
	if got := ready(); got != 1000-sim.DefaultMaxUnsent {
		t.Errorf("draining, not writing, let more through: ready = %d", got)
	}
	conn.Written(50)
	if got := ready(); got != 1000-sim.DefaultMaxUnsent-50 {
		t.Errorf("after writing 50: ready = %d", got)
	}
	conn.Close()
	if got := ready(); got != 1000-sim.DefaultMaxUnsent-50 {
		t.Errorf("closing lost queued messages: ready = %d", got)
	}
}

// In process the bound is off by default; set, an unread consumer stops at
// it and reading lets more through.
func TestFlowInProcessBound(t *testing.T) {
	b := sim.New(sim.Config{})
	conn, _ := b.Dial(sim.ConnectOptions{Shell: sim.ShellOptions{MaxUnsent: 3}})
	ch, _ := conn.Channel()
	ch.QueueDeclare("q", sim.QueueOptions{})
	c, _ := ch.Consume("q", sim.ConsumeOptions{Tag: "c", NoAck: true})
	for range 10 {
		b.Publish("/", "", "q", sim.Message{})
	}
	if st, _ := b.QueueStats("/", "q"); st.Ready != 7 {
		t.Fatalf("ready = %d, want 7", st.Ready)
	}
	if got := len(c.Deliveries()); got != 10 {
		t.Errorf("reading got %d deliveries, want all 10", got)
	}
	free := sim.New(sim.Config{})
	fc := free.Connect("app")
	fch, _ := fc.Channel()
	fch.QueueDeclare("q", sim.QueueOptions{})
	fch.Consume("q", sim.ConsumeOptions{Tag: "c", NoAck: true})
	for range 1000 {
		free.Publish("/", "", "q", sim.Message{})
	}
	if st, _ := free.QueueStats("/", "q"); st.Ready != 0 {
		t.Errorf("in process without a bound: ready = %d", st.Ready)
	}
}
