package wire

import (
	"bytes"
	"errors"
	"reflect"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// The method handlers of a channel, grouped by class. Each one converts the
// frame's arguments, calls the broker, and queues the reply unless the call
// failed or the client asked for no-wait. A failed call needs nothing more:
// the broker has already pushed the channel.close or connection.close
// RabbitMQ sends for it, and drops the methods of a channel it closed.

// channelMethod applies a method (with its content, for basic.publish) on
// an open channel, or holds it back behind the channel's pending call.
func (c *serverConn) channelMethod(cs *chanState, m Method) {
	c.call(func() (outItem, bool) {
		ct := callContent{props: &cs.props, body: cs.content, size: cs.size}
		if len(cs.parked) > 0 {
			cs.park(m, ct)
			return outItem{}, false
		}
		return c.applyOrPark(cs, m, ct)
	})
}

// applyOrPark applies m, and holds it back when the broker's channel
// waits in a call (sim.ErrPending): it is applied again when the channel
// resumes (sim.Push.Resumed), as RabbitMQ's channel process takes the
// frames from its mailbox once its call returns. Caller is in call.
func (c *serverConn) applyOrPark(cs *chanState, m Method, ct callContent) (outItem, bool) {
	cs.call = ct
	it, ok := c.apply(cs, m)
	cs.call = callContent{}
	if cs.deferred {
		cs.deferred = false
		cs.park(m, ct)
		return outItem{}, false
	}
	return it, ok
}

// callContent is a content method's properties and body: the reader's
// while it is in the call, a copy once held back.
type callContent struct {
	props *protocol.Properties
	body  []byte
	size  uint64
}

// parkedMethod is a method held back, with its content.
type parkedMethod struct {
	m  Method
	ct callContent
}

// park holds m back: a copy, since the reader decodes the next method
// into the same scratch, with a copy of its body.
func (cs *chanState) park(m Method, ct callContent) {
	v := reflect.New(reflect.TypeOf(m).Elem())
	v.Elem().Set(reflect.ValueOf(m).Elem())
	props := *ct.props
	ct.props, ct.body = &props, bytes.Clone(ct.body)
	cs.parked = append(cs.parked, parkedMethod{m: v.Interface().(Method), ct: ct})
}

// unpark applies the methods held back on channel id, in order, until
// one is held back again. Caller holds callMu, not mu.
func (c *serverConn) unpark(id uint16) {
	cs, ok := c.chans[id]
	if !ok {
		return
	}
	for len(cs.parked) > 0 {
		p, rest := cs.parked[0], cs.parked[1:]
		cs.parked = nil
		it, ok := c.applyOrPark(cs, p.m, p.ct)
		if len(cs.parked) > 0 { // held back again, in front of the rest
			cs.parked = append(cs.parked, rest...)
			return
		}
		cs.parked = rest
		if ok {
			c.mu.Lock()
			c.out = append(c.out, it)
			c.mu.Unlock()
		}
	}
}

// reply is the reply item for a broker call's result: none when the call
// failed or the client asked for no-wait. A call the broker answers later
// (sim.ErrPending) is held back.
func reply(cs *chanState, err error, noWait bool, m Method) (outItem, bool) {
	if errors.Is(err, sim.ErrPending) {
		cs.deferred = true
	}
	if err != nil || noWait {
		return outItem{}, false
	}
	return methodItem(cs.id, m), true
}

// pending notes a broker call answered later (sim.ErrPending), for a
// method with no reply.
func pending(cs *chanState, err error) {
	if errors.Is(err, sim.ErrPending) {
		cs.deferred = true
	}
}

// apply calls the broker for m and returns the reply to send, if any.
// Caller is in call.
func (c *serverConn) apply(cs *chanState, m Method) (outItem, bool) {
	ch := cs.sim
	switch m := m.(type) {
	case *ChannelOpen:
		_, _ = c.sc.OpenChannel(cs.id) // a second open: the broker closes the connection
	case *ChannelClose:
		// A channel the broker closed answers close-ok too, and stays
		// until the client's close-ok.
		err := ch.Close()
		if errors.Is(err, sim.ErrPending) {
			return reply(cs, err, false, nil)
		}
		if err == nil && !ch.Closing() {
			cs.gone.Store(true)
		}
		return methodItem(cs.id, &ChannelCloseOk{}), true
	case *ChannelCloseOk:
		err := ch.CloseOk()
		pending(cs, err)
		if err == nil {
			cs.gone.Store(true)
		}
	case *ChannelFlow:
		return reply(cs, ch.Flow(m.Active), false, &ChannelFlowOk{Active: m.Active})
	case *ExchangeDeclare:
		o := sim.ExchangeOptions{Passive: m.Passive, Durable: m.Durable, AutoDelete: m.AutoDelete, Internal: m.Internal, Args: m.Arguments}
		return reply(cs, ch.ExchangeDeclare(m.Exchange, m.Type, o), m.NoWait, &ExchangeDeclareOk{})
	case *ExchangeDelete:
		return reply(cs, ch.ExchangeDelete(m.Exchange, sim.ExchangeDeleteOptions{IfUnused: m.IfUnused}), m.NoWait, &ExchangeDeleteOk{})
	case *QueueDeclare:
		o := sim.QueueOptions{Passive: m.Passive, Durable: m.Durable, Exclusive: m.Exclusive, AutoDelete: m.AutoDelete, Args: m.Arguments}
		info, err := ch.QueueDeclare(m.Queue, o)
		return reply(cs, err, m.NoWait, &QueueDeclareOk{Queue: info.Name, MessageCount: uint32(info.Ready), ConsumerCount: uint32(info.Consumers)})
	case *QueueBind:
		return reply(cs, ch.QueueBind(m.Queue, m.RoutingKey, m.Exchange, m.Arguments), m.NoWait, &QueueBindOk{})
	case *QueueUnbind:
		return reply(cs, ch.QueueUnbind(m.Queue, m.RoutingKey, m.Exchange, m.Arguments), false, &QueueUnbindOk{})
	case *QueuePurge:
		n, err := ch.QueuePurge(m.Queue)
		return reply(cs, err, m.NoWait, &QueuePurgeOk{MessageCount: uint32(n)})
	case *QueueDelete:
		n, err := ch.QueueDelete(m.Queue, sim.QueueDeleteOptions{IfUnused: m.IfUnused, IfEmpty: m.IfEmpty})
		return reply(cs, err, m.NoWait, &QueueDeleteOk{MessageCount: uint32(n)})
	case *BasicQos:
		return reply(cs, ch.Qos(int(m.PrefetchCount), int(m.PrefetchSize), m.Global), false, &BasicQosOk{})
	case *BasicConsume:
		o := sim.ConsumeOptions{Tag: m.ConsumerTag, NoAck: m.NoAck, Exclusive: m.Exclusive, Args: m.Arguments}
		cons, err := ch.Consume(m.Queue, o)
		if err != nil {
			return reply(cs, err, false, nil)
		}
		return reply(cs, nil, m.NoWait, &BasicConsumeOk{ConsumerTag: cons.Tag()})
	case *BasicCancel:
		return reply(cs, ch.Cancel(m.ConsumerTag), m.NoWait, &BasicCancelOk{ConsumerTag: m.ConsumerTag})
	case *BasicPublish:
		o := sim.PublishOptions{Mandatory: m.Mandatory, Immediate: m.Immediate}
		if cs.call.size > c.maxBody { // not kept: the broker refuses it by its size
			pending(cs, ch.PublishTooLarge(m.Exchange, m.RoutingKey, o, cs.call.size))
			break
		}
		pending(cs, ch.Publish(m.Exchange, m.RoutingKey, o, sim.Message{Properties: *cs.call.props, Body: cs.call.body}))
	case *BasicGet:
		_, _, err := ch.Get(m.Queue, m.NoAck) // the reply is in the outbox
		pending(cs, err)
	case *BasicAck:
		pending(cs, ch.Ack(m.DeliveryTag, m.Multiple))
	case *BasicNack:
		pending(cs, ch.Nack(m.DeliveryTag, m.Multiple, m.Requeue))
	case *BasicReject:
		pending(cs, ch.Reject(m.DeliveryTag, m.Requeue))
	case *BasicRecover:
		return reply(cs, ch.Recover(m.Requeue), false, &BasicRecoverOk{})
	case *BasicRecoverAsync:
		pending(cs, ch.RecoverAsync(m.Requeue))
	case *ConfirmSelect:
		return reply(cs, ch.Confirm(), m.NoWait, &ConfirmSelectOk{})
	case *TxSelect:
		return reply(cs, ch.Tx(), false, &TxSelectOk{})
	case *TxCommit:
		pending(cs, ch.TxCommit()) // commit-ok is in the outbox, after the commit's returns
	case *TxRollback:
		return reply(cs, ch.TxRollback(), false, &TxRollbackOk{})
	case *ExchangeBind:
		return reply(cs, ch.ExchangeBind(m.Destination, m.RoutingKey, m.Source, m.Arguments), m.NoWait, &ExchangeBindOk{})
	case *ExchangeUnbind:
		return reply(cs, ch.ExchangeUnbind(m.Destination, m.RoutingKey, m.Source, m.Arguments), m.NoWait, &ExchangeUnbindOk{})
	default:
		// Methods only a server sends, and connection methods on a
		// channel other than 0.
		c.connError(protocol.Errorf(protocol.CommandInvalid, m.ID(), "unimplemented method"))
	}
	return outItem{}, false
}
