package amqptest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/amqpsim/amqpsim/sim"
)

// DefaultWaitTimeout bounds the Wait helpers unless WithWaitTimeout says
// otherwise. Inside a synctest bubble it is fake time and costs nothing.
const DefaultWaitTimeout = 10 * time.Second

// WithWaitTimeout sets how long the Wait helpers wait before they fail
// the test; the default is DefaultWaitTimeout.
func WithWaitTimeout(d time.Duration) Option { return func(c *config) { c.waitTimeout = d } }

// waitTimeout is WithWaitTimeout's, or the default.
func (s *Server) waitTimeout() time.Duration {
	if s.cfg.waitTimeout <= 0 {
		return DefaultWaitTimeout
	}
	return s.cfg.waitTimeout
}

// Wait blocks until cond holds for the broker and fails the test, saying
// it waited for what, if it does not within the wait timeout. It is woken
// by the broker's own changes (sim.Broker.WaitFor), never by polling, so
// it returns as soon as the state is reached; cond should only inspect the
// broker (QueueStats, Connections, ...).
//
// Inside a testing/synctest bubble, synctest.Wait is the stronger barrier:
// once it returns, every goroutine of the bubble (the server's, and the
// client's readers and the code under test) is blocked, so everything the
// broker pushed has been written, read by the client and handed to its
// consumers. Use Wait for states that take virtual time, or outside a
// bubble.
func (s *Server) Wait(t testing.TB, what string, cond func(b *sim.Broker) bool) {
	t.Helper()
	s.wait(t, func() string { return what }, cond)
}

func (s *Server) wait(t testing.TB, what func() string, cond func(b *sim.Broker) bool) {
	t.Helper()
	timeout := s.waitTimeout()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := s.broker.WaitFor(ctx, cond); err != nil {
		t.Fatalf("amqptest: waited %v for %s", timeout, what())
	}
}

// WaitQueue waits until queue (in vhost "/") exists and cond holds for its
// stats, for example
//
//	srv.WaitQueue(t, "jobs", func(s sim.QueueStats) bool { return s.Unacked == 3 })
//
// On timeout the failure shows the queue's last stats, and says so when
// its consumer count includes more than its registered consumers (see
// sim.QueueStats.Consumers).
func (s *Server) WaitQueue(t testing.TB, queue string, cond func(sim.QueueStats) bool) {
	t.Helper()
	s.wait(t, func() string {
		st, err := s.broker.QueueStats("/", queue)
		if err != nil {
			return fmt.Sprintf("queue %q to satisfy the condition; it does not exist", queue)
		}
		msg := fmt.Sprintf("queue %q to satisfy the condition; last seen ready=%d unacked=%d consumers=%d",
			queue, st.Ready, st.Unacked, st.Consumers)
		if note := s.consumersNote(queue, st); note != "" {
			msg += " " + note
		}
		return msg
	}, func(b *sim.Broker) bool {
		st, err := b.QueueStats("/", queue)
		return err == nil && cond(st)
	})
}

// consumersNote explains a consumer count above the queue's registered
// consumers: a quorum queue counts a cancelled consumer until it has
// settled what it holds, and each unsettled basic.get.
func (s *Server) consumersNote(queue string, st sim.QueueStats) string {
	d, err := s.broker.QueueDetails("/", queue)
	if err != nil || st.Consumers <= len(d.ConsumerList) {
		return ""
	}
	return fmt.Sprintf("(%d registered consumer(s): the %s queue also counts, as RabbitMQ does, each cancelled consumer "+
		"until it has settled the messages it holds, and each unsettled basic.get; %d unacked: ack, nack or reject them, "+
		"or close their channels, for the count to fall)", len(d.ConsumerList), d.Type, st.Unacked)
}

// WaitConsumers waits until queue (in vhost "/") has exactly n consumers,
// as sim.QueueStats.Consumers counts them: on a quorum queue a cancelled
// consumer counts until it has settled what it holds, so WaitConsumers(t,
// q, 0) after a cancel also waits for those settlements (the failure says
// so).
func (s *Server) WaitConsumers(t testing.TB, queue string, n int) {
	t.Helper()
	s.WaitQueue(t, queue, func(st sim.QueueStats) bool { return st.Consumers == n })
}

// WaitUnacked waits until queue (in vhost "/") has exactly n unacked
// deliveries.
func (s *Server) WaitUnacked(t testing.TB, queue string, n int) {
	t.Helper()
	s.WaitQueue(t, queue, func(st sim.QueueStats) bool { return st.Unacked == n })
}

// WaitCounts is the waiting form of CheckCounts: it waits until queue (in
// vhost "/") has exactly want's ready, unacked and consumer counts, and
// fails with a diff against the last counts seen. Use it where the counts
// follow the client's asynchronous frames (acks, publishes without
// confirms), which CheckCounts, an instant's look, would race.
func (s *Server) WaitCounts(t testing.TB, queue string, want QueueCounts) {
	t.Helper()
	s.wait(t, func() string {
		st, err := s.broker.QueueStats("/", queue)
		if err != nil {
			return fmt.Sprintf("queue %q to have counts %+v; it does not exist", queue, want)
		}
		// cmp.Diff's text ends with a newline.
		return fmt.Sprintf("queue %q to have these counts (-want +got):\n%s%s", queue,
			cmp.Diff(want, countsOf(st)), s.consumersNote(queue, st))
	}, func(b *sim.Broker) bool {
		st, err := b.QueueStats("/", queue)
		return err == nil && countsOf(st) == want
	})
}

// WaitConnections waits until the broker has exactly n open client
// connections (handshakes not counted), those a test opened in process
// with sim.Broker.Connect or Dial included; the failure names them.
func (s *Server) WaitConnections(t testing.TB, n int) {
	t.Helper()
	s.wait(t, func() string {
		cs := s.broker.Connections()
		names := make([]string, len(cs))
		for i, c := range cs {
			names[i] = fmt.Sprintf("%q", c.Name())
			if c.Info().PeerName == "" {
				names[i] += " (in process: sim.Broker.Connect or Dial)"
			}
		}
		list := ""
		if len(names) > 0 {
			list = ": " + strings.Join(names, ", ")
		}
		return fmt.Sprintf("%d open connection(s); there are %d%s", n, len(cs), list)
	}, func(b *sim.Broker) bool { return len(b.Connections()) == n })
}

// WaitClosed waits until the connection named connName is closed (or was
// never open). With channel ids it waits instead until each of those
// channels of the connection is closed, by either side, or the connection
// is.
func (s *Server) WaitClosed(t testing.TB, connName string, channels ...uint16) {
	t.Helper()
	what := fmt.Sprintf("connection %q to close", connName)
	if len(channels) > 0 {
		what = fmt.Sprintf("channel(s) %v of connection %q to close", channels, connName)
	}
	s.Wait(t, what, func(b *sim.Broker) bool {
		for _, c := range b.Connections() {
			if c.Name() != connName {
				continue
			}
			if len(channels) == 0 {
				return false
			}
			for _, ch := range c.Channels() {
				for _, id := range channels {
					if ch.ID() == id && ch.Err() == nil {
						return false
					}
				}
			}
		}
		return true
	})
}
