package amqptest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"pgregory.net/rapid"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// FaultKind names a fault a Schedule injects.
type FaultKind uint8

const (
	// FaultDrop drops every client connection without a close frame
	// (DropConnection): a network failure or a killed broker.
	FaultDrop FaultKind = iota + 1
	// FaultForceClose closes every client connection with 320
	// CONNECTION_FORCED (CloseClientConnections), as "rabbitmqctl
	// close_connection" does.
	FaultForceClose
	// FaultRestart restarts the broker (Restart) with the fault's
	// Downtime: transient messages and queues are lost, durable ones with
	// their persistent messages kept.
	FaultRestart
)

// String names the fault as a Schedule prints it.
func (k FaultKind) String() string {
	switch k {
	case FaultDrop:
		return "drop every connection"
	case FaultForceClose:
		return "force-close every connection"
	case FaultRestart:
		return "restart the broker"
	}
	return fmt.Sprintf("FaultKind(%d)", uint8(k))
}

// Fault is one fault of a Schedule: Kind, injected once the broker has
// pushed AfterDeliveries deliveries in all (basic.deliver and
// basic.get-ok, redeliveries included, counted from the server's start).
// The trigger is a lower bound: the code under test runs on while
// RunSchedule wakes, so a few more deliveries may be pushed before the
// fault lands. A property that must hold under every schedule holds under
// that one too.
type Fault struct {
	AfterDeliveries int
	Kind            FaultKind
	// Downtime is how long dials are refused after a FaultRestart.
	Downtime time.Duration
}

// String reads as "after 3 deliveries: restart the broker (down 2s)".
func (f Fault) String() string {
	s := fmt.Sprintf("after %d deliveries: %v", f.AfterDeliveries, f.Kind)
	if f.Kind == FaultRestart && f.Downtime > 0 {
		s += fmt.Sprintf(" (down %v)", f.Downtime)
	}
	return s
}

// Schedule is a list of faults in the order of their triggers.
type Schedule []Fault

// String prints one fault per line, or "no faults".
func (s Schedule) String() string {
	if len(s) == 0 {
		return "no faults"
	}
	lines := make([]string, len(s))
	for i, f := range s {
		lines[i] = f.String()
	}
	return strings.Join(lines, "\n")
}

// Schedules generates fault schedules for rapid: up to maxFaults faults of
// the given kinds (all three if none are given), each triggered after at
// most maxDeliveries deliveries, sorted by trigger; a restart's downtime
// is up to 10 s. A failing schedule shrinks towards fewer, earlier faults
// of the first kind.
func Schedules(maxFaults, maxDeliveries int, kinds ...FaultKind) *rapid.Generator[Schedule] {
	if len(kinds) == 0 {
		kinds = []FaultKind{FaultDrop, FaultForceClose, FaultRestart}
	}
	fault := rapid.Custom(func(t *rapid.T) Fault {
		f := Fault{
			AfterDeliveries: rapid.IntRange(0, maxDeliveries).Draw(t, "after"),
			Kind:            rapid.SampledFrom(kinds).Draw(t, "kind"),
		}
		if f.Kind == FaultRestart {
			f.Downtime = time.Duration(rapid.IntRange(0, 10).Draw(t, "downtime")) * time.Second
		}
		return f
	})
	return rapid.Custom(func(t *rapid.T) Schedule {
		s := Schedule(rapid.SliceOfN(fault, 0, maxFaults).Draw(t, "faults"))
		slices.SortStableFunc(s, func(a, b Fault) int { return a.AfterDeliveries - b.AfterDeliveries })
		return s
	})
}

// Inject injects one fault now, whatever its trigger.
func (s *Server) Inject(f Fault) error {
	switch f.Kind {
	case FaultDrop:
		for _, c := range s.broker.Connections() {
			// A connection that closed meanwhile has nothing to drop.
			_ = s.DropConnection(c.Name())
		}
	case FaultForceClose:
		s.CloseClientConnections("fault injected by amqptest")
	case FaultRestart:
		s.Restart(f.Downtime)
	default:
		return fmt.Errorf("amqptest: unknown fault kind %d", f.Kind)
	}
	return nil
}

// RunSchedule injects each fault of sched once its trigger is reached,
// waiting on the broker's own changes (never polling), and returns when
// the last one is injected. It returns an error naming the fault whose
// trigger was not reached within the wait timeout (WithWaitTimeout; after
// a restart, counted from the end of its downtime): the code under test
// stopped consuming. Run it from the test's goroutine
// while the code under test runs in its own; in a testing/synctest bubble
// the wait is exact and the timeout costs no real time.
// The triggers are read from the broker's trace: with sim.Config.NoTrace
// only faults after 0 deliveries fire.
func (s *Server) RunSchedule(sched Schedule) error {
	timeout := s.cfg.waitTimeout
	if timeout <= 0 {
		timeout = DefaultWaitTimeout
	}
	var counted, seen int // deliveries counted in the first seen events
	reached := func(n int) func(*sim.Broker) bool {
		return func(b *sim.Broker) bool {
			trace := b.Trace()
			for _, e := range trace[min(seen, len(trace)):] {
				if e.Kind == sim.EventPush && (e.Method == protocol.BasicDeliver || e.Method == protocol.BasicGetOk) {
					counted++
				}
			}
			seen = len(trace)
			return counted >= n
		}
	}
	var back time.Time // when the last restart's downtime ends: waits start from there
	for _, f := range sched {
		wait := timeout + max(0, back.Sub(s.broker.Now()))
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		err := s.broker.WaitFor(ctx, reached(f.AfterDeliveries))
		cancel()
		if err != nil {
			return fmt.Errorf("amqptest: %v: waited %v, only %d deliveries", f, wait, counted)
		}
		if err := s.Inject(f); err != nil {
			return err
		}
		if up := s.broker.Now().Add(f.Downtime); f.Kind == FaultRestart && up.After(back) {
			back = up // a later restart does not shorten an earlier one's refusal
		}
	}
	return nil
}
