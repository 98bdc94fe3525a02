package sim

import (
	"context"
	"sync"
)

// brokerLock is the one lock at the broker's boundary, with a condition
// variable that wakes WaitFor after every call that may have changed the
// broker. Broadcasting at the end of each locked call is what lets tests
// wait for a state ("three unacked", "the channel closed") without polling:
// a waiter re-evaluates exactly when something happened.
//
// Calls that only look (QueueStats, Trace, Connections, ...) release the
// lock with unlockView, which does not count as a change: a waiter's own
// condition, made of such calls, must not wake it (or another waiter)
// again, or two waiters would wake each other forever.
type brokerLock struct {
	mu   sync.Mutex
	cond sync.Cond // cond.L is &mu
	// changes counts the locked calls that may have changed the broker;
	// seen is its value when the current holder took the lock.
	changes uint64
	seen    uint64
	// waiters counts the WaitFor calls waiting on cond: with none, an
	// unlock has no one to wake.
	waiters int
	// before, when set, runs under the lock at every Lock: the followed
	// clock's catch-up (clock.go). It reports whether it changed anything.
	before func() bool
	// after runs under the lock at the end of a call that may have
	// changed the broker, when due is set: the mailboxes of the channels
	// the call resumed (mailbox.go).
	after func()
	due   bool
}

func (l *brokerLock) init() { l.cond.L = &l.mu }

// Lock takes the lock, first letting a followed clock catch up.
func (l *brokerLock) Lock() {
	l.mu.Lock()
	l.seen = l.changes
	if l.before != nil && l.before() {
		l.changes++
	}
}

// Unlock releases the lock after a call that may have changed the broker,
// and wakes every waiter.
func (l *brokerLock) Unlock() {
	if l.due {
		l.after()
	}
	l.changes++
	waiters := l.waiters
	l.mu.Unlock()
	if waiters > 0 {
		l.cond.Broadcast()
	}
}

// unlockView releases the lock after a call that only looked; it wakes
// the waiters only if the clock's catch-up changed something meanwhile.
func (l *brokerLock) unlockView() {
	changed := l.changes != l.seen && l.waiters > 0
	l.mu.Unlock()
	if changed {
		l.cond.Broadcast()
	}
}

// Changes returns a counter that grows with every call that may have
// changed the broker (every call but the inspection ones, and timers fired
// by a followed clock). Two equal readings mean nothing happened between
// them.
func (b *Broker) Changes() uint64 {
	b.mu.mu.Lock()
	defer b.mu.mu.Unlock()
	return b.mu.changes
}

// WaitFor blocks until cond(b) holds, re-evaluating it after every call
// that may have changed the broker, and returns nil; or until ctx is done,
// and returns ctx's error (after one last look at cond). It never polls:
// between changes it waits on a condition variable, which a
// testing/synctest bubble counts as durably blocked.
//
// cond runs without the lock held, so it may call the broker's inspection
// methods (QueueStats, Connections, Trace, ...). It should call only those:
// a call that changes the broker wakes the waiter again, so a cond that
// changes the broker re-runs at once, forever.
//
// The broker starts no goroutine of its own for the wait: ctx's
// cancellation wakes the waiter through context.AfterFunc.
func (b *Broker) WaitFor(ctx context.Context, cond func(*Broker) bool) error {
	l := &b.mu
	// The waiter checks ctx.Err() and calls Wait holding l.mu, so the
	// cancellation broadcasts holding it too: the broadcast then happens
	// either before the waiter's check, which sees ctx's error, or after
	// Wait has released the lock, and wakes it; never between the two,
	// where no one would hear it and the waiter would sleep until the
	// broker's next change.
	stop := context.AfterFunc(ctx, func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.cond.Broadcast()
	})
	defer stop()
	for {
		l.mu.Lock()
		seen := l.changes
		l.mu.Unlock()
		if cond(b) {
			return nil
		}
		l.mu.Lock()
		l.waiters++
		for l.changes == seen && ctx.Err() == nil {
			l.cond.Wait()
		}
		l.waiters--
		l.mu.Unlock()
		if err := ctx.Err(); err != nil {
			if cond(b) {
				return nil
			}
			return err
		}
	}
}
