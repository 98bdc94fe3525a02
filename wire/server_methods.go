package wire

import (
	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// The method handlers of a channel, grouped by class. Each one converts the
// frame's arguments, calls the broker, and queues the reply unless the call
// failed or the client asked for no-wait. A failed call needs nothing more:
// the broker has already pushed the channel.close or connection.close
// RabbitMQ sends for it, and drops the methods of a channel it closed.

// channelMethod applies a method (with its content, for basic.publish) on
// an open channel.
func (c *serverConn) channelMethod(cs *chanState, m Method) {
	c.call(func() (outItem, bool) { return c.apply(cs, m) })
}

// reply is the reply item for a broker call's result: none when the call
// failed or the client asked for no-wait.
func reply(cs *chanState, err error, noWait bool, m Method) (outItem, bool) {
	if err != nil || noWait {
		return outItem{}, false
	}
	return methodItem(cs.id, m), true
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
		if ch.Close() == nil && !ch.Closing() {
			delete(c.chans, cs.id)
		}
		return methodItem(cs.id, &ChannelCloseOk{}), true
	case *ChannelCloseOk:
		if ch.CloseOk() == nil {
			delete(c.chans, cs.id)
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
			return outItem{}, false
		}
		return reply(cs, nil, m.NoWait, &BasicConsumeOk{ConsumerTag: cons.Tag()})
	case *BasicCancel:
		return reply(cs, ch.Cancel(m.ConsumerTag), m.NoWait, &BasicCancelOk{ConsumerTag: m.ConsumerTag})
	case *BasicPublish:
		o := sim.PublishOptions{Mandatory: m.Mandatory, Immediate: m.Immediate}
		if cs.size > c.maxBody { // not kept: the broker refuses it by its size
			_ = ch.PublishTooLarge(m.Exchange, m.RoutingKey, o, cs.size)
			break
		}
		_ = ch.Publish(m.Exchange, m.RoutingKey, o, sim.Message{Properties: cs.props, Body: cs.content})
	case *BasicGet:
		_, _, _ = ch.Get(m.Queue, m.NoAck) // the reply is in the outbox
	case *BasicAck:
		_ = ch.Ack(m.DeliveryTag, m.Multiple)
	case *BasicNack:
		_ = ch.Nack(m.DeliveryTag, m.Multiple, m.Requeue)
	case *BasicReject:
		_ = ch.Reject(m.DeliveryTag, m.Requeue)
	case *BasicRecover:
		return reply(cs, ch.Recover(m.Requeue), false, &BasicRecoverOk{})
	case *BasicRecoverAsync:
		_ = ch.RecoverAsync(m.Requeue)
	case *ConfirmSelect:
		return reply(cs, ch.Confirm(), m.NoWait, &ConfirmSelectOk{})
	case *TxSelect:
		return reply(cs, ch.Tx(), false, &TxSelectOk{})
	case *TxCommit:
		_ = ch.TxCommit() // commit-ok is in the outbox, after the commit's returns
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
