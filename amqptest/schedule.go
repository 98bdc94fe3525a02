package amqptest

import (
	"context"
	"errors"
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
	// CONNECTION_FORCED, as "rabbitmqctl close_connection" does, right
	// behind the trigger's delivery.
	FaultForceClose
	// FaultRestart restarts the broker (Restart) with the fault's
	// Downtime: transient messages and queues are lost, durable ones with
	// their persistent messages kept.
	FaultRestart
	// FaultCloseChannel closes the channel of the trigger's delivery with
	// 406 PRECONDITION_FAILED right behind it (CloseChannelAtDelivery).
	FaultCloseChannel
	// FaultCloseConnection closes the connection of the trigger's
	// delivery with 320 CONNECTION_FORCED right behind it.
	FaultCloseConnection
	// FaultConsumerTimeout closes the channel of the trigger's delivery
	// as RabbitMQ's consumer timeout does before 4.3, right behind it.
	FaultConsumerTimeout
	// FaultAlarm raises the fault's Alarm for For on the broker's clock
	// (sim.Broker.SetAlarmFor): publishers are blocked, consumers are not.
	FaultAlarm
	// FaultNackPublishes nacks the next Count publishes in confirm mode
	// (sim.Broker.NackPublishes).
	FaultNackPublishes
)

// allKinds are the kinds Schedules draws by default, the simplest first,
// which is where a failing schedule shrinks to.
var allKinds = []FaultKind{FaultCloseChannel, FaultCloseConnection, FaultForceClose, FaultDrop, FaultConsumerTimeout,
	FaultRestart, FaultAlarm, FaultNackPublishes}

// exact reports whether the kind lands right behind its trigger's
// delivery (sim.Broker.CloseAtDelivery); the others land once RunSchedule
// has seen the trigger.
func (k FaultKind) exact() bool {
	switch k {
	case FaultForceClose, FaultCloseChannel, FaultCloseConnection, FaultConsumerTimeout:
		return true
	}
	return false
}

// ofDelivery reports whether the kind acts on its trigger's delivery's
// channel or connection, so needs a trigger of 1 or more.
func (k FaultKind) ofDelivery() bool {
	return k == FaultCloseChannel || k == FaultCloseConnection || k == FaultConsumerTimeout
}

// String names the fault as a Schedule prints it.
func (k FaultKind) String() string {
	switch k {
	case FaultDrop:
		return "drop every connection"
	case FaultForceClose:
		return "force-close every connection"
	case FaultRestart:
		return "restart the broker"
	case FaultCloseChannel:
		return "close its channel"
	case FaultCloseConnection:
		return "close its connection"
	case FaultConsumerTimeout:
		return "time out its consumer"
	case FaultAlarm:
		return "raise an alarm"
	case FaultNackPublishes:
		return "nack publishes"
	}
	return fmt.Sprintf("FaultKind(%d)", uint8(k))
}

// Fault is one fault of a Schedule: Kind, injected once the broker has
// pushed AfterDeliveries deliveries in all (basic.deliver and
// basic.get-ok, redeliveries included, counted from the broker's start).
//
// The closes (FaultCloseChannel, FaultCloseConnection,
// FaultConsumerTimeout, FaultForceClose) land exactly: right behind the
// AfterDeliveries-th delivery, before any other delivery, and the first
// three act on that delivery's channel or connection, so they need
// AfterDeliveries of 1 or more. For the other kinds the trigger is a
// lower bound: the code under test runs on while RunSchedule wakes, so a
// few more deliveries may be pushed before the fault lands. A property
// that must hold under every schedule holds under that one too.
type Fault struct {
	AfterDeliveries int
	Kind            FaultKind
	// Downtime is how long dials are refused after a FaultRestart.
	Downtime time.Duration
	// Alarm and For are a FaultAlarm's alarm and how long it lasts.
	Alarm sim.Alarm
	For   time.Duration
	// Count is how many publishes a FaultNackPublishes nacks.
	Count int
}

// String reads as "after 3 deliveries: restart the broker (down 2s)".
func (f Fault) String() string {
	s := fmt.Sprintf("after %d deliveries: ", f.AfterDeliveries)
	switch f.Kind {
	case FaultRestart:
		s += f.Kind.String()
		if f.Downtime > 0 {
			s += fmt.Sprintf(" (down %v)", f.Downtime)
		}
	case FaultCloseChannel:
		s += fmt.Sprintf("close the channel of delivery %d (406)", f.AfterDeliveries)
	case FaultCloseConnection:
		s += fmt.Sprintf("close the connection of delivery %d (320)", f.AfterDeliveries)
	case FaultConsumerTimeout:
		s += fmt.Sprintf("time out the consumer of delivery %d (406)", f.AfterDeliveries)
	case FaultAlarm:
		s += fmt.Sprintf("%s alarm for %v", alarmName(f.Alarm), f.For)
	case FaultNackPublishes:
		s += fmt.Sprintf("nack the next %d publishes", f.Count)
	default:
		s += f.Kind.String()
	}
	return s
}

// alarmName is "memory", "disk" or "memory and disk".
func alarmName(a sim.Alarm) string {
	var names []string
	if a&sim.AlarmMemory != 0 {
		names = append(names, "memory")
	}
	if a&sim.AlarmDisk != 0 {
		names = append(names, "disk")
	}
	if len(names) == 0 {
		return "no"
	}
	return strings.Join(names, " and ")
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
// the given kinds (every kind if none are given), each triggered after at
// most maxDeliveries deliveries (at least one for the kinds that act on a
// delivery's channel or connection), sorted by trigger. A restart's
// downtime is up to 10 s, an alarm lasts 1 to 10 s, a nack fault nacks 1
// to 5 publishes. A failing schedule shrinks towards fewer, earlier
// faults of the first kind given (by default FaultCloseChannel, the
// smallest).
func Schedules(maxFaults, maxDeliveries int, kinds ...FaultKind) *rapid.Generator[Schedule] {
	if len(kinds) == 0 {
		kinds = allKinds
	}
	fault := rapid.Custom(func(t *rapid.T) Fault {
		kind := rapid.SampledFrom(kinds).Draw(t, "kind")
		least := 0
		if kind.ofDelivery() {
			least = min(1, maxDeliveries)
		}
		f := Fault{Kind: kind, AfterDeliveries: rapid.IntRange(least, max(least, maxDeliveries)).Draw(t, "after")}
		switch kind {
		case FaultRestart:
			f.Downtime = time.Duration(rapid.IntRange(0, 10).Draw(t, "downtime")) * time.Second
		case FaultAlarm:
			f.Alarm = rapid.SampledFrom([]sim.Alarm{sim.AlarmMemory, sim.AlarmDisk}).Draw(t, "alarm")
			f.For = time.Duration(rapid.IntRange(1, 10).Draw(t, "for")) * time.Second
		case FaultNackPublishes:
			f.Count = rapid.IntRange(1, 5).Draw(t, "count")
		}
		return f
	})
	return rapid.Custom(func(t *rapid.T) Schedule {
		s := Schedule(rapid.SliceOfN(fault, 0, maxFaults).Draw(t, "faults"))
		slices.SortStableFunc(s, func(a, b Fault) int { return a.AfterDeliveries - b.AfterDeliveries })
		return s
	})
}

// Inject injects one fault now, whatever its trigger. The kinds that act
// on a delivery's channel or connection cannot be injected without one:
// use CloseChannel or ForceConsumerTimeout.
func (s *Server) Inject(f Fault) error {
	switch f.Kind {
	case FaultDrop:
		for _, c := range s.broker.Connections() {
			// A connection that closed meanwhile has nothing to drop.
			_ = s.DropConnection(c.Name())
		}
	case FaultForceClose:
		s.CloseClientConnections(faultText)
	case FaultRestart:
		s.Restart(f.Downtime)
	case FaultAlarm:
		if f.Alarm == 0 {
			return fmt.Errorf("amqptest: %v: no alarm", f)
		}
		s.broker.SetAlarmFor(f.Alarm, f.For)
	case FaultNackPublishes:
		s.broker.NackPublishes(f.Count)
	case FaultCloseChannel, FaultCloseConnection, FaultConsumerTimeout:
		return fmt.Errorf("amqptest: %v: acts on a delivery; RunSchedule injects it", f)
	default:
		return fmt.Errorf("amqptest: unknown fault kind %d", f.Kind)
	}
	return nil
}

// arm arms an exact fault at its delivery; it reports false when the
// fault is to be injected now instead (FaultForceClose at delivery 0, or
// after its delivery has passed). A fault on a delivery's channel or
// connection whose delivery has passed lands right behind the next one.
func (s *Server) arm(f Fault) (bool, error) {
	if f.AfterDeliveries < 1 {
		if f.Kind.ofDelivery() {
			return false, fmt.Errorf("amqptest: %v: acts on a delivery, so needs a trigger of 1 or more", f)
		}
		return false, nil
	}
	df := sim.DeliveryFault{N: f.AfterDeliveries, FromStart: true, Err: sim.Forced(faultText)}
	switch f.Kind {
	case FaultForceClose:
		df.Action = sim.FaultCloseEveryConnection
	case FaultCloseConnection:
		df.Action = sim.FaultCloseConnection
	case FaultCloseChannel:
		df.Action = sim.FaultCloseChannel
		df.Err = protocol.Errorf(protocol.PreconditionFailed, protocol.Method{}, faultText)
	case FaultConsumerTimeout:
		df.Action = sim.FaultConsumerTimeout
	}
	err := s.broker.CloseAtDelivery(df)
	if errors.Is(err, sim.ErrDeliveryPassed) {
		if !f.Kind.ofDelivery() {
			return false, nil
		}
		df.N, df.FromStart = 1, false
		err = s.broker.CloseAtDelivery(df)
	}
	return err == nil, err
}

// RunSchedule is StartSchedule's wait, at once: it injects each fault of
// sched once its trigger is reached and returns when the last one is
// injected.
func (s *Server) RunSchedule(sched Schedule) error {
	wait, err := s.StartSchedule(sched)
	if err != nil {
		return err
	}
	return wait()
}

// StartSchedule arms the closes of sched on the broker at once (they land
// exactly; see Fault), and returns wait, which injects the other faults
// as it sees the broker's delivery count reach their triggers, waiting on
// the broker's own changes (never polling), and returns when the last
// fault of sched is injected. Start the schedule before the code under
// test consumes, and call wait from the test's goroutine while that code
// runs in its own: a close whose delivery had passed when it was armed
// lands right behind the next delivery instead. In a testing/synctest
// bubble the wait is exact and its timeout costs no real time.
//
// wait returns an error naming the fault whose trigger was not reached
// within the wait timeout (WithWaitTimeout; after a restart, counted from
// the end of its downtime): the code under test stopped consuming.
func (s *Server) StartSchedule(sched Schedule) (wait func() error, err error) {
	timeout := s.waitTimeout()
	var later Schedule // faults wait injects itself, and exact ones already due
	last := 0          // the latest trigger: once reached, every armed fault has fired
	for _, f := range sched {
		last = max(last, f.AfterDeliveries)
		if !f.Kind.exact() {
			later = append(later, f)
			continue
		}
		armed, err := s.arm(f)
		if err != nil {
			return nil, err
		}
		if !armed {
			later = append(later, f)
		}
	}
	return func() error { return s.runLater(later, last, sched, timeout) }, nil
}

// runLater is StartSchedule's wait.
func (s *Server) runLater(later Schedule, last int, sched Schedule, timeout time.Duration) error {
	var back time.Time // when the last restart's downtime ends: waits start from there
	wait := func(n int, what fmt.Stringer) error {
		d := timeout + max(0, back.Sub(s.broker.Now()))
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		err := s.broker.WaitFor(ctx, func(b *sim.Broker) bool { return b.Deliveries() >= uint64(n) })
		if err != nil {
			return fmt.Errorf("amqptest: %v: waited %v, only %d deliveries", what, d, s.broker.Deliveries())
		}
		return nil
	}
	for _, f := range later {
		if err := wait(f.AfterDeliveries, f); err != nil {
			return err
		}
		if err := s.Inject(f); err != nil {
			return err
		}
		if up := s.broker.Now().Add(f.Downtime); f.Kind == FaultRestart && up.After(back) {
			back = up // a later restart does not shorten an earlier one's refusal
		}
	}
	return wait(last, sched)
}
