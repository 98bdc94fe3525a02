package amqptest

import (
	"context"
	"net"
	"sync"
	"testing"
)

// WaitFlushed is the exact barrier outside a synctest bubble: it returns
// once everything the broker has pushed to the clients (deliveries,
// confirms, returns, cancels, closes) has been written by the server and
// read from the transport by each client's reader, and fails the test
// after the wait timeout otherwise. It does not wait for the client
// library to hand what it read to the application (amqp091-go's reader
// passes a delivery to a Go channel right after reading it), nor for
// frames the client wrote to be applied: WaitApplied is that barrier.
// Inside a bubble synctest.Wait covers all of it.
// WithTCP only the server's side is known: the bytes written to the
// socket count as read.
//
// It is woken by the server's writers and the clients' reads, never by
// polling.
func (s *Server) WaitFlushed(t testing.TB) {
	t.Helper()
	timeout := s.waitTimeout()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if !s.io.await(ctx, s.flushed) {
		t.Fatalf("amqptest: waited %v for the server to write, and the clients to read, everything the broker pushed", timeout)
	}
}

// flushed reports whether the server wrote, and each in-memory client
// read, everything pushed so far.
func (s *Server) flushed() bool {
	if !s.wire.Flushed() {
		return false
	}
	s.io.mu.Lock()
	clients := append([]*clientConn(nil), s.io.clients...)
	s.io.mu.Unlock()
	for _, c := range clients {
		if c.Conn.(interface{ Buffered() int }).Buffered() > 0 {
			return false
		}
	}
	return true
}

// ioEvents counts the server's flushed batches and the clients' reads,
// with the condition variable WaitFlushed waits on.
type ioEvents struct {
	mu      sync.Mutex
	cond    sync.Cond // cond.L is &mu
	events  uint64
	clients []*clientConn // in-memory client ends, in dial order
}

func (e *ioEvents) init() { e.cond.L = &e.mu }

// count is the number of events so far.
func (e *ioEvents) count() uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.events
}

// signal records an event and wakes WaitFlushed.
func (e *ioEvents) signal() {
	e.mu.Lock()
	e.events++
	e.mu.Unlock()
	e.cond.Broadcast()
}

// await waits until done holds, re-checking it at each event; it reports
// false if ctx ends first.
func (e *ioEvents) await(ctx context.Context, done func() bool) bool {
	expired := false
	stop := context.AfterFunc(ctx, func() {
		e.mu.Lock()
		expired = true
		e.mu.Unlock()
		e.cond.Broadcast()
	})
	defer stop()
	for {
		e.mu.Lock()
		seen := e.events
		e.mu.Unlock()
		if done() {
			return true
		}
		e.mu.Lock()
		for e.events == seen && !expired {
			e.cond.Wait()
		}
		over := expired
		e.mu.Unlock()
		if over {
			return done()
		}
	}
}

// add tracks a client end; closed ones stay (they read nothing more and
// hold no bytes once closed).
func (e *ioEvents) add(c *clientConn) {
	e.mu.Lock()
	e.clients = append(e.clients, c)
	c.seq = len(e.clients)
	e.mu.Unlock()
}

// clientConn is a client's end of an in-memory connection that tells
// WaitFlushed about each read, with what WaitApplied looks at on the
// server's side: the server's end of the pipe and its fault wrapper.
type clientConn struct {
	net.Conn
	io     *ioEvents
	seq    int // 1 for the first dial
	server readIdler
	fault  *faultConn
}

// readIdler is the server's end of a wire.Pipe, seen by WaitApplied.
type readIdler interface {
	ReadIdle() bool
	OnReadIdle(func())
}

func (c *clientConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.io.signal()
	return n, err
}
