package scenarios

import (
	"cmp"
	"slices"
	"time"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// A failure report writes the faults of its run as steps, so that it
// replays them, and so that a real broker takes those it can (see
// ConfirmReport). Some show in the trace as faults, and FromTrace writes
// them itself: a publish sim.Broker.NackPublishes nacked (a Fault
// nack-publishes 1 before it), a restart (EventRestart: a Fault restart),
// a cluster node's fault (EventNode). A test tells it the others with
// TraceOptions.Faults, as amqptest does.

// TraceFault is a fault injected into a traced run that the trace does
// not show as one: a close armed at a delivery or made at once, a
// consumer timed out on command, an alarm raised or cleared, a
// connection dropped.
type TraceFault struct {
	// Before is the index of the trace event the fault came before, its
	// effects after it; len(trace) when it came last.
	Before int
	// At is the fault's time on the trace's clock (sim.Event.At).
	At time.Duration
	// Op is the step: a Fault or an Alarm; nil writes only Comment. The
	// Name of a Fault that acts at once is filled in from Conn and
	// Channel.
	Op Op
	// Conn and Channel are the simulator's names of the connection (and
	// the channel number, for a channel's fault) a Fault acts on.
	Conn    string
	Channel uint16
	// Comment, if set, is written above the step.
	Comment string
}

// sortedFaults sorts faults by Before, then At, keeping their order
// otherwise.
func sortedFaults(fs []TraceFault) []TraceFault {
	out := slices.Clone(fs)
	slices.SortStableFunc(out, func(a, b TraceFault) int { return cmp.Or(a.Before-b.Before, cmp.Compare(a.At, b.At)) })
	return out
}

// faultsBefore writes the faults that came before trace event i.
func (w *traceWriter) faultsBefore(i int) {
	for len(w.faults) > 0 && w.faults[0].Before <= i {
		f := w.faults[0]
		w.faults = w.faults[1:]
		w.moveTo(f.At)
		if f.Comment != "" {
			w.pending = append(w.pending, f.Comment)
		}
		op := f.Op
		if fo, ok := op.(Fault); ok && fo.AtDelivery == 0 {
			switch fo.Kind {
			case FaultCloseConnection:
				fo.Name = w.conns[f.Conn]
			case FaultCloseChannel, FaultConsumerTimeout:
				fo.Name = w.chans[simChan{f.Conn, f.Channel}]
			}
			if fo.Name == "" && fo.Kind != FaultNackPublishes && fo.Kind != FaultRestart {
				w.pending = append(w.pending, "a fault hit a connection or channel the run had closed: "+fo.String())
				continue
			}
			op = fo.withDefaults()
		}
		if op != nil {
			w.add(op)
		}
	}
}

// nackInjected is the Reason of the EventPublishRejected of a publish
// sim.Broker.NackPublishes nacked (sim/basic.go).
const nackInjected = "nack injected"

// nackedPublishes returns the indexes of the publish calls that
// sim.Broker.NackPublishes nacked: the last publish on the channel before
// each of its EventPublishRejected.
func nackedPublishes(trace []sim.Event) map[int]bool {
	out := map[int]bool{}
	for i, e := range trace {
		if e.Kind != sim.EventPublishRejected || e.Reason != nackInjected {
			continue
		}
		for j := i - 1; j >= 0; j-- {
			p := trace[j]
			if p.Kind == sim.EventCall && p.Method == protocol.BasicPublish && p.Conn == e.Conn && p.Channel == e.Channel {
				out[j] = true
				break
			}
		}
	}
	return out
}

// blocked writes, where an alarm blocked a connection (trace event i),
// the publish that blocked it, which the trace shows where the broker read
// it, once the alarm cleared: a replay then blocks the connection there
// too, and holds its later steps until the clear.
func (w *traceWriter) blocked(i int) {
	e := w.trace[i]
	for j := i + 1; j < len(w.trace); j++ {
		p := w.trace[j]
		if p.Conn != e.Conn || p.Kind != sim.EventCall {
			continue
		}
		if p.Method != protocol.BasicPublish {
			return
		}
		ch := w.chans[simChan{p.Conn, p.Channel}]
		op := w.call(p, ch)
		if op == nil {
			return
		}
		w.moveTo(e.At)
		w.early[j] = true
		if w.nacked[j] {
			w.add(Fault{Kind: FaultNackPublishes, Count: 1})
		}
		w.pending = append(w.pending, "an alarm blocks the connection at this publish: the broker reads it, and what follows, once the alarm clears")
		w.add(op)
		w.heldSteps[len(w.steps)-1] = true
		w.published(p, ch)
		return
	}
}
