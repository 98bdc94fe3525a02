package sim

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/amqpsim/amqpsim/channel"
	"github.com/amqpsim/amqpsim/consumer"
	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/queue"
)

// Channel is one AMQP channel. Its methods are the client's AMQP methods;
// each returns RabbitMQ's error as a *Error, after which the channel (soft
// error) or the whole connection (hard error) is closed, with every unacked
// delivery requeued, exactly as RabbitMQ does.
type Channel struct {
	b    *Broker
	conn *Connection
	id   uint16
	core *channel.Channel[*brokerQueue, delivery]

	consumers  map[string]*Consumer
	order      []*Consumer // consumers in creation order
	groups     map[*brokerQueue]*consumer.Group[*Consumer]
	lastQueue  string // for methods that name the queue ""
	confirming bool
	ready      confirms       // publisher confirms waiting for the connection to be idle
	tx         *txState       // set by tx.select
	reply      *replyConsumer // the consumer of amq.rabbitmq.reply-to
	publishTag uint64
	// returns, confirms and cancels index the channel's pushes of those
	// kinds in the outbox, for Returns, Confirms and Cancels.
	returns, confirms, cancels lane
	// closed is why the channel closed; closing is set while the broker's
	// channel.close waits for the client's close-ok
	// (ShellOptions.AwaitCloseOk).
	closed  error
	closing bool

	// permCache and topicCache are the last successful permission
	// checks, newest first (checkAccess); lastCall is when the channel's
	// last method ran (wake).
	permCache, topicCache []permCheck
	lastCall              int64 // Broker.elapsed

	// waiting is the call the channel is still in on a cluster
	// (cluster_wait.go), and mailbox the methods that arrived since, to
	// apply when it resumes (mailbox.go); enqueuer are the quorum queues it
	// has published to, which know it as an enqueuer; lost holds, per
	// classic queue the channel lost to a node failure, the last tag of
	// its deliveries lost with it (cluster.go).
	waiting  *channelWait
	mailbox  []*call
	enqueuer map[*brokerQueue]bool
	lost     map[*brokerQueue]uint64
	// callAt is the index in the trace of the current call's event.
	callAt int
	// holding are the publish tags whose confirms wait for a replicated
	// queue out of reach (cluster.go): still unconfirmed, so no multiple
	// confirm covers them.
	holding []uint64

	settled []channel.Delivery[delivery] // scratch for settlements
	tick    *timer                       // consumer-timeout tick, see syncTick
}

// delivery is the broker's reference to an unacked delivery.
type delivery struct {
	q *brokerQueue
	m *queue.Message
	c *consumer.Consumer[*Consumer] // nil for basic.get
}

func newChannel(c *Connection, id uint16) *Channel {
	return &Channel{conn: c, b: c.b, id: id, core: channel.New[*brokerQueue, delivery](),
		consumers: map[string]*Consumer{}, groups: map[*brokerQueue]*consumer.Group[*Consumer]{}}
}

// ID returns the channel number.
func (ch *Channel) ID() uint16 { return ch.id }

// Err returns why the channel closed, or nil while it is open.
func (ch *Channel) Err() error {
	ch.b.mu.Lock()
	defer ch.b.mu.unlockView()
	return ch.closed
}

// begin and end bracket a method call, for the methods of the hot paths
// (Ack, Publish, ...), which do without a call's closures: begin takes
// the lock and refuses a closed channel, releasing the lock, or returns
// errHeld, holding it, when the method must wait (the caller then
// queues it with hold); otherwise it starts the call (start). The caller
// traces the call (callEvent) and passes its result to end, which
// finishes the call (finish) and releases the lock.
func (ch *Channel) begin() error {
	ch.b.mu.Lock()
	if err := ch.closed; err != nil {
		ch.b.mu.Unlock()
		return err
	}
	if ch.held() {
		return errHeld
	}
	ch.start()
	return nil
}

// errHeld is begin's answer for a method that must wait.
var errHeld = errors.New("sim: held")

// hold queues c, which begin held, and releases the lock.
func (ch *Channel) hold(c *call) error {
	err := ch.enqueue(c)
	ch.b.mu.Unlock()
	return err
}

// start starts a method call: what queues push in reaction waits behind
// the channel's own pushes. Caller holds the lock.
func (ch *Channel) start() {
	ch.conn.out.beginCall()
	ch.wake()
	ch.callAt = len(ch.b.trace)
}

func (ch *Channel) end(err error) error {
	if err != nil {
		ch.failed(err)
	}
	ch.b.flush()
	ch.conn.endCall()
	ch.b.mu.Unlock()
	return err
}

// finish is end without releasing the lock (end repeats it rather than
// call it: the hot paths' extra call cost 11 instructions a lifecycle):
// it ends a method call with its result. Caller holds the lock.
func (ch *Channel) finish(err error) error {
	if err != nil {
		ch.failed(err)
	}
	ch.b.flush()
	ch.conn.endCall()
	return err
}

// failed applies a call's error: a protocol error closes the channel or
// the connection.
func (ch *Channel) failed(err error) {
	if perr, ok := err.(*protocol.Error); ok {
		ch.fail(perr)
		if !perr.Hard {
			ch.dropLateDeliveries()
		}
	}
}

// callEvent is the trace event of a call of method m.
func (ch *Channel) callEvent(m protocol.Method) Event {
	e := connEvent(EventCall, ch.conn, ch.id)
	e.Method = m
	return e
}

// dropLateDeliveries drops what quorum queues delivered to the channel in
// this batch, a method of the batch having just closed it: in RabbitMQ
// such a delivery reaches the channel process after the queue's
// consensus, by which time the client has answered the channel.close
// with close-ok and the channel is gone, while a classic queue's reaches
// it first and is sent after the channel.close. Measured on 3.10.8 with
// tag 1 acked twice (prefetch 1, two messages ready) in one write, or in
// two back to back: a classic queue sent channel.close and then the
// delivery of tag 2 in 3 runs of 3 with one write and 9 of 10 with
// amqp091-go's d.Ack twice (which then closes the connection with 504),
// a quorum queue channel.close alone in 15 of 16 (and the delivery after
// it when the client delayed its close-ok by 50 ms); 4.3.6 alike, 4.0.5
// half and half for the quorum queue. The message is back in the queue either way (the
// trace keeps the push, as the queue did deliver it). A stream is left
// alone: it sent the second message before the acks arrived (3.10.8
// streams deliver by chunk), which amqpsim does not model. Caller holds
// the lock.
func (ch *Channel) dropLateDeliveries() { ch.dropStaged(true) }

// dropStaged drops the pushes queues staged for the channel in this
// batch (only the late deliveries when lateOnly). Caller holds the lock.
func (ch *Channel) dropStaged(lateOnly bool) {
	if n := ch.conn.out.dropStaged(ch, lateOnly); n > 0 {
		ch.conn.unsent = max(ch.conn.unsent-n, 0)
	}
}

// fail applies a protocol error: a soft one closes this channel, a hard one
// the connection. Caller holds the lock.
func (ch *Channel) fail(err *protocol.Error) { ch.failFor(err, "") }

// failFor is fail with the reason its EventChannelClose gives (Event.Reason:
// ReasonConsumerTimeout). Caller holds the lock.
func (ch *Channel) failFor(err *protocol.Error, reason string) {
	if err.Hard {
		ch.conn.fail(err)
		return
	}
	e := connEvent(EventChannelClose, ch.conn, ch.id)
	e.Err, e.Reason = err, reason
	ch.b.record(e)
	ch.shutdown(&closedError{what: fmt.Sprintf("channel %d", ch.id), cause: err})
	ch.push(Push{Method: protocol.ChannelClose, Err: err})
	if ch.conn.opts.Shell.AwaitCloseOk {
		ch.closing = true
		ch.conn.channels[ch.id] = ch
	}
}

// Close closes the channel as channel.close does: its consumers go and its
// unacked deliveries are requeued to their original positions. On a
// channel the broker closed that waits for close-ok it does nothing more
// and returns nil: RabbitMQ answers that channel.close with close-ok.
func (ch *Channel) Close() error {
	ch.b.mu.Lock()
	defer ch.b.mu.Unlock()
	if ch.closing {
		ch.sendReply(&call{reply: okReply(protocol.ChannelCloseOk)}, false)
		return nil
	}
	return ch.exec(&call{m: protocol.ChannelClose, apply: func() error {
		ch.shutdown(&closedError{what: fmt.Sprintf("channel %d", ch.id)})
		// What queues pushed to the channel in reaction to methods of
		// the same batch reaches RabbitMQ's channel process after this
		// close, when the process is gone: the client never gets it
		// (the messages were requeued by the close).
		ch.dropStaged(false)
		return nil
	}, reply: okReply(protocol.ChannelCloseOk)})
}

// CloseOk is the client's channel.close-ok to the broker's channel.close:
// the channel number is free again. On an open channel it is RabbitMQ's
// 503 COMMAND_INVALID, which closes the connection; on a closed one it
// does nothing.
func (ch *Channel) CloseOk() error {
	ch.b.mu.Lock()
	defer ch.b.mu.Unlock()
	switch {
	case ch.closing:
		ch.closing = false
		if ch.conn.channels[ch.id] == ch {
			delete(ch.conn.channels, ch.id)
		}
	case ch.closed == nil:
		return ch.exec(&call{m: protocol.ChannelCloseOk, apply: func() error {
			return protocol.Errorf(protocol.CommandInvalid, protocol.ChannelCloseOk, "unimplemented method")
		}})
	}
	return nil
}

// Closing reports whether the broker closed the channel and waits for the
// client's close-ok (ShellOptions.AwaitCloseOk).
func (ch *Channel) Closing() bool {
	ch.b.mu.Lock()
	defer ch.b.mu.unlockView()
	return ch.closing
}

// CloseWithError closes the channel from the broker's side with err, as
// RabbitMQ does when a method fails: a soft error (err.Hard false) closes
// the channel, pushing a channel.close and requeueing its unacked
// deliveries; a hard one closes the whole connection. It reports false,
// doing nothing, when the channel is already closed or err is nil.
func (ch *Channel) CloseWithError(err *Error) bool {
	ch.b.mu.Lock()
	defer ch.b.mu.Unlock()
	if ch.closed != nil || ch.conn.closed != nil || err == nil {
		return false
	}
	ch.fail(err)
	ch.b.flush()
	return true
}

// shutdown removes the channel: its consumers are removed, its unacked
// deliveries requeued, and auto-delete queues left without consumers are
// deleted (taking the requeued messages with them). Caller holds the lock.
func (ch *Channel) shutdown(err error) {
	ch.closed = err
	delete(ch.conn.channels, ch.id)
	// A call the channel waited in is over; what its mailbox holds meets
	// the closed channel.
	if w := ch.waiting; w != nil {
		ch.b.stop(w.timer)
		ch.waiting = nil
	}
	ch.resume()
	ds := ch.suspect(ch.core.TakeAll())
	if ch.tx != nil {
		// The transaction's publishes are lost; the messages it settled
		// are still unacked at their queues, which take them back with
		// the others in delivery order (a quorum queue returns a
		// consumer's messages by id: fuzz seed 9112).
		ds = append(ds, ch.tx.held()...)
		slices.SortFunc(ds, func(a, b channel.Delivery[delivery]) int { return cmp.Compare(a.Tag, b.Tag) })
		ch.tx = nil
	}
	var touched []*brokerQueue
	for _, cs := range ch.order {
		if len(cs.inTransit) > 0 && !cs.suspected {
			ds = append(ds, cs.lostInTransit()...)
		}
		if !cs.cancelled && !cs.suspected {
			cs.q.RemoveConsumer(cs.core)
			cs.cancelled = true
			touched = appendQueue(touched, cs.q)
		}
	}
	for _, d := range ds {
		touched = appendQueue(touched, d.Ref.q)
	}
	var returned []*queue.Message
	for _, q := range touched {
		if q.deleted {
			continue
		}
		if q.Options().AutoDelete && q.HadConsumer() && q.ConsumerCount() == 0 {
			ch.b.deleteQueue(q)
			continue
		}
		returned = returned[:0]
		for _, d := range ds {
			if d.Ref.q == q && !ch.lostDelivery(d.Ref, d.Tag) {
				returned = append(returned, d.Ref.m)
			}
		}
		q.Return(returned)
		ch.b.markDirty(q)
	}
	ch.cancelReplyTo()
	ch.b.stop(ch.tick)
	ch.consumers, ch.order, ch.groups = nil, nil, nil
}

func appendQueue(qs []*brokerQueue, q *brokerQueue) []*brokerQueue {
	for _, e := range qs {
		if e == q {
			return qs
		}
	}
	return append(qs, q)
}

// Qos is basic.qos: see channel.Channel.Qos for RabbitMQ's rules.
func (ch *Channel) Qos(prefetchCount, prefetchSize int, global bool) error {
	if prefetchCount < 0 || prefetchCount > 65535 || prefetchSize < 0 || prefetchSize > 1<<32-1 {
		return fmt.Errorf("sim: basic.qos prefetch count %d or size %d out of range", prefetchCount, prefetchSize)
	}
	return ch.do(&call{m: protocol.BasicQos, describe: func(e *Event) {
		e.Count, e.Global, e.GlobalDenied = prefetchCount, global, global && ch.b.profile.GlobalQosDenied
	}, apply: func() error {
		// With global_qos denied (4.3) the channel rewrites global=true
		// to false before anything else (Profile.GlobalQosDenied).
		resume, err := ch.core.Qos(uint16(prefetchCount), uint32(prefetchSize), global && !ch.b.profile.GlobalQosDenied)
		if err != nil {
			return err
		}
		ch.resumeConsumers(resume)
		return nil
	}, reply: okReply(protocol.BasicQosOk)})
}

// resumeConsumers lifts the suspension of the channel's consumers of the
// queues the limiter released, starting at a seeded random position as
// RabbitMQ's notify_queues does.
func (ch *Channel) resumeConsumers(qs []*brokerQueue) {
	if len(qs) > 0 {
		// Out of line: most settlements release nothing, and this is
		// small enough to inline into them.
		ch.resumeQueues(qs)
	}
}

// resumeQueues is resumeConsumers of queues that were released.
func (ch *Channel) resumeQueues(qs []*brokerQueue) {
	start := 0
	if len(qs) > 1 {
		start = ch.b.rng.IntN(len(qs))
	}
	for i := range qs {
		q := qs[(start+i)%len(qs)]
		if g := ch.groups[q]; g != nil && !q.deleted {
			q.Resume(g)
			ch.b.markDirty(q)
		}
	}
}

// Confirm is confirm.select: from now on every publish on this channel is
// confirmed with basic.ack (or basic.nack), tags counting from 1.
func (ch *Channel) Confirm(opts ...CallOption) error {
	return ch.do(&call{m: protocol.ConfirmSelect, noWait: noWait(opts), apply: func() error {
		if ch.tx != nil {
			return protocol.Errorf(protocol.PreconditionFailed, protocol.ConfirmSelect, "cannot switch from tx to confirm mode")
		}
		if !ch.confirming {
			ch.confirming = true
			ch.conn.confirmingOrder = append(ch.conn.confirmingOrder, ch)
		}
		return nil
	}, reply: okReply(protocol.ConfirmSelectOk)})
}

// Flow is channel.flow. RabbitMQ refuses active=false with 540, closing the
// connection; active=true is accepted.
func (ch *Channel) Flow(active bool) error {
	return ch.do(&call{m: protocol.ChannelFlow, apply: func() error {
		if !active {
			return protocol.Errorf(protocol.NotImplemented, protocol.ChannelFlow, "active=false")
		}
		return nil
	}, reply: okReply(protocol.ChannelFlowOk)})
}

// queueName resolves "" to the last queue declared on the channel.
func (ch *Channel) queueName(name string, m protocol.Method) (string, error) {
	if name != "" {
		return name, nil
	}
	if ch.lastQueue == "" {
		return "", protocol.Errorf(protocol.NotFound, m, "no previously declared queue")
	}
	return ch.lastQueue, nil
}

// lookupQueue finds a queue for method m, checking that it exists and is not
// exclusive to another connection.
func (ch *Channel) lookupQueue(name string, m protocol.Method) (*brokerQueue, error) {
	name, err := ch.queueName(name, m)
	if err != nil {
		return nil, err
	}
	q, ok := ch.conn.vhost.queues[name]
	if !ok {
		return nil, protocol.Errorf(protocol.NotFound, m, "no queue '%s' in vhost '%s'", name, ch.conn.vhost.name)
	}
	// A passive declare asks the queue's process first, and checks
	// exclusivity in its answer: an exclusive queue whose owner's node
	// crashed makes it wait for the dead process and fail with 404, where
	// basic.get says 405 at once (exclusive-owner-killed-*.txt, 4.3.6).
	passive := m == protocol.QueueDeclare
	if !passive {
		if err := ch.checkExclusive(q, m); err != nil {
			return nil, err
		}
	}
	if m != protocol.QueueBind && m != protocol.QueueUnbind {
		// The queue's process answers these; a binding is the metadata
		// store's.
		if err := ch.checkReach(q, m); err != nil {
			return nil, err
		}
	}
	if passive {
		if err := ch.checkExclusive(q, m); err != nil {
			return nil, err
		}
	}
	return q, nil
}

func (ch *Channel) checkExclusive(q *brokerQueue, m protocol.Method) error {
	if q.Options().Exclusive && q.owner != ch.conn {
		return lockedError(q, m)
	}
	return nil
}

func lockedError(q *brokerQueue, m protocol.Method) error {
	return protocol.Errorf(protocol.ResourceLocked, m, "cannot obtain exclusive access to locked %s. It could be originally declared on another connection or the exclusive property value does not match that of the original declaration.", q.Resource())
}

func reservedName(kind, name string, m protocol.Method) error {
	if strings.HasPrefix(name, "amq.") {
		return protocol.Errorf(protocol.AccessRefused, m, "%s name '%s' contains reserved prefix 'amq.*'", kind, name)
	}
	return nil
}
