package sim

import (
	"errors"
	"fmt"

	"github.com/amqpsim/amqpsim/protocol"
)

// FaultAction is what a DeliveryFault does when it fires.
type FaultAction uint8

const (
	// FaultCloseChannel closes the delivery's channel with the fault's
	// Err (a hard Err closes its connection instead), its unacked
	// deliveries requeued, as any channel error does.
	FaultCloseChannel FaultAction = iota + 1
	// FaultCloseConnection closes the delivery's connection with Err.
	FaultCloseConnection
	// FaultCloseEveryConnection closes every open connection with Err,
	// in connect order, as "rabbitmqctl close_connection" on each would.
	FaultCloseEveryConnection
	// FaultConsumerTimeout closes the delivery's channel as RabbitMQ's
	// consumer timeout does before 4.3 (406 PRECONDITION_FAILED - delivery
	// acknowledgement on channel N timed out...; see
	// Channel.ForceConsumerTimeout for 4.3); Err is ignored.
	FaultConsumerTimeout
)

// DeliveryFault is a one-shot fault armed with Broker.CloseAtDelivery: at
// the Nth delivery pushed after it is armed (basic.deliver or
// basic.get-ok, redeliveries included) that matches Queue and
// ConsumerTag, it closes that delivery's channel or connection. The close
// is the very next push of the connection after that delivery, so the
// client reads the delivery and then the close, and no delivery from any
// queue reaches a closed channel after it: the fault lands exactly, not
// wherever a test's goroutine happens to wake.
type DeliveryFault struct {
	N int // 1 is the next matching delivery
	// FromStart counts N from the broker's start instead: the fault
	// fires at the broker's Nth delivery in all (Deliveries), so that a
	// schedule written as "after N deliveries" is armed without a race
	// against deliveries being pushed meanwhile. It takes no Queue or
	// ConsumerTag.
	FromStart bool
	// Queue and ConsumerTag narrow the deliveries counted; "" matches any.
	// A basic.get-ok has no consumer tag: it matches only ConsumerTag "".
	Queue, ConsumerTag string
	Action             FaultAction
	// Err is the close's error: for example Forced("...") (320) for a
	// connection, or protocol.Errorf(protocol.PreconditionFailed, ...)
	// for a channel.
	Err *Error
}

// armedFault is a DeliveryFault counting down.
type armedFault struct {
	DeliveryFault
	left int
}

// firedFault is a close a fault pushed, whose state change (requeues,
// consumers removed, exclusive queues deleted) waits for the end of the
// dispatch that made the delivery: closing a channel inside its queue's
// dispatch loop would change the consumers the loop walks.
type firedFault struct {
	ch   *Channel    // a channel's close, or nil
	conn *Connection // a connection's close
	err  *Error
}

// ErrDeliveryPassed is CloseAtDelivery's error for a FromStart fault
// whose delivery the broker has already pushed.
var ErrDeliveryPassed = errors.New("sim: CloseAtDelivery: the broker has already pushed that delivery")

// CloseAtDelivery arms f. Faults are independent: each counts every
// matching delivery, and several may fire at one delivery, in the order
// they were armed. It fails for N < 1, an unknown Action, a nil Err
// (except with FaultConsumerTimeout), or FromStart with a Queue or
// ConsumerTag, and with ErrDeliveryPassed for a FromStart fault too late.
func (b *Broker) CloseAtDelivery(f DeliveryFault) error {
	if f.N < 1 {
		return fmt.Errorf("sim: CloseAtDelivery: N is %d, want 1 or more", f.N)
	}
	if f.Action < FaultCloseChannel || f.Action > FaultConsumerTimeout {
		return fmt.Errorf("sim: CloseAtDelivery: unknown action %d", f.Action)
	}
	if f.Err == nil && f.Action != FaultConsumerTimeout {
		return errors.New("sim: CloseAtDelivery: no error to close with")
	}
	if f.FromStart && (f.Queue != "" || f.ConsumerTag != "") {
		return errors.New("sim: CloseAtDelivery: FromStart counts every delivery; it takes no Queue or ConsumerTag")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	left := f.N
	if f.FromStart {
		if uint64(f.N) <= b.delivered {
			return ErrDeliveryPassed
		}
		left = f.N - int(b.delivered)
	}
	b.armed = append(b.armed, &armedFault{DeliveryFault: f, left: left})
	return nil
}

// ArmedFaults returns the number of DeliveryFaults armed and not yet
// fired.
func (b *Broker) ArmedFaults() int {
	b.mu.Lock()
	defer b.mu.unlockView()
	return len(b.armed)
}

// Deliveries returns the number of deliveries (basic.deliver and
// basic.get-ok) the broker has pushed since it started.
func (b *Broker) Deliveries() uint64 {
	b.mu.Lock()
	defer b.mu.unlockView()
	return b.delivered
}

// delivered counts a delivery just pushed on ch from queueName to ctag
// and fires the faults it completes; fromQueue says it went through the
// queue side of the outbox (queuePush), where the close must follow it.
// Caller holds the lock.
func (ch *Channel) delivered(queueName, ctag string, fromQueue bool) {
	ch.b.delivered++
	if len(ch.b.armed) > 0 {
		// Out of line: without armed faults, the common case, this is
		// small enough to inline into every delivery.
		ch.countArmed(queueName, ctag, fromQueue)
	}
}

// countArmed is delivered's count of the armed faults.
func (ch *Channel) countArmed(queueName, ctag string, fromQueue bool) {
	b := ch.b
	kept := b.armed[:0]
	var fire []*armedFault
	for _, f := range b.armed {
		if (f.Queue == "" || f.Queue == queueName) && (f.ConsumerTag == "" || f.ConsumerTag == ctag) {
			f.left--
		}
		if f.left > 0 {
			kept = append(kept, f)
		} else {
			fire = append(fire, f)
		}
	}
	clear(b.armed[len(kept):])
	b.armed = kept
	for _, f := range fire {
		ch.fire(f, fromQueue)
	}
}

// fire pushes f's close right behind the delivery and stops deliveries to
// what it closes; flush applies the rest. Caller holds the lock.
func (ch *Channel) fire(f *armedFault, fromQueue bool) {
	err := f.Err
	action := f.Action
	reason := ""
	if action == FaultConsumerTimeout {
		err, action = consumerTimeoutError(ch.id, max(ch.b.cfg.ConsumerTimeout, 0).Milliseconds()), FaultCloseChannel
		reason = ReasonConsumerTimeout
	}
	if action == FaultCloseChannel && err.Hard {
		action = FaultCloseConnection
	}
	switch action {
	case FaultCloseChannel:
		if ch.closed != nil || ch.conn.closed != nil {
			return
		}
		e := connEvent(EventChannelClose, ch.conn, ch.id)
		e.Err, e.Reason = err, reason
		ch.b.record(e)
		// Refused deliveries from here on (CanSend), as shutdown will.
		ch.closed = &closedError{what: fmt.Sprintf("channel %d", ch.id), cause: err}
		ch.faultPush(Push{Method: protocol.ChannelClose, Err: err}, fromQueue)
		ch.b.fired = append(ch.b.fired, firedFault{ch: ch, err: err})
	case FaultCloseConnection:
		ch.conn.fault(err, fromQueue)
	case FaultCloseEveryConnection:
		for _, c := range ch.b.conns {
			c.fault(err, c == ch.conn && fromQueue || c != ch.conn)
		}
	}
}

// fault pushes connection.close with err behind what the connection's
// queues pushed; caller holds the lock.
func (c *Connection) fault(err *Error, fromQueue bool) {
	if c.closed != nil {
		return
	}
	e := connEvent(EventConnectionClose, c, 0)
	e.Err = err
	c.b.record(e)
	// Deliveries stop here (CanSend); shutdown sets it again.
	c.closed = &closedError{what: "connection " + c.name, cause: err}
	p := Push{Method: protocol.ConnectionClose, Err: err}
	if c.b.tracing() {
		c.b.record(pushEvent(c, &p))
	}
	if fromQueue {
		c.out.queuePush(compact(&p), nil, nil, false)
	} else {
		c.out.add(compact(&p), nil)
	}
	c.b.fired = append(c.b.fired, firedFault{conn: c, err: err})
}

// faultPush pushes p on the channel, on the queue side of the outbox when
// fromQueue; caller holds the lock.
func (ch *Channel) faultPush(p Push, fromQueue bool) {
	if !fromQueue {
		ch.push(p)
		return
	}
	p.Channel = ch.id
	if ch.b.tracing() {
		ch.b.record(pushEvent(ch.conn, &p))
	}
	ch.conn.out.queuePush(compact(&p), ch.lane(p.Method), ch, false)
}

// applyFired finishes the closes fired faults pushed; flush calls it once
// no queue is dispatching. Caller holds the lock.
func (b *Broker) applyFired() {
	fired := b.fired
	b.fired = nil
	for _, f := range fired {
		if f.ch != nil {
			ch := f.ch
			if ch.conn.channels[ch.id] != ch {
				continue // its connection closed meanwhile
			}
			ch.shutdown(ch.closed)
			if ch.conn.opts.Shell.AwaitCloseOk {
				ch.closing = true
				ch.conn.channels[ch.id] = ch
			}
			continue
		}
		f.conn.shutdown(f.err)
	}
}
