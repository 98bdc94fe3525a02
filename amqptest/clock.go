package amqptest

import (
	"context"

	"github.com/amqpsim/amqpsim/sim"
)

// Clock chooses what moves the broker's virtual clock.
type Clock uint8

const (
	// ManualClock, the default: the clock moves only when the test calls
	// Broker().Advance.
	ManualClock Clock = iota
	// WallClock: the broker's clock follows time.Now, and Advance is
	// refused. Inside a testing/synctest bubble time.Now is the bubble's
	// fake clock, so a time.Sleep(31*time.Minute) in the code under test
	// fires the broker's consumer timeout, TTLs and x-expires on the way,
	// each at its own time, in no real time. Outside a bubble it is the
	// real time.
	WallClock
)

// WithClock chooses the broker's clock; see Clock. It is ignored with
// WithBroker: a broker made with its own sim.Config.Clock must be woken at
// its timers (NextTimer, Sync) by the test.
func WithClock(c Clock) Option { return func(cfg *config) { cfg.clock = c } }

// FollowClock wakes b, a broker whose clock follows Config.Clock (the
// time package's, in WithClock(WallClock) and `amqpsim serve --clock
// wall`), whenever its next timer falls due, until ctx ends: sim has no
// goroutines, and a broker nobody calls does not look at the clock. It
// waits, on the broker's own changes, for the next timer to change or
// fall due, then makes the broker catch up (Sync). Run it in its own
// goroutine.
func FollowClock(ctx context.Context, b *sim.Broker) {
	for ctx.Err() == nil {
		due, ok := b.NextTimer()
		wctx, cancel := ctx, context.CancelFunc(func() {})
		if ok {
			wctx, cancel = context.WithDeadline(ctx, due)
		}
		_ = b.WaitFor(wctx, func(b *sim.Broker) bool {
			d, o := b.NextTimer()
			return o != ok || !d.Equal(due)
		})
		cancel()
		b.Sync()
	}
}
