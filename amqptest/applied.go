package amqptest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// WaitApplied is the barrier from the clients to the broker, the mirror
// of WaitFlushed: it returns once the broker has applied every frame the
// clients have written so far (each publish routed, each ack settled,
// each declare done, their replies queued), and fails the test after the
// wait timeout otherwise, naming the connections whose frames still wait
// and why (a stall, an alarm that holds publishers). Call it after the
// client's calls return and before whatever must come after them
// (Broker().Advance, a fault, a look at the broker's state): amqp091-go's
// Publish without confirms, Ack and Nack return once their frames are
// written, not once the broker has applied them. It does not wait for
// the broker's answers to reach the client (WaitFlushed does).
//
// It watches the in-memory transport: it returns when, for each client,
// the transport holds no byte the client wrote and the server's reader,
// which reads only once it has applied what it read before, waits for
// more (or has stopped); WithTLS too, since TLS reads the transport only
// once it has handed on what it decrypted. WithTCP the socket's buffers
// are out of sight, and it fails. Inside a synctest bubble synctest.Wait
// covers it.
//
// It is woken by the server's reads, never by polling.
func (s *Server) WaitApplied(t testing.TB) {
	t.Helper()
	timeout := s.waitTimeout()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := s.Applied(ctx); err != nil {
		t.Fatalf("amqptest: waited %v for the broker to apply every frame the clients wrote: %v", timeout, err)
	}
}

// Applied is WaitApplied for code that has no testing.TB (examples,
// programs): it returns nil once the broker has applied every frame the
// clients have written, or, when ctx ends first, an error that names the
// connections whose frames still wait and why.
func (s *Server) Applied(ctx context.Context) error {
	if s.tcp {
		return errors.New("amqptest: Applied needs the in-memory transport; WithTCP the socket's buffers are out of sight")
	}
	if s.io.await(ctx, func() bool { return len(s.unapplied()) == 0 }) {
		return nil
	}
	var names []string
	for _, c := range s.unapplied() {
		names = append(names, s.describeUnapplied(c))
	}
	if len(names) == 0 {
		return nil // applied just as ctx ended
	}
	return fmt.Errorf("%w; frames not yet applied on %s", ctx.Err(), strings.Join(names, ", "))
}

// unapplied returns the in-memory clients whose written bytes the server
// has not read and applied yet.
func (s *Server) unapplied() []*clientConn {
	s.io.mu.Lock()
	clients := append([]*clientConn(nil), s.io.clients...)
	s.io.mu.Unlock()
	var out []*clientConn
	for _, c := range clients {
		if !c.server.ReadIdle() {
			out = append(out, c)
		}
	}
	return out
}

// describeUnapplied names a client whose frames wait, with what holds
// them when amqptest knows it.
func (s *Server) describeUnapplied(c *clientConn) string {
	name := fmt.Sprintf("the connection dialled %s", ordinal(c.seq))
	var why []string
	for _, bc := range s.broker.Connections() {
		nc, ok := s.wire.Transport(bc.Name())
		if !ok || plain(nc) != c.fault {
			continue
		}
		name = fmt.Sprintf("connection %q", bc.Name())
		if bc.Blocked() {
			why = append(why, "blocked by an alarm (its publishes wait until the alarm clears)")
		}
		break
	}
	c.fault.mu.Lock()
	if c.fault.stalled {
		why = append(why, "stalled (StallConnection): the server reads nothing until release")
	}
	c.fault.mu.Unlock()
	if len(why) == 0 {
		return name
	}
	return name + ", " + strings.Join(why, ", ")
}

// ordinal writes n as 1st, 2nd, 3rd, 4th...
func ordinal(n int) string {
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return fmt.Sprintf("%d%s", n, suffix)
}
