package sim_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/amqpsim/amqpsim/sim"
)

// TestWaitForWakesOnChange: a waiter blocked in WaitFor stays blocked
// while nothing changes (inspection calls included), and returns once a
// publish makes its condition true. The bubble's Wait is the barrier that
// makes "still blocked" an exact statement, not a timing guess.
func TestWaitForWakesOnChange(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		e.declare("q", sim.QueueOptions{})
		done := make(chan error, 1)
		evals := 0
		go func() {
			done <- e.b.WaitFor(context.Background(), func(b *sim.Broker) bool {
				evals++
				s, err := b.QueueStats("/", "q")
				return err == nil && s.Ready == 2
			})
		}()
		synctest.Wait()
		e.publish("q", "m1")
		synctest.Wait()
		_ = e.stats("q") // an inspection is not a change
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("WaitFor returned %v with one message ready", err)
		default:
		}
		if evals != 2 {
			t.Errorf("condition evaluated %d times, want 2 (at the start, after the publish)", evals)
		}
		e.publish("q", "m2")
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(time.Second): // the bubble's clock: once all are blocked
			t.Fatal("WaitFor did not return once two messages were ready")
		}
	})
}

// TestWaitForDeadline: a condition that never holds ends with the
// context's error when its deadline passes, on the bubble's clock.
func TestWaitForDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := sim.New(sim.Config{})
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		start := time.Now()
		err := b.WaitFor(ctx, func(b *sim.Broker) bool { return len(b.Connections()) > 0 })
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want DeadlineExceeded", err)
		}
		if got := time.Since(start); got != 5*time.Second {
			t.Errorf("returned after %v", got)
		}
	})
}

// TestChangesCounter: changing calls move the counter, inspections do not.
func TestChangesCounter(t *testing.T) {
	e := newEnv(t)
	c0 := e.b.Changes()
	_ = e.b.Queues()
	_ = e.b.Trace()
	_ = e.b.Policies("/")
	_ = e.b.OperatorPolicies("/")
	if c := e.b.Changes(); c != c0 {
		t.Errorf("inspection moved Changes from %d to %d", c0, c)
	}
	e.declare("q", sim.QueueOptions{})
	if c := e.b.Changes(); c == c0 {
		t.Error("a declare did not move Changes")
	}
}
