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
	// 406 PRECONDITION_FAILED - fault injected by amqptest right behind
	// it; its unacked deliveries are requeued.
	FaultCloseChannel
	// FaultCloseConnection closes the connection of the trigger's
	// delivery with 320 CONNECTION_FORCED - fault injected by amqptest
	// right behind it, as "rabbitmqctl close_connection" would had it run
	// at that instant.
	FaultCloseConnection
	// FaultConsumerTimeout closes the channel of the trigger's delivery
	// as RabbitMQ's consumer timeout does before 4.3 (406
	// PRECONDITION_FAILED - delivery acknowledgement on channel N timed
	// out...), right behind it; a 4.3 quorum queue cancels the consumer
	// instead.
	FaultConsumerTimeout
	// FaultAlarm raises the fault's Alarm for For on the broker's clock
	// (sim.Broker.SetAlarmFor): publishers are blocked, consumers are not.
	FaultAlarm
	// FaultNackPublishes nacks the next Count publishes in confirm mode
	// (sim.Broker.NackPublishes).
	FaultNackPublishes
	// FaultStopNode stops the fault's Node of a cluster gracefully
	// (sim.Broker.StopNode) for its Downtime, then every node that is
	// down starts again (sim.Broker.RecoverAfter).
	FaultStopNode
	// FaultKillNode crashes the fault's Node (sim.Broker.KillNode) for
	// its Downtime.
	FaultKillNode
	// FaultPartition cuts the fault's Node off from the other nodes
	// (sim.Broker.Partition) for its Downtime, then heals.
	FaultPartition
	// FaultPauseNode hangs the fault's Node (sim.Broker.PauseNode) for
	// its Downtime: its connections go silent until their clients'
	// heartbeats give up, then it runs again.
	FaultPauseNode
)

// ClusterKinds are the faults of a cluster's nodes, which Schedules draws
// when given them (the default kinds are a single broker's):
//
//	amqptest.Schedules(3, 20, amqptest.ClusterKinds...)
//
// They need a broker of several nodes (sim.Config.Nodes).
var ClusterKinds = []FaultKind{FaultStopNode, FaultKillNode, FaultPartition, FaultPauseNode}

// allKinds are the kinds Schedules draws by default, the simplest first,
// which is where a failing schedule shrinks to.
var allKinds = []FaultKind{FaultCloseChannel, FaultCloseConnection, FaultForceClose, FaultDrop, FaultConsumerTimeout,
	FaultRestart, FaultAlarm, FaultNackPublishes}

// exact reports whether the kind lands right behind its trigger's
// delivery (sim.Broker.CloseAtDelivery); the others land once
// StartSchedule's wait has seen the trigger.
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
	case FaultStopNode:
		return "stop a node"
	case FaultKillNode:
		return "kill a node"
	case FaultPartition:
		return "cut a node off"
	case FaultPauseNode:
		return "hang a node"
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
// lower bound: the code under test runs on while StartSchedule's wait
// wakes, so a few more deliveries may be pushed before the fault lands. A property
// that must hold under every schedule holds under that one too. Any kind
// after 0 deliveries lands when the schedule starts, before the code
// under test runs.
type Fault struct {
	AfterDeliveries int
	Kind            FaultKind
	// Downtime is how long dials are refused after a FaultRestart, and
	// how long a node fault lasts.
	Downtime time.Duration
	// Node is the node of a node fault (FaultStopNode, FaultKillNode,
	// FaultPartition, FaultPauseNode), 1-based; on a broker of N nodes, node
	// (Node-1)%N+1.
	Node int
	// Alarm and For are a FaultAlarm's alarm and how long it lasts.
	Alarm sim.Alarm
	For   time.Duration
	// Count is how many publishes a FaultNackPublishes nacks.
	Count int
}

// String reads as "after 3 deliveries: restart the broker, down for 2s",
// "at the start: ...", "after 1 delivery: ...".
func (f Fault) String() string {
	var s string
	switch f.AfterDeliveries {
	case 0:
		s = "at the start: "
	case 1:
		s = "after 1 delivery: "
	default:
		s = fmt.Sprintf("after %d deliveries: ", f.AfterDeliveries)
	}
	switch f.Kind {
	case FaultRestart:
		s += f.Kind.String()
		if f.Downtime > 0 {
			s += fmt.Sprintf(", down for %v", f.Downtime)
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
	case FaultStopNode, FaultKillNode:
		verb := strings.Fields(f.Kind.String())[0]
		if f.Downtime == 0 {
			s += fmt.Sprintf("%s node %d and start it again at once", verb, f.Node)
		} else {
			s += fmt.Sprintf("%s node %d, start it again %v later", verb, f.Node, f.Downtime)
		}
	case FaultPartition:
		if f.Downtime == 0 {
			s += fmt.Sprintf("cut node %d off and heal at once", f.Node)
		} else {
			s += fmt.Sprintf("cut node %d off, heal %v later", f.Node, f.Downtime)
		}
	case FaultPauseNode:
		if f.Downtime == 0 {
			s += fmt.Sprintf("hang node %d and resume it at once", f.Node)
		} else {
			s += fmt.Sprintf("hang node %d, resume it %v later", f.Node, f.Downtime)
		}
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

// Redeliveries is how many more times the schedule's faults may make a
// correct consumer get one message: once per fault that closes, drops,
// restarts, times out, blocks or cuts off (each requeues what a consumer
// holds, once), and once per publish a FaultNackPublishes nacks (a
// consumer that publishes in confirm mode and requeues what it was
// handling when its publish is nacked gets it again for each). It is the
// allowance CheckUnderFaults adds to AtMostDeliveries.
func (s Schedule) Redeliveries() int {
	n := 0
	for _, f := range s {
		if f.Kind == FaultNackPublishes {
			n += max(f.Count, 1)
		} else {
			n++
		}
	}
	return n
}

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

// GoString prints the schedule as a Go literal, as rapid logs a drawn
// value, so that a failing schedule pastes into a test that pins it:
// Faults(rapid.Just(amqptest.Schedule{{AfterDeliveries: 1, Kind:
// amqptest.FaultCloseChannel}})).
func (s Schedule) GoString() string {
	faults := make([]string, len(s))
	for i, f := range s {
		faults[i] = f.literal()
	}
	return "amqptest.Schedule{" + strings.Join(faults, ", ") + "}"
}

// GoString prints the fault as a Go literal.
func (f Fault) GoString() string { return "amqptest.Fault" + f.literal() }

// literal is the fault's composite literal without its type, its zero
// fields left out.
func (f Fault) literal() string {
	fields := []string{fmt.Sprintf("AfterDeliveries: %d", f.AfterDeliveries), "Kind: " + f.Kind.GoString()}
	if f.Downtime != 0 {
		fields = append(fields, "Downtime: "+durationLiteral(f.Downtime))
	}
	if f.Alarm != 0 {
		var alarms []string
		if f.Alarm&sim.AlarmDisk != 0 {
			alarms = append(alarms, "sim.AlarmDisk")
		}
		if f.Alarm&sim.AlarmMemory != 0 {
			alarms = append(alarms, "sim.AlarmMemory")
		}
		if rest := f.Alarm &^ (sim.AlarmDisk | sim.AlarmMemory); rest != 0 || len(alarms) == 0 {
			alarms = append(alarms, fmt.Sprintf("sim.Alarm(%d)", uint8(rest)))
		}
		fields = append(fields, "Alarm: "+strings.Join(alarms, " | "))
	}
	if f.For != 0 {
		fields = append(fields, "For: "+durationLiteral(f.For))
	}
	if f.Count != 0 {
		fields = append(fields, fmt.Sprintf("Count: %d", f.Count))
	}
	if f.Node != 0 {
		fields = append(fields, fmt.Sprintf("Node: %d", f.Node))
	}
	return "{" + strings.Join(fields, ", ") + "}"
}

// durationLiteral writes d as Go: 4 * time.Second.
func durationLiteral(d time.Duration) string {
	for _, u := range []struct {
		d    time.Duration
		name string
	}{{time.Hour, "time.Hour"}, {time.Minute, "time.Minute"}, {time.Second, "time.Second"}, {time.Millisecond, "time.Millisecond"}} {
		if d%u.d == 0 {
			if d == u.d {
				return u.name
			}
			return fmt.Sprintf("%d * %s", d/u.d, u.name)
		}
	}
	return fmt.Sprintf("time.Duration(%d)", int64(d))
}

// GoString names the kind's constant.
func (k FaultKind) GoString() string {
	names := map[FaultKind]string{FaultDrop: "FaultDrop", FaultForceClose: "FaultForceClose", FaultRestart: "FaultRestart",
		FaultCloseChannel: "FaultCloseChannel", FaultCloseConnection: "FaultCloseConnection",
		FaultConsumerTimeout: "FaultConsumerTimeout", FaultAlarm: "FaultAlarm", FaultNackPublishes: "FaultNackPublishes",
		FaultStopNode: "FaultStopNode", FaultKillNode: "FaultKillNode", FaultPartition: "FaultPartition",
		FaultPauseNode: "FaultPauseNode"}
	if n, ok := names[k]; ok {
		return "amqptest." + n
	}
	return fmt.Sprintf("amqptest.FaultKind(%d)", uint8(k))
}

// Schedules generates fault schedules for rapid: up to maxFaults faults of
// the given kinds (every kind if none are given), each triggered after at
// most maxDeliveries deliveries (at least one for the kinds that act on a
// delivery's channel or connection), sorted by trigger. A restart's
// downtime is up to 10 s, an alarm lasts 1 to 10 s, a nack fault nacks 1
// to 5 publishes; a node fault (ClusterKinds) hits node 1 to 3 for up to
// 10 s. A failing schedule shrinks towards fewer, earlier
// faults of the first kind given (by default FaultCloseChannel, the
// smallest).
//
// Triggers are not clamped to the run: StartSchedule's wait fails, after
// the wait timeout, when a trigger lies beyond the deliveries the run
// makes, since it cannot tell a run that ended from one that stopped
// consuming. So maxDeliveries must be at most the fewest deliveries a run
// makes under any schedule drawn: the messages a consumer is sure to be
// delivered once each, minus those a fault may lose (a FaultRestart drops
// transient messages and queues; a FaultNackPublishes drops the publishes
// it nacks).
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
		case FaultStopNode, FaultKillNode, FaultPartition, FaultPauseNode:
			f.Node = rapid.IntRange(1, 3).Draw(t, "node")
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

// inject injects one fault now, whatever its trigger (each is a Server or
// sim.Broker method); the kinds that act on a delivery's channel or
// connection are armed at their delivery instead.
func (s *Server) inject(f Fault) error {
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
		s.setAlarmFor(f.Alarm, f.For)
	case FaultNackPublishes:
		s.broker.NackPublishes(f.Count)
	case FaultStopNode, FaultKillNode, FaultPartition, FaultPauseNode:
		return s.injectNodeFault(f)
	case FaultCloseChannel, FaultCloseConnection, FaultConsumerTimeout:
		return fmt.Errorf("amqptest: %v: acts on a delivery, so is armed at it", f)
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
	if errors.Is(err, sim.ErrDeliveryPassed) && !f.Kind.ofDelivery() {
		return false, nil
	}
	for errors.Is(err, sim.ErrDeliveryPassed) {
		// The next delivery, counted from the start too, so that a
		// report arms it at the same delivery.
		df.N = int(s.broker.Deliveries()) + 1
		err = s.broker.CloseAtDelivery(df)
	}
	if err == nil {
		s.markArmed(f.Kind, df.N)
	}
	return err == nil, err
}

// StartSchedule arms the closes of sched on the broker at once (they land
// exactly; see Fault), injects at once the faults whose trigger is
// already reached (after 0 deliveries), and returns wait, which injects
// the other faults as it sees the broker's delivery count reach their
// triggers, waiting on the broker's own changes (never polling), and
// returns when the last fault of sched is injected. Start the schedule
// before the code under test consumes, and call wait from the test's
// goroutine while that code runs in its own: a close whose delivery had
// passed when it was armed lands right behind the next delivery instead.
// In a testing/synctest bubble the wait is exact and its timeout costs no
// real time.
//
// It is the one way this package injects a fault at a point of the
// delivery stream; one fault is a Schedule of one:
//
//	srv.StartSchedule(amqptest.Schedule{{AfterDeliveries: 2, Kind: amqptest.FaultCloseChannel}})
//
// closes the channel that receives the broker's second delivery right
// behind it. A schedule of closes only needs no wait: they are armed.
//
// wait returns an error naming the fault whose trigger was not reached
// within the wait timeout (WithWaitTimeout; after a restart, counted from
// the end of its downtime): the code under test stopped consuming.
func (s *Server) StartSchedule(sched Schedule) (wait func() error, err error) {
	timeout := s.waitTimeout()
	later, back, err := s.armSchedule(sched)
	if err != nil {
		return nil, err
	}
	last := 0 // the latest trigger: once reached, every armed fault has fired
	for _, f := range sched {
		last = max(last, f.AfterDeliveries)
	}
	return func() error { return s.runLater(later, back, last, sched, timeout) }, nil
}

// armSchedule arms the closes of sched, injects at once the faults whose
// trigger the broker has already reached (a trigger of 0, before the code
// under test runs), and returns the faults left to inject once their
// triggers are reached: those the broker cannot arm, and exact ones
// already due. Injecting the due ones here, not from the wait, is what
// makes them land at the same point every time: from the wait, a fault
// after 0 deliveries raced the code under test's first dial (under load
// it sometimes closed the consumer's connection, and CheckUnderFaults
// then blamed the consumer for an outcome that depended on goroutine
// order). back is when the downtime of a restart injected here ends.
func (s *Server) armSchedule(sched Schedule) (later Schedule, back time.Time, err error) {
	for _, f := range sched {
		if f.Kind.exact() {
			armed, err := s.arm(f)
			if err != nil {
				return nil, back, err
			}
			if armed {
				continue
			}
		}
		// In trigger order: once one fault waits, those after it wait too.
		if len(later) > 0 || uint64(f.AfterDeliveries) > s.broker.Deliveries() {
			later = append(later, f)
			continue
		}
		if err := s.injectAt(f, &back); err != nil {
			return nil, back, err
		}
	}
	return later, back, nil
}

// injectAt injects f now, moving back to the end of its downtime if it is
// a restart whose downtime ends later.
func (s *Server) injectAt(f Fault, back *time.Time) error {
	if err := s.inject(f); err != nil {
		return err
	}
	if up := s.broker.Now().Add(f.Downtime); f.Kind == FaultRestart && up.After(*back) {
		*back = up // a later restart does not shorten an earlier one's refusal
	}
	return nil
}

// runLater is StartSchedule's wait; back is when the downtime of the
// restarts injected so far ends: waits start from there.
func (s *Server) runLater(later Schedule, back time.Time, last int, sched Schedule, timeout time.Duration) error {
	wait := func(n int, what fmt.Stringer) error {
		d := timeout + max(0, back.Sub(s.broker.Now()))
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		err := s.broker.WaitFor(ctx, func(b *sim.Broker) bool { return b.Deliveries() >= uint64(n) })
		if err != nil {
			return fmt.Errorf("amqptest: %v: waited %v, only %d deliveries: the code under test stopped consuming, "+
				"or the trigger lies beyond the deliveries the run makes (Schedules' maxDeliveries must be at most those)",
				what, d, s.broker.Deliveries())
		}
		return nil
	}
	for _, f := range later {
		if err := wait(f.AfterDeliveries, f); err != nil {
			return err
		}
		if err := s.injectAt(f, &back); err != nil {
			return err
		}
	}
	return wait(last, sched)
}
