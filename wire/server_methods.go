package wire

import (
	"errors"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// The method handlers of a channel. Each one converts the frame's
// arguments and calls the broker, which pushes the reply to the outbox
// (unless the client asked for no-wait), in order with everything else it
// sends, or the channel.close or connection.close RabbitMQ sends for a
// failed call; it drops the methods of a channel it closed, and queues
// those of a channel that waits (sim.ErrQueued), answering them later.

// channelMethod applies a method (with its content, for basic.publish) on
// an open channel. The broker answers it in the outbox, in order: at once,
// or later when its channel waits (sim.ErrQueued).
func (c *serverConn) channelMethod(cs *chanState, m Method) {
	c.call(func() (outItem, bool) { return c.apply(cs, m) })
}

// noWait is a method's nowait flag as the broker takes it.
func noWait(set bool) []sim.CallOption {
	if set {
		return noWaitOption
	}
	return nil
}

var noWaitOption = []sim.CallOption{sim.NoWait}

// apply calls the broker for m. The broker pushes the reply
// (sim.ShellOptions.Replies), or the close a failed call ends with;
// apply returns a reply to send only for what the broker does not answer
// itself. Caller is in call.
func (c *serverConn) apply(cs *chanState, m Method) (outItem, bool) {
	ch := cs.sim
	switch m := m.(type) {
	case *ChannelOpen:
		_, _ = c.sc.OpenChannel(cs.id) // a second open: the broker closes the connection
	case *ChannelClose:
		// A channel the broker closed answers close-ok too, and stays
		// until the client's close-ok (the drain forgets a channel
		// whose close-ok leaves it closed).
		if err := ch.Close(); errors.Is(err, sim.ErrClosed) {
			return methodItem(cs.id, &ChannelCloseOk{}), true
		}
	case *ChannelCloseOk:
		if ch.CloseOk() == nil {
			cs.gone.Store(true)
		}
	case *ChannelFlow:
		_ = ch.Flow(m.Active)
	case *ExchangeDeclare:
		o := sim.ExchangeOptions{Passive: m.Passive, Durable: m.Durable, AutoDelete: m.AutoDelete, Internal: m.Internal, Args: m.Arguments}
		_ = ch.ExchangeDeclare(m.Exchange, m.Type, o, noWait(m.NoWait)...)
	case *ExchangeDelete:
		_ = ch.ExchangeDelete(m.Exchange, sim.ExchangeDeleteOptions{IfUnused: m.IfUnused}, noWait(m.NoWait)...)
	case *QueueDeclare:
		o := sim.QueueOptions{Passive: m.Passive, Durable: m.Durable, Exclusive: m.Exclusive, AutoDelete: m.AutoDelete, Args: m.Arguments}
		_, _ = ch.QueueDeclare(m.Queue, o, noWait(m.NoWait)...)
	case *QueueBind:
		_ = ch.QueueBind(m.Queue, m.RoutingKey, m.Exchange, m.Arguments, noWait(m.NoWait)...)
	case *QueueUnbind:
		_ = ch.QueueUnbind(m.Queue, m.RoutingKey, m.Exchange, m.Arguments)
	case *QueuePurge:
		_, _ = ch.QueuePurge(m.Queue, noWait(m.NoWait)...)
	case *QueueDelete:
		_, _ = ch.QueueDelete(m.Queue, sim.QueueDeleteOptions{IfUnused: m.IfUnused, IfEmpty: m.IfEmpty}, noWait(m.NoWait)...)
	case *BasicQos:
		_ = ch.Qos(int(m.PrefetchCount), int(m.PrefetchSize), m.Global)
	case *BasicConsume:
		o := sim.ConsumeOptions{Tag: m.ConsumerTag, NoAck: m.NoAck, Exclusive: m.Exclusive, Args: m.Arguments}
		_, _ = ch.Consume(m.Queue, o, noWait(m.NoWait)...)
	case *BasicCancel:
		_ = ch.Cancel(m.ConsumerTag, noWait(m.NoWait)...)
	case *BasicPublish:
		o := sim.PublishOptions{Mandatory: m.Mandatory, Immediate: m.Immediate}
		if cs.size > c.maxBody { // not kept: the broker refuses it by its size
			_ = ch.PublishTooLarge(m.Exchange, m.RoutingKey, o, cs.size)
			break
		}
		_ = ch.Publish(m.Exchange, m.RoutingKey, o, sim.Message{Properties: cs.props, Body: cs.content})
	case *BasicGet:
		_, _, _ = ch.Get(m.Queue, m.NoAck)
	case *BasicAck:
		_ = ch.Ack(m.DeliveryTag, m.Multiple)
	case *BasicNack:
		_ = ch.Nack(m.DeliveryTag, m.Multiple, m.Requeue)
	case *BasicReject:
		_ = ch.Reject(m.DeliveryTag, m.Requeue)
	case *BasicRecover:
		_ = ch.Recover(m.Requeue)
	case *BasicRecoverAsync:
		_ = ch.RecoverAsync(m.Requeue)
	case *ConfirmSelect:
		_ = ch.Confirm(noWait(m.NoWait)...)
	case *TxSelect:
		_ = ch.Tx()
	case *TxCommit:
		_ = ch.TxCommit()
	case *TxRollback:
		_ = ch.TxRollback()
	case *ExchangeBind:
		_ = ch.ExchangeBind(m.Destination, m.RoutingKey, m.Source, m.Arguments, noWait(m.NoWait)...)
	case *ExchangeUnbind:
		_ = ch.ExchangeUnbind(m.Destination, m.RoutingKey, m.Source, m.Arguments, noWait(m.NoWait)...)
	default:
		// Methods only a server sends, and connection methods on a
		// channel other than 0.
		c.connError(protocol.Errorf(protocol.CommandInvalid, m.ID(), "unimplemented method"))
	}
	return outItem{}, false
}
