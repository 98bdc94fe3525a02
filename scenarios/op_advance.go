package scenarios

import (
	"time"
)

// Advance moves the clock: the simulator's virtual clock, or real time
// against a broker: "advance 5s".
type Advance struct{ D time.Duration }

func init() {
	register(&verb{name: "advance", usage: "advance DURATION", minPos: 1, maxPos: 1, what: "time passing",
		build: func(a *argSet) (Op, error) {
			d, err := time.ParseDuration(a.str(0))
			if err != nil || d < 0 {
				return nil, a.errAt(a.pos[0], "expected a duration such as 500ms or 31m, got %q", a.str(0))
			}
			return Advance{D: d}, nil
		}})
}

func (Advance) isOp() {}

// String returns the Advance step line.
func (o Advance) String() string { return line("advance", o.D.String()) }

func (o Advance) run(r *runner, _ *rchan) ([]string, reply, error) {
	r.d.advance(o.D)
	r.now += o.D
	return nil, reply{}, nil
}

func (d *simDriver) advance(dur time.Duration) { d.b.Advance(dur) }

// advance moves the simulator's virtual clock, or lets real time pass: a
// broker has no virtual clock.
func (d *amqpDriver) advance(dur time.Duration) {
	if d.sim != nil {
		d.sim.advance(dur)
		if d.sim.anyHung() {
			// The clients' heartbeats run on the bubble's clock: a hung
			// node's clients give up when their deadline passes.
			time.Sleep(dur)
		}
		return
	}
	time.Sleep(dur)
}
