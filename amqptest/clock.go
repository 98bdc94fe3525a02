package amqptest

import (
	"context"

	"github.com/amqpsim/amqpsim/sim"
)

// FollowClock wakes b, a broker whose clock follows sim.Config.Clock (the
// time package's, with WithConfig(sim.Config{Clock: time.Now}) and
// `amqpsim serve --clock wall`), whenever its next timer falls due, until
// ctx ends: sim has no goroutines, and a broker nobody calls does not look
// at the clock. It waits, on the broker's own changes, for the next timer
// to change or fall due, then makes the broker catch up (Sync). Run it in
// its own goroutine; a Server runs it for the broker it serves.
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
