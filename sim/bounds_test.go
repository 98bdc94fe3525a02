package sim_test

import (
	"testing"
	"time"

	"github.com/amqpsim/amqpsim/sim"
)

// The bounds of x-message-ttl and x-expires are a scenario
// (scenarios/testdata/measured/ttl-arguments-bounded.txt).

// Expiries are counted from the broker's start, so a clock past 2262 (where
// Unix nanoseconds overflow) still expires a 1 h message after an hour; the
// clock refuses to run past MaxClock.
func TestTTLFarInTheFuture(t *testing.T) {
	e := newEnvConfig(t, sim.Config{Start: time.Date(2262, 4, 11, 23, 0, 0, 0, time.UTC)})
	e.declare("q", sim.QueueOptions{Args: sim.Table{"x-message-ttl": int32(3600000)}})
	e.publish("q", "m1")
	e.must(e.b.Advance(59 * time.Minute))
	diff(t, "before the hour", []string{"m1"}, e.ready("q"))
	e.must(e.b.Advance(2 * time.Minute))
	diff(t, "after the hour", []string{}, e.ready("q"))
	if err := e.b.Advance(sim.MaxClock); err == nil {
		t.Error("Advance beyond MaxClock accepted")
	}
	if got := e.b.Now(); !got.Equal(time.Date(2262, 4, 12, 0, 1, 0, 0, time.UTC)) {
		t.Errorf("a refused Advance moved the clock to %v", got)
	}
}
