package sim_test

import (
	"errors"
	"testing"
	"time"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// TestFollowedClock: with Config.Clock the broker's clock follows the
// supplied time at every call, fires the consumer timeout at its tick as
// Advance would, tells the shell when to wake it (NextTimer), and refuses
// Advance.
func TestFollowedClock(t *testing.T) {
	now := sim.Epoch().Add(time.Hour)
	b := sim.New(sim.Config{Clock: func() time.Time { return now }})
	if got := b.Now(); !got.Equal(now) {
		t.Fatalf("Now = %v, want the clock's %v", got, now)
	}
	if err := b.Advance(time.Minute); err == nil {
		t.Error("Advance accepted with a followed clock")
	}
	if _, ok := b.NextTimer(); ok {
		t.Error("a fresh broker has a timer")
	}
	ch, _ := b.Connect("app").Channel()
	// A quorum queue: from 4.3 only its deliveries time out.
	if _, err := ch.QueueDeclare("q", quorumQueue); err != nil {
		t.Fatal(err)
	}
	c, _ := ch.Consume("q", sim.ConsumeOptions{})
	if err := b.Publish("/", "", "q", sim.Message{Body: []byte("m")}); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Next(); !ok {
		t.Fatal("no delivery")
	}
	due, ok := b.NextTimer()
	if !ok || !due.Equal(now.Add(sim.DefaultChannelTickInterval)) {
		t.Fatalf("NextTimer = %v %v, want the first tick a minute on", due, ok)
	}
	now = now.Add(31 * time.Minute)
	b.Sync()
	var perr *protocol.Error
	if !errors.As(ch.Err(), &perr) || perr.Code != protocol.PreconditionFailed {
		t.Fatalf("channel err = %v, want the consumer timeout's 406", ch.Err())
	}
	var closedAt time.Duration
	for _, e := range b.Trace() {
		if e.Kind == sim.EventChannelClose {
			closedAt = e.At
		}
	}
	if closedAt != 30*time.Minute {
		t.Errorf("closed at %v after the start, want the tick at 30m", closedAt)
	}
	if got := b.Now(); !got.Equal(now) {
		t.Errorf("Now = %v, want %v", got, now)
	}
}
