package sim_test

import (
	"testing"
	"time"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// TestFollowedClock: with Config.Clock the broker's clock follows the
// supplied time at every call, fires the consumer timeout (4.3's, a
// quorum queue's own timer) at its time as Advance would, tells the
// shell when to wake it (NextTimer), and refuses Advance.
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
	c, _ := ch.Consume("q", sim.ConsumeOptions{Tag: "A"})
	if err := b.Publish("/", "", "q", sim.Message{Body: []byte("m")}); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Next(); !ok {
		t.Fatal("no delivery")
	}
	due, ok := b.NextTimer()
	if !ok || !due.Equal(now.Add(sim.DefaultConsumerTimeout)) {
		t.Fatalf("NextTimer = %v %v, want the delivery's timeout 30 minutes on", due, ok)
	}
	now = now.Add(31 * time.Minute)
	b.Sync()
	if got := ch.Cancels(); len(got) != 1 || got[0].ConsumerTag != "A" || ch.Err() != nil {
		t.Fatalf("cancels %v, channel err %v; want basic.cancel of A on an open channel", got, ch.Err())
	}
	var cancelledAt time.Duration
	for _, e := range b.Trace() {
		if e.Kind == sim.EventPush && e.Method == protocol.BasicCancel {
			cancelledAt = e.At
		}
	}
	if cancelledAt != 30*time.Minute {
		t.Errorf("cancelled at %v after the start, want 30m", cancelledAt)
	}
	if got := b.Now(); !got.Equal(now) {
		t.Errorf("Now = %v, want %v", got, now)
	}
}
