package sim

import (
	"strings"
	"testing"
	"time"
)

// A timer that re-arms at the same instant is a broker bug: Advance fails
// loudly instead of spinning forever.
func TestAdvanceRefusesTimerSpinningAtOneInstant(t *testing.T) {
	b := New(Config{})
	var spin *timer
	fired := 0
	spin = newTimer(func() {
		fired++
		b.schedule(spin, b.now) // no progress
	})
	b.mu.Lock()
	b.schedule(spin, b.now.Add(time.Second))
	b.mu.Unlock()
	defer func() {
		r := recover()
		msg, _ := r.(string)
		if !strings.Contains(msg, "re-arms without the clock moving") {
			t.Fatalf("Advance did not fail on a spinning timer: %v", r)
		}
		if fired <= maxFiringsPerInstant {
			t.Errorf("fired %d times, want more than %d before failing", fired, maxFiringsPerInstant)
		}
	}()
	b.Advance(time.Minute)
}

// Many timers due at one instant all fire: the bound counts firings at one
// instant, and legitimate work stays far below it.
func TestAdvanceFiresEveryTimerDueAtOneInstant(t *testing.T) {
	b := New(Config{})
	fired := 0
	b.mu.Lock()
	for range 1000 {
		b.schedule(newTimer(func() { fired++ }), b.now.Add(time.Second))
	}
	b.mu.Unlock()
	b.Advance(time.Second)
	if fired != 1000 {
		t.Errorf("fired %d of 1000", fired)
	}
}
