package sim

import (
	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/queue"
)

// Push is one method the broker sends a client: a delivery, a basic.get
// reply, a return, a publisher confirm, a broker cancel, a close, or an
// alarm's connection.blocked and connection.unblocked.
// Method says which; the fields that apply to it are set:
//
//   - basic.deliver and basic.get-ok: Delivery (MessageCount for get-ok).
//   - basic.get-empty and tx.commit-ok (replies that wait in the outbox,
//     after the pushes of their own call): nothing more.
//   - basic.return: ReplyCode, ReplyText, and Delivery's Exchange,
//     RoutingKey and Message.
//   - basic.ack and basic.nack (publisher confirms): Delivery.DeliveryTag,
//     the publish tag, and Multiple.
//   - basic.cancel: Delivery.ConsumerTag.
//   - channel.close and connection.close: Err.
//   - connection.blocked: ReplyText, the reason; connection.unblocked:
//     nothing more.
//   - The replies of the channel's methods (queue.declare-ok,
//     basic.qos-ok, channel.close-ok, ...), where the connection takes
//     them from the outbox (ShellOptions.Replies) or the channel queued
//     the method (ErrQueued): queue.declare-ok has Delivery.Queue,
//     Delivery.MessageCount and Consumers; queue.purge-ok and
//     queue.delete-ok Delivery.MessageCount; basic.consume-ok and
//     basic.cancel-ok Delivery.ConsumerTag; the others nothing more.
type Push struct {
	Method  protocol.Method
	Channel uint16 // 0 for connection.close
	Delivery
	Multiple  bool
	ReplyCode int
	ReplyText string
	Err       *Error
	// Drop, on a connection.close, tells the shell to close the
	// transport right after it (after writing the frame when Err is set,
	// without writing anything when Err is nil), without waiting for
	// close-ok: a cluster node stopping or crashing (Broker.StopNode,
	// KillNode).
	Drop bool
	// Consumers is queue.declare-ok's consumer count.
	Consumers int
}

// Return is basic.return of an unroutable mandatory message.
type Return struct {
	ReplyCode  int
	ReplyText  string
	Exchange   string
	RoutingKey string
	Message
}

// Confirmation is a publisher confirm: basic.ack of the publish with tag
// DeliveryTag (and every earlier one, when Multiple), or basic.nack when
// Nack is set.
type Confirmation struct {
	DeliveryTag uint64
	Multiple    bool
	Nack        bool
}

// Cancellation is the broker's basic.cancel of a consumer whose queue was
// deleted, sent only to clients that announce the consumer_cancel_notify
// capability.
type Cancellation struct {
	ConsumerTag string
}

// Drain takes everything the broker has pushed to the connection and not
// yet taken, in the order the broker pushed it, and returns it appended to
// buf: how a shell (the wire server) reads a connection, after each call it
// makes and whenever ShellOptions.Notify says there is more, and how a
// test reads everything a client was sent. The in-process readers
// (Consumer.Next, Channel.Returns, Confirms and Cancels) take their kind
// from the same outbox; what one took, the other does not see.
func (c *Connection) Drain(buf []Push) []Push {
	c.b.mu.Lock()
	defer c.b.mu.Unlock()
	if c.hung() {
		return buf // its node sends nothing (cluster_pause.go)
	}
	buf = c.out.drain(buf)
	c.taken()
	return buf
}

// taken counts the deliveries readers took as sent, unless the shell
// reports what it wrote instead (ShellOptions.SentWhenWritten). Caller
// holds the lock.
func (c *Connection) taken() {
	n := c.out.deliveriesTaken
	c.out.deliveriesTaken = 0
	if !c.opts.Shell.SentWhenWritten {
		c.sent(n)
	}
}

// HasPending reports whether the connection's outbox holds a push,
// without taking the broker's lock: a shell looks before it drains, as
// most calls of a batched connection push nothing until it is idle. A
// push made meanwhile is announced by ShellOptions.Notify.
func (c *Connection) HasPending() bool { return c.out.busy.Load() }

// Pending returns the number of pushes waiting in the connection's outbox.
func (c *Connection) Pending() int {
	c.b.mu.Lock()
	defer c.b.mu.unlockView()
	return c.out.pending()
}

// push appends a connection-level push (connection.close, blocked,
// unblocked) to the outbox and traces it; caller holds the lock.
func (c *Connection) push(p Push) {
	if c.b.tracing() {
		c.b.record(pushEvent(c, &p))
	}
	c.out.add(compact(&p), nil)
}

// push appends p, a push on this channel, to its connection's outbox and
// traces it; caller holds the lock.
func (ch *Channel) push(p Push) {
	p.Channel = ch.id
	if ch.b.tracing() {
		ch.b.record(pushEvent(ch.conn, &p))
	}
	ch.conn.out.add(compact(&p), ch.lane(p.Method))
}

// lane returns the in-process reader of the channel's pushes of method m:
// Returns, Confirms or Cancels; nil for those only Drain reads.
func (ch *Channel) lane(m protocol.Method) *lane {
	switch m {
	case protocol.BasicReturn:
		return &ch.returns
	case protocol.BasicAck, protocol.BasicNack:
		return &ch.confirms
	case protocol.BasicCancel:
		return &ch.cancels
	}
	return nil
}

// pushDelivery pushes basic.deliver of m to cons, a queue's push; late is
// set for a quorum queue's delivery (see Channel.dropLateDeliveries).
// Caller holds the lock.
func (ch *Channel) pushDelivery(cons *Consumer, tag uint64, redelivered bool, m *queue.Message, late bool) {
	it := outItem{method: protocol.BasicDeliver, channel: ch.id, tag: tag, cons: cons, redelivered: redelivered, msg: m}
	if ch.b.tracing() {
		ch.tracePush(&it)
	}
	ch.conn.out.queuePush(it, &cons.lane, ch, late)
	ch.conn.unsent++
	ch.delivered(cons.queue, cons.tag, true)
}

// tracePush records the push it holds. Out of line: the large Push and
// Event it builds would otherwise weigh on every delivery's frame, traced
// or not.
func (ch *Channel) tracePush(it *outItem) {
	p := it.push()
	ch.b.record(pushEvent(ch.conn, &p))
}

// pushCancel pushes basic.cancel of consumer tag on behalf of its queue:
// a deleted queue, or (timedOut > 0) a 4.3 quorum queue that took back
// timedOut of the consumer's deliveries at its consumer timeout, which the
// trace event says (Reason ReasonConsumerTimeout, Count timedOut) as the
// frame cannot. Caller holds the lock.
func (ch *Channel) pushCancel(tag string, timedOut int) {
	p := Push{Method: protocol.BasicCancel, Channel: ch.id, Delivery: Delivery{ConsumerTag: tag}}
	if ch.b.tracing() {
		e := pushEvent(ch.conn, &p)
		if timedOut > 0 {
			e.Reason, e.Count = ReasonConsumerTimeout, timedOut
		}
		ch.b.record(e)
	}
	ch.conn.out.queuePush(compact(&p), ch.lane(p.Method), ch, false)
}

// pushEvent is the trace event of a push.
func pushEvent(c *Connection, p *Push) Event {
	e := connEvent(EventPush, c, p.Channel)
	e.Method = p.Method
	switch p.Method {
	case protocol.BasicDeliver, protocol.BasicGetOk:
		d := &p.Delivery
		e.ConsumerTag, e.DeliveryTag, e.Redelivered = d.ConsumerTag, d.DeliveryTag, d.Redelivered
		e.Exchange, e.RoutingKey, e.Body, e.MessageID, e.Queue = d.Exchange, d.RoutingKey, d.Body, d.MessageID, d.Queue
		if p.Method == protocol.BasicGetOk {
			e.Count = d.MessageCount
		}
	case protocol.BasicReturn:
		e.Exchange, e.RoutingKey, e.Body = p.Exchange, p.RoutingKey, p.Body
		e.Err = protocol.Errorf(p.ReplyCode, protocol.BasicPublish, "%s", p.ReplyText)
	case protocol.BasicAck, protocol.BasicNack:
		e.DeliveryTag, e.Multiple = p.DeliveryTag, p.Multiple
	case protocol.BasicCancel:
		e.ConsumerTag = p.ConsumerTag
	case protocol.ChannelClose, protocol.ConnectionClose:
		e.Err = p.Err
	case protocol.ConnectionBlocked:
		e.Reason = p.ReplyText
	}
	return e
}

// Returns takes the basic.return pushes not yet taken.
func (ch *Channel) Returns() []Return {
	var out []Return
	for _, p := range ch.takeLane(&ch.returns) {
		out = append(out, Return{ReplyCode: p.ReplyCode, ReplyText: p.ReplyText, Exchange: p.Exchange, RoutingKey: p.RoutingKey, Message: p.Message})
	}
	return out
}

// Confirms takes the publisher confirms not yet taken.
func (ch *Channel) Confirms() []Confirmation {
	var out []Confirmation
	for _, p := range ch.takeLane(&ch.confirms) {
		out = append(out, Confirmation{DeliveryTag: p.DeliveryTag, Multiple: p.Multiple, Nack: p.Method == protocol.BasicNack})
	}
	return out
}

// Cancels takes the broker cancels not yet taken.
func (ch *Channel) Cancels() []Cancellation {
	var out []Cancellation
	for _, p := range ch.takeLane(&ch.cancels) {
		out = append(out, Cancellation{ConsumerTag: p.ConsumerTag})
	}
	return out
}

// takeLane takes the pushes of one of the channel's lanes, oldest first.
func (ch *Channel) takeLane(l *lane) []Push {
	ch.b.mu.Lock()
	defer ch.b.mu.Unlock()
	var out []Push
	var it outItem
	for ch.conn.out.next(l, &it) {
		out = append(out, it.push())
	}
	return out
}
