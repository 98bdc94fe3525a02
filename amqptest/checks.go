package amqptest

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/amqpsim/amqpsim/sim"
)

// The Check helpers assert the broker's state now, in the style of
// miniredis's CheckGet: a mismatch fails the test (t.Error, so every
// check of a test reports) with a diff. They look at vhost "/"; for
// another vhost use sim.Broker's QueueStats and QueueMessages. To wait
// for a state rather than assert it, use the Wait helpers.

// CheckQueue checks that queue holds exactly these ready messages, in
// queue order, by body.
func (s *Server) CheckQueue(t testing.TB, queue string, bodies ...string) {
	t.Helper()
	ms, err := s.broker.QueueMessages("/", queue)
	if err != nil {
		t.Errorf("amqptest: CheckQueue(%q): %v", queue, err)
		return
	}
	got := make([]string, len(ms))
	for i, m := range ms {
		got[i] = string(m.Body)
	}
	if diff := cmp.Diff(bodies, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("amqptest: queue %q ready messages (-want +got):\n%s", queue, diff)
	}
}

// CheckMessages checks queue's ready messages, properties and all,
// against want, in queue order; opts tune the comparison (for example
// cmpopts.IgnoreFields(sim.Message{}, "Timestamp")).
func (s *Server) CheckMessages(t testing.TB, queue string, want []sim.Message, opts ...cmp.Option) {
	t.Helper()
	got, err := s.broker.QueueMessages("/", queue)
	if err != nil {
		t.Errorf("amqptest: CheckMessages(%q): %v", queue, err)
		return
	}
	opts = append(opts, cmpopts.EquateEmpty())
	if diff := cmp.Diff(want, got, opts...); diff != "" {
		t.Errorf("amqptest: queue %q messages (-want +got):\n%s", queue, diff)
	}
}

// QueueCounts are the counts CheckCounts and WaitCounts compare.
type QueueCounts struct {
	Ready, Unacked, Consumers int
}

func countsOf(st sim.QueueStats) QueueCounts {
	return QueueCounts{Ready: st.Ready, Unacked: st.Unacked, Consumers: st.Consumers}
}

// CheckCounts checks queue's ready, unacked and consumer counts (see
// sim.QueueStats) now. Counts that follow the client's asynchronous
// frames (an ack, a publish without confirms) may not be there yet:
// WaitCounts waits for them.
func (s *Server) CheckCounts(t testing.TB, queue string, want QueueCounts) {
	t.Helper()
	st, err := s.broker.QueueStats("/", queue)
	if err != nil {
		t.Errorf("amqptest: CheckCounts(%q): %v", queue, err)
		return
	}
	got := countsOf(st)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("amqptest: queue %q counts (-want +got):\n%s", queue, diff)
	}
}
