package fuzz

import (
	"testing"
	"time"

	"pgregory.net/rapid"
)

// The property the generator's timing keeps: whatever real time each step
// takes, up to its bound, every timer fires during the same step on the
// broker (real time) as on the simulator (virtual time). The test plays
// random steps as gen.add does (timers started, steps of both kinds,
// random advances taken only when they straddle nothing, forced advances),
// with a random real cost for each step, and compares the steps in which
// each timer fires on the two clocks.
func TestTimersFireInTheSameStepOnBothClocks(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var tm timing
		type timer struct {
			virtualAt, realAt time.Duration // when it fires on each clock
			simStep, realStep int           // the step during which it fired, -1 not yet
		}
		var timers []*timer
		var real time.Duration // the real clock: virtual plus the steps' real costs
		step := 0
		// run plays one step: an advance of a, then a real cost.
		run := func(a, bound time.Duration) {
			cost := rapid.Int64Range(0, int64(bound)).Draw(t, "cost")
			vFrom, rFrom := tm.now, real
			tm.advance(a)
			tm.drift += bound
			real += a + time.Duration(cost)
			for _, tr := range timers {
				if tr.simStep < 0 && tr.virtualAt > vFrom && tr.virtualAt <= tm.now {
					tr.simStep = step
				}
				if tr.realStep < 0 && tr.realAt > rFrom && tr.realAt <= real {
					tr.realStep = step
				}
			}
			step++
		}
		// add is gen.add: the advances a step of bound needs, then it.
		add := func(a, bound time.Duration) {
			for tm.needsAdvance(bound) {
				run(tm.advanceFor(), watchedStepDrift)
			}
			run(a, bound)
		}
		for range rapid.IntRange(1, 40).Draw(t, "steps") {
			bound := watchedStepDrift
			if rapid.Bool().Draw(t, "silent") {
				bound = silentStepDrift
			}
			switch rapid.IntRange(0, 3).Draw(t, "kind") {
			case 0: // a step that starts a timer
				d := time.Duration(rapid.IntRange(1, 12).Draw(t, "timer")) * time.Second
				// The timer starts during the step, on the broker some time
				// after the step began: at once here, the earliest.
				for tm.needsAdvance(bound) {
					run(tm.advanceFor(), watchedStepDrift)
				}
				tm.start(d)
				timers = append(timers, &timer{virtualAt: tm.now + d, realAt: real + d, simStep: -1, realStep: -1})
				run(0, bound)
			case 1: // a small random advance, unless it straddles a timer
				a := time.Duration(rapid.IntRange(1, 20).Draw(t, "advance")) * 100 * time.Millisecond
				if !tm.straddles(a) {
					add(a, watchedStepDrift)
				}
			default:
				add(0, bound)
			}
		}
		for i, tr := range timers {
			if tr.simStep != tr.realStep {
				t.Fatalf("timer %d fired in step %d on the simulator and in step %d on the broker", i, tr.simStep, tr.realStep)
			}
		}
	})
}

func TestAdvanceForStraddlesNothing(t *testing.T) {
	tm := timing{now: 10 * time.Second, drift: 3 * time.Second}
	tm.start(2 * time.Second) // fires at 12 s, on the broker from 12 s - 0
	tm.drift += 2 * time.Second
	tm.start(3 * time.Second) // fires at 13 s, on the broker from 13 s - 0 (drift since: 0)
	tm.drift += time.Second
	a := tm.advanceFor()
	if tm.straddles(a) {
		t.Fatalf("advance %v straddles a deadline: %+v", a, tm)
	}
	// The first deadline may fire on the broker from 12 - 1 = 11 s, the
	// second from 13 - 1 = 12 s: one advance must take both.
	if a < 3500*time.Millisecond {
		t.Fatalf("advance %v leaves the second deadline between the clocks", a)
	}
}
