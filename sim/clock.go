package sim

import "time"

// Following a clock
//
// With Config.Clock set, the broker's one clock follows that function
// instead of Advance. The broker still never reads the time by itself: at
// the start of every call (the lock's Lock) it asks Clock and, if that is
// later than its virtual now, moves there exactly as Advance would, firing
// the timers due on the way at their own times. A broker nobody calls does
// not look at the clock, so the shell that supplies it must also wake the
// broker when its next timer falls due: NextTimer says when, Sync makes the
// call. amqptest does that with one goroutine of its own (FollowClock,
// which a Server runs for a broker with a Clock), so that sim stays free
// of goroutines.
//
// Determinism then depends on the clock: inside a testing/synctest bubble
// the time package's clock moves only when every goroutine is blocked, so the same test
// gives the same trace; outside one it is the wall clock.

// follow catches the virtual clock up with Config.Clock; it is the lock's
// before hook, so it runs under the lock. It reports whether a timer fired.
func (b *Broker) follow() bool {
	now := b.cfg.Clock()
	if limit := b.cfg.Start.Add(MaxClock); now.After(limit) {
		now = limit
	}
	if now.Before(b.now) {
		now = b.now // a clock that goes back leaves the broker's alone
	}
	if len(b.timers) == 0 || b.timers[0].due.After(now) {
		b.setNow(now)
		return false
	}
	// A timer due at the broker's own now fires too (a TTL of 0 arms one):
	// in a synctest bubble the clock stands still while goroutines run, and
	// a shell woken for that timer must not find it still pending.
	return b.advanceTo(now)
}

// NextTimer returns when the broker's earliest timer falls due (a
// consumer-timeout tick, a message TTL at a queue head, an x-expires), and
// false when none is scheduled. A shell that supplies Config.Clock calls
// Sync at that time.
func (b *Broker) NextTimer() (time.Time, bool) {
	b.mu.Lock()
	defer b.mu.unlockView()
	if len(b.timers) == 0 {
		return time.Time{}, false
	}
	return b.timers[0].due, true
}

// Sync brings a followed clock (Config.Clock) up to date, firing the
// timers that fell due; with the manual clock it does nothing.
func (b *Broker) Sync() {
	b.mu.Lock()
	defer b.mu.unlockView() // a catch-up that fired timers still wakes the waiters
}
