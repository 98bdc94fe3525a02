package amqptest

import (
	"context"
	"fmt"
	"testing"
	"time"

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
// On timeout the failure shows the queue's last stats.
func (s *Server) WaitQueue(t testing.TB, queue string, cond func(sim.QueueStats) bool) {
	t.Helper()
	s.wait(t, func() string {
		st, err := s.broker.QueueStats("/", queue)
		if err != nil {
			return fmt.Sprintf("queue %q to satisfy the condition; it does not exist", queue)
		}
		return fmt.Sprintf("queue %q to satisfy the condition; last seen ready=%d unacked=%d consumers=%d",
			queue, st.Ready, st.Unacked, st.Consumers)
	}, func(b *sim.Broker) bool {
		st, err := b.QueueStats("/", queue)
		return err == nil && cond(st)
	})
}

// WaitConsumers waits until queue (in vhost "/") has exactly n consumers.
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

// WaitConnections waits until the broker has exactly n open client
// connections (handshakes not counted).
func (s *Server) WaitConnections(t testing.TB, n int) {
	t.Helper()
	s.wait(t, func() string {
		return fmt.Sprintf("%d open connection(s); there are %d", n, len(s.broker.Connections()))
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
