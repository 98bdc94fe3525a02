package sim_test

import (
	"slices"
	"testing"
	"time"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// TestAlarmPushes: BlockOnPublish blocks only under an alarm, tells only
// clients with the connection.blocked capability, once per alarm, and the
// last cleared alarm unblocks with connection.unblocked to those told.
func TestAlarmPushes(t *testing.T) {
	b := sim.New(sim.Config{})
	told, _ := b.Dial(sim.ConnectOptions{Name: "told"})
	silent, _ := b.Dial(sim.ConnectOptions{Name: "silent", NoBlockedNotify: true})
	methods := func(c *sim.Connection) []string {
		var out []string
		for _, p := range c.Drain(nil) {
			s := p.Method.String()
			if p.ReplyText != "" {
				s += " " + p.ReplyText
			}
			out = append(out, s)
		}
		return out
	}
	if told.BlockOnPublish() {
		t.Fatal("blocked without an alarm")
	}
	b.SetAlarm(sim.AlarmMemory, true)
	if b.Alarms() != sim.AlarmMemory {
		t.Errorf("alarms %v", b.Alarms())
	}
	if got := methods(told); len(got) != 0 {
		t.Errorf("raising the alarm pushed %q", got)
	}
	// told publishes twice under the alarm: both block, and it hears
	// connection.blocked once.
	for _, c := range []*sim.Connection{told, told, silent} {
		if !c.BlockOnPublish() {
			t.Fatalf("%s not blocked under an alarm", c.Name())
		}
	}
	if got := methods(told); len(got) != 1 || got[0] != "connection.blocked low on memory" {
		t.Errorf("told got %q, want one connection.blocked", got)
	}
	if got := methods(silent); len(got) != 0 || !silent.Blocked() {
		t.Errorf("silent got %q, blocked %v", got, silent.Blocked())
	}
	b.SetAlarm(sim.AlarmMemory, false)
	if told.Blocked() || silent.Blocked() {
		t.Error("still blocked after the alarm cleared")
	}
	if got := methods(told); len(got) != 1 || got[0] != "connection.unblocked" {
		t.Errorf("told got %q, want connection.unblocked", got)
	}
	if got := methods(silent); len(got) != 0 {
		t.Errorf("silent got %q", got)
	}
	var kinds []sim.EventKind
	for _, e := range b.Trace() {
		if e.Kind == sim.EventBlocked || e.Kind == sim.EventUnblocked {
			kinds = append(kinds, e.Kind)
		}
		if e.Kind == sim.EventPush && e.Method == protocol.ConnectionBlocked && e.Reason != "low on memory" {
			t.Errorf("push event reason %q", e.Reason)
		}
	}
	if want := []sim.EventKind{sim.EventBlocked, sim.EventBlocked, sim.EventUnblocked, sim.EventUnblocked}; len(kinds) != len(want) {
		t.Errorf("events %v, want %v", kinds, want)
	}
	told.Close()
	b.SetAlarm(sim.AlarmDisk, true)
	if told.BlockOnPublish() {
		t.Error("a closed connection blocked")
	}
}

// TestSetAlarmFor: the alarm clears itself once its time has passed on
// the virtual clock, unblocking the publisher; SetAlarm cancels the clear.
func TestSetAlarmFor(t *testing.T) {
	b := sim.New(sim.Config{})
	c := b.Connect("pub")
	b.SetAlarmFor(sim.AlarmMemory, 2*time.Second)
	if !c.BlockOnPublish() {
		t.Fatal("publish not blocked by the alarm")
	}
	b.Advance(time.Second)
	if b.Alarms() != sim.AlarmMemory || !c.Blocked() {
		t.Fatal("the alarm cleared early")
	}
	b.Advance(time.Second)
	if b.Alarms() != 0 || c.Blocked() {
		t.Fatalf("alarms %v after 2s, blocked %v", b.Alarms(), c.Blocked())
	}
	var got []string
	for _, p := range c.Drain(nil) {
		got = append(got, p.Method.String()+" "+p.ReplyText)
	}
	if want := []string{"connection.blocked low on memory", "connection.unblocked "}; !slices.Equal(got, want) {
		t.Errorf("pushes %q, want %q", got, want)
	}

	b.SetAlarmFor(sim.AlarmDisk, time.Second)
	b.SetAlarm(sim.AlarmDisk, true) // raised until cleared by hand
	b.Advance(time.Hour)
	if b.Alarms() != sim.AlarmDisk {
		t.Errorf("alarms %v, want the disk alarm kept", b.Alarms())
	}
}
