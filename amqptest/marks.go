package amqptest

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/amqpsim/amqpsim/scenarios"
	"github.com/amqpsim/amqpsim/sim"
)

// A failure report writes the faults of its run as steps where they
// happened (scenarios.TraceFault), so that the report replays them and a
// real broker takes those it can (amqpsim confirm). The trace shows some
// faults as such (a restart, a node's fault, a nacked publish); the
// server marks the others as it injects or arms them.

// mark notes a fault at the end of the trace as it is now.
func (s *Server) mark(f scenarios.TraceFault) {
	f.Before = len(s.broker.Trace())
	f.At = s.broker.Now().Sub(s.broker.Config().Start)
	s.faultMu.Lock()
	s.marks = append(s.marks, f)
	s.faultMu.Unlock()
}

// markClose notes a close of connection conn (channel 0) or of one of its
// channels made at once, with its reply code and text.
func (s *Server) markClose(conn string, channel uint16, code int, text string) {
	f := scenarios.Fault{Kind: scenarios.FaultCloseConnection, Code: code, Text: text}
	if channel != 0 {
		f.Kind = scenarios.FaultCloseChannel
	}
	s.mark(scenarios.TraceFault{Op: f, Conn: conn, Channel: channel})
}

// armedKinds are the schedule's kinds that the broker arms at a
// delivery, as a report's fault step writes them.
var armedKinds = map[FaultKind]scenarios.FaultKind{FaultCloseChannel: scenarios.FaultCloseChannel,
	FaultCloseConnection: scenarios.FaultCloseConnection, FaultForceClose: scenarios.FaultCloseEveryConnection,
	FaultConsumerTimeout: scenarios.FaultConsumerTimeout}

// markArmed notes a fault armed to land right behind the broker's nth
// delivery.
func (s *Server) markArmed(k FaultKind, n int) {
	s.mark(scenarios.TraceFault{Op: scenarios.Fault{Kind: armedKinds[k], AtDelivery: n}})
}

// setAlarmFor raises alarm a for d (sim.Broker.SetAlarmFor) and notes its
// raise and its clear for a report. A raise replaces the pending clear of
// the same alarm, as SetAlarmFor does.
func (s *Server) setAlarmFor(a sim.Alarm, d time.Duration) {
	from := len(s.broker.Trace())
	now := s.broker.Now().Sub(s.broker.Config().Start)
	s.broker.SetAlarmFor(a, d)
	s.faultMu.Lock()
	defer s.faultMu.Unlock()
	for _, one := range []struct {
		a    sim.Alarm
		name string
	}{{sim.AlarmMemory, "memory"}, {sim.AlarmDisk, "disk"}} {
		if a&one.a == 0 {
			continue
		}
		clear := scenarios.Alarm{Resource: one.name, Clear: true}
		s.alarms = slices.DeleteFunc(s.alarms, func(m alarmMark) bool { return m.op == clear && m.at > now })
		s.alarms = append(s.alarms, alarmMark{op: scenarios.Alarm{Resource: one.name}, from: from, at: now},
			alarmMark{op: clear, at: now + d})
	}
}

// alarmMark is an alarm's raise, at trace index from and time at, or its
// clear, due at at.
type alarmMark struct {
	op   scenarios.Alarm
	from int
	at   time.Duration
}

// placeAlarms places the alarms' raises and clears in trace. A clear, by
// the clock, goes before the first connection it unblocked, or before the
// first event at or after its time (a publish at its time that came
// before it would have been blocked). A raise goes just before the first
// connection it blocked, or before the next clear if it blocked none: a
// publish races an alarm in the wire server (it asks whether to block,
// then publishes), so the trace may show one the alarm did not block
// after the raise, and a raise while another alarm blocks the
// connections must come before that one clears.
func placeAlarms(alarms []alarmMark, trace []sim.Event) []scenarios.TraceFault {
	out := make([]scenarios.TraceFault, len(alarms))
	for i, m := range alarms {
		if m.op.Clear {
			out[i] = scenarios.TraceFault{Before: clearBefore(m.at, trace), At: m.at, Op: m.op}
		}
	}
	for i, m := range alarms {
		if m.op.Clear {
			continue
		}
		limit := len(trace)
		for j, c := range alarms {
			if c.op.Clear && out[j].Before >= m.from {
				limit = min(limit, out[j].Before)
			}
		}
		out[i] = scenarios.TraceFault{Before: limit, At: m.at, Op: m.op}
		for k := m.from; k < limit; k++ {
			// A block whose reason lacks this alarm came before the
			// raise, though after from was read: another alarm raised at
			// the same moment caused it.
			if trace[k].Kind == sim.EventBlocked && strings.Contains(trace[k].Reason, m.op.Resource) {
				out[i].Before = k
				break
			}
		}
	}
	return out
}

// clearBefore is where a clear due at at goes in trace.
func clearBefore(at time.Duration, trace []sim.Event) int {
	first, _ := slices.BinarySearchFunc(trace, at, func(e sim.Event, at time.Duration) int { return cmp.Compare(e.At, at) })
	for i := first; i < len(trace) && trace[i].At == at; i++ {
		if trace[i].Kind == sim.EventUnblocked {
			return i
		}
	}
	return first
}

// traceFaults are the marks, placed in trace.
func (s *Server) traceFaults(trace []sim.Event) []scenarios.TraceFault {
	s.faultMu.Lock()
	defer s.faultMu.Unlock()
	return append(slices.Clone(s.marks), placeAlarms(s.alarms, trace)...)
}
