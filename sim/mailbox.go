package sim

import (
	"errors"
	"slices"

	"github.com/amqpsim/amqpsim/protocol"
)

// The channel's mailbox. RabbitMQ's channel process takes the client's
// methods from its mailbox one at a time; while it waits in a call to
// another node of a cluster (cluster_wait.go), the methods that arrive
// meanwhile wait in the mailbox, and are taken in order once the call
// returns. The simulator's channel does the same: a method called on a
// channel that waits is accepted and queued (ErrQueued), applied when the
// channel resumes, and its reply pushed to the outbox then, in order.
// A shell holds nothing back: it calls the broker for every method it
// reads and writes what the outbox holds.
//
// A connection's calls wait in the same way while an alarm blocks it,
// when its client asked to (ShellOptions.HoldWhenBlocked): in order,
// across its channels, as the frames a blocked client sends wait unread
// in RabbitMQ's socket.

// ErrQueued is returned by a method the channel does not answer now: it
// waits in a call to another node (see the cluster rules in cluster.go),
// or an alarm blocks its connection (ShellOptions.HoldWhenBlocked). The
// method is accepted: the channel applies it when it resumes, after the
// methods queued before it, and pushes its reply then (a Push of the
// reply's method, unless NoWait), or the channel.close or
// connection.close it fails with.
var ErrQueued = errors.New("sim: queued (the channel waits; the method is applied when it resumes, its reply pushed then)")

// CallOption changes how the channel answers one method.
type CallOption uint8

// NoWait is a method's nowait flag: the client asks for no reply. Only a
// reply pushed to the outbox (ShellOptions.Replies, or a method the
// channel queued) is left out; the method's results are returned as
// without it.
const NoWait CallOption = 1

// noWait reports whether opts holds NoWait.
func noWait(opts []CallOption) bool { return slices.Contains(opts, NoWait) }

// call is one client method as a channel applies it, now or from its
// mailbox.
type call struct {
	m protocol.Method
	// describe fills in the method's trace event; it runs only when
	// tracing.
	describe func(e *Event)
	// apply does the method's work, the caller holding the lock: it
	// returns a protocol error, errRetry when the channel waits before it
	// can answer (the call is made again when the wait ends early), or
	// errAnswerLater when the call is done and its reply waits for the
	// channel's wait to end.
	apply func() error
	// reply is the method's reply for the outbox, nil for a method
	// without one (basic.publish, basic.ack, ...) or whose reply its work
	// pushes (basic.get, tx.commit).
	reply  func() Push
	noWait bool
}

// okReply is the reply of a method whose -ok carries nothing.
func okReply(m protocol.Method) func() Push {
	return func() Push { return Push{Method: m} }
}

// countReply is the reply of a method whose -ok carries a message count,
// *n once the call is done.
func countReply(m protocol.Method, n *int) func() Push {
	return func() Push { return Push{Method: m, Delivery: Delivery{MessageCount: *n}} }
}

var (
	// errRetry is apply's answer when the channel waits before it can
	// answer (failLater): the call returns ErrQueued, and is made again,
	// first in the mailbox, when the wait ends without closing the
	// channel.
	errRetry = errors.New("sim: call made again when the channel resumes")
	// errAnswerLater is apply's answer when the call is done but the
	// channel answers it only when its wait ends (waitForMembers).
	errAnswerLater = errors.New("sim: call answered when the channel resumes")
)

// do runs a method call under the broker lock (see exec).
func (ch *Channel) do(c *call) error {
	ch.b.mu.Lock()
	err := ch.exec(c)
	ch.b.mu.Unlock()
	return err
}

// exec runs a method call now, or queues it when the channel waits:
// refused on a closed channel, queued (ErrQueued) behind the channel's
// wait or its connection's block, applied otherwise. Caller holds the
// lock.
func (ch *Channel) exec(c *call) error {
	if err := ch.closed; err != nil {
		return err
	}
	if ch.held() {
		return ch.enqueue(c)
	}
	return ch.run(c, false)
}

// held reports whether a method called now must wait: the channel waits
// in a call, or holds methods that arrived before, or its connection is
// blocked and holds its calls. Caller holds the lock.
func (ch *Channel) held() bool {
	return ch.waiting != nil || len(ch.mailbox) > 0 || ch.conn.holding()
}

// enqueue queues c behind what waits on the channel: in the connection's
// calls while it is blocked, in the channel's mailbox otherwise.
func (ch *Channel) enqueue(c *call) error {
	if ch.conn.holding() {
		ch.conn.held = append(ch.conn.held, heldCall{ch: ch, c: c})
	} else {
		ch.mailbox = append(ch.mailbox, c)
	}
	return ErrQueued
}

// run applies c on the open channel; late is set for a call taken from
// the mailbox, whose reply is pushed even when the connection does not
// ask for replies (there is no other way to answer it). Caller holds the
// lock.
func (ch *Channel) run(c *call, late bool) error {
	ch.start()
	if ch.b.tracing() {
		e := ch.callEvent(c.m)
		if c.describe != nil {
			c.describe(&e)
		}
		ch.b.record(e)
	}
	err := c.apply()
	switch err {
	case nil:
		ch.sendReply(c, late)
	case errRetry:
		// The call is made again when the channel resumes: the trace
		// shows it then, once.
		if len(ch.b.trace) > ch.callAt && ch.b.trace[ch.callAt].Kind == EventCall {
			ch.b.trace = slices.Delete(ch.b.trace, ch.callAt, ch.callAt+1)
		}
		ch.mailbox = slices.Insert(ch.mailbox, 0, c)
		err = ErrQueued
	case errAnswerLater:
		ch.waiting.answer = c
		err = ErrQueued
	}
	return ch.finish(err)
}

// sendReply pushes c's reply, where the connection takes replies from the
// outbox (ShellOptions.Replies) or the call was queued, unless the
// client asked for none. The trace shows a late reply; one sent at once
// is the call's, which the trace shows. Caller holds the lock.
func (ch *Channel) sendReply(c *call, late bool) {
	switch {
	case c.reply == nil || c.noWait:
	case late:
		ch.push(c.reply())
	case ch.conn.opts.Shell.Replies:
		p := c.reply()
		p.Channel = ch.id
		ch.conn.out.add(compact(&p), nil)
	}
}

// resume marks the channel, whose wait ended or which closed, for its
// mailbox to run at the end of the broker's current step (runMailboxes).
// Caller holds the lock.
func (ch *Channel) resume() {
	if len(ch.mailbox) > 0 {
		ch.b.resumed = append(ch.b.resumed, ch)
		ch.b.mu.due = true
	}
}

// runMailbox applies the methods queued on the channel, in order, until
// one makes it wait again. On a closed channel they are dropped, as
// RabbitMQ's closing channel drops every method but channel.close, which
// it answers with close-ok while it waits for the client's own. Caller
// holds the lock.
func (ch *Channel) runMailbox() {
	for len(ch.mailbox) > 0 && ch.waiting == nil {
		c := ch.mailbox[0]
		ch.mailbox[0] = nil
		ch.mailbox = ch.mailbox[1:]
		if ch.closed != nil {
			ch.meetClosed(c)
			continue
		}
		ch.run(c, true)
	}
	if len(ch.mailbox) == 0 {
		ch.mailbox = nil
	}
}

// meetClosed is a queued call that meets the closed channel: dropped,
// but for channel.close on a channel the broker closed, which it answers
// with close-ok while it waits for the client's own. Caller holds the
// lock.
func (ch *Channel) meetClosed(c *call) {
	if c.m == protocol.ChannelClose && ch.closing {
		ch.push(Push{Method: protocol.ChannelCloseOk})
	}
}

// heldCall is a call a blocked connection holds
// (ShellOptions.HoldWhenBlocked): a channel's method, or connection.close
// when ch is nil.
type heldCall struct {
	ch *Channel
	c  *call
}

// holding reports whether the connection holds its calls: an alarm
// blocks it, or it still holds calls from before. Caller holds the lock.
func (c *Connection) holding() bool {
	return c.opts.Shell.HoldWhenBlocked && (c.blocked || len(c.held) > 0)
}

// runMailboxes applies what waits on the channels that resumed and on the
// connections an alarm no longer blocks, in the order they did: the end
// of each step of the broker (a client's call, a fault, a timer), as
// RabbitMQ's channel processes take their mailboxes once their calls
// return. Each connection is then idle: what the applied methods owe its
// client (confirms, deliveries) goes out. Caller holds the lock.
func (b *Broker) runMailboxes() {
	b.mu.due = false
	for len(b.resumed) > 0 || len(b.unblocked) > 0 {
		for len(b.unblocked) > 0 {
			c := b.unblocked[0]
			b.unblocked = b.unblocked[1:]
			c.replay()
		}
		chans := b.resumed
		b.resumed = nil
		for _, ch := range chans {
			ch.runMailbox()
			if ch.conn.closed == nil {
				ch.conn.idle()
			}
		}
		b.flush()
	}
	b.unblocked = nil
}

// replay applies the calls the connection held while it was blocked, in
// order: each as it would have been then, queued behind a call its
// channel waits in. Caller holds the lock.
func (c *Connection) replay() {
	held := c.held
	c.held = nil
	for _, h := range held {
		switch {
		case c.closed != nil:
			return
		case h.ch == nil:
			c.close()
		case h.ch.closed != nil:
			h.ch.meetClosed(h.c)
		case h.ch.waiting != nil || len(h.ch.mailbox) > 0:
			h.ch.mailbox = append(h.ch.mailbox, h.c)
		default:
			h.ch.run(h.c, true)
		}
	}
	if c.closed == nil {
		c.idle()
	}
}
