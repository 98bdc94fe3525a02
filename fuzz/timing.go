package fuzz

import (
	"slices"
	"time"
)

// The real time a recording spends in a step beyond the simulator's
// virtual time: a step after which the recorder watches for a quiet window
// (150 ms) with its round trips, and a silent one (a declare, a bind). Both
// are upper bounds on a loaded two-core machine (at a load average of 40,
// silent steps took up to 170 ms); measured idle, a library file's steps
// take 70-90 ms on average.
const (
	watchedStepDrift = 600 * time.Millisecond
	silentStepDrift  = 250 * time.Millisecond
	// loginRefusedDelay is what a refused login adds: rabbit_reader's
	// ?SILENT_CLOSE_DELAY (a refused login's step took 3.0 s on each
	// release, seed 32056).
	loginRefusedDelay = 3 * time.Second
	// deadlineMargin is how far each clock must stay from a deadline: a
	// broker's timer fires a few milliseconds late, and RabbitMQ expires a
	// classic queue's head on a timer of its own.
	deadlineMargin = 500 * time.Millisecond
)

// deadline is a timer a step started: it fires at the virtual time at on
// the simulator. On the broker it started when the recorder had spent
// drift0 beyond the virtual clock, so it fires up to drift-drift0 earlier
// in the simulator's frame.
type deadline struct {
	at, drift0 time.Duration
}

// timing follows the two clocks of a scenario: the virtual time now, moved
// only by advance steps, and an upper bound of the real time the recorder
// spends beyond it (drift).
type timing struct {
	now, drift time.Duration
	deadlines  []deadline
}

// start records a timer of d started by the step about to run.
func (t *timing) start(d time.Duration) {
	dl := deadline{at: t.now + d, drift0: t.drift}
	if !slices.Contains(t.deadlines, dl) {
		t.deadlines = append(t.deadlines, dl)
	}
}

// earliest is when, in the simulator's frame, the broker may fire dl once
// the recorder has spent drift.
func (dl deadline) earliest(drift time.Duration) time.Duration {
	return dl.at - (drift - dl.drift0)
}

// needsAdvance reports whether a step whose recording costs cost could let
// the broker come within the margin of a deadline the simulator has not
// reached: the step must wait behind an advance past it.
func (t *timing) needsAdvance(cost time.Duration) bool {
	for _, dl := range t.deadlines {
		if dl.earliest(t.drift+cost)-t.now < deadlineMargin {
			return true
		}
	}
	return false
}

// straddles reports whether an advance of a leaves a deadline between the
// clocks: fired on the broker, not on the simulator, or the reverse.
func (t *timing) straddles(a time.Duration) bool {
	for _, dl := range t.deadlines {
		if t.crossing(dl, a) {
			return true
		}
	}
	return false
}

// crossing reports whether an advance of a ends inside dl's uncertain
// zone: after the broker may have fired it, before the simulator surely
// has.
func (t *timing) crossing(dl deadline, a time.Duration) bool {
	start := dl.earliest(t.drift) - t.now - deadlineMargin
	end := dl.at - t.now + deadlineMargin
	return a > start && a < end
}

// advanceFor returns the shortest advance, in steps of 100 ms, that takes
// the simulator past the first deadline and leaves none between the clocks.
func (t *timing) advanceFor() time.Duration {
	first := time.Duration(-1)
	for _, dl := range t.deadlines {
		if first < 0 || dl.at < first {
			first = dl.at
		}
	}
	a := first - t.now + deadlineMargin
	for moved := true; moved; {
		moved = false
		for _, dl := range t.deadlines {
			if t.crossing(dl, a) {
				a, moved = dl.at-t.now+deadlineMargin, true
			}
		}
	}
	return roundUp(a, 100*time.Millisecond)
}

// advance moves the virtual clock; the deadlines it passed have fired on
// both clocks.
func (t *timing) advance(a time.Duration) {
	t.now += a
	t.deadlines = slices.DeleteFunc(t.deadlines, func(dl deadline) bool { return dl.at <= t.now })
}

func roundUp(d, unit time.Duration) time.Duration {
	if d <= 0 {
		return unit
	}
	return (d + unit - 1) / unit * unit
}
