package sim

import (
	"strings"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/queue"
)

// Direct reply-to (RabbitMQ's amq.rabbitmq.reply-to pseudo-queue): a
// channel consumes from it, with no-ack; a request published on that
// channel with reply_to "amq.rabbitmq.reply-to" has it rewritten to a name
// of the channel's own; a reply published through the default exchange to
// that name goes straight to the channel's reply consumer, without a
// queue. Measured on RabbitMQ 3.10.8 (rabbit_channel reply_consumer).

// ReplyTo is the pseudo-queue of direct reply-to.
const ReplyTo = "amq.rabbitmq.reply-to"

// isReplyTo reports whether name is the pseudo-queue or a reply name.
func isReplyTo(name string) bool { return name == ReplyTo || strings.HasPrefix(name, ReplyTo+".") }

// replyConsumer is a channel's consumer of amq.rabbitmq.reply-to.
type replyConsumer struct {
	tag  string
	name string // the reply name requests get: amq.rabbitmq.reply-to.<suffix>
	cons *Consumer
}

// consumeReplyTo is basic.consume of amq.rabbitmq.reply-to; caller holds
// the lock.
func (ch *Channel) consumeReplyTo(o ConsumeOptions) (*Consumer, error) {
	switch {
	case ch.reply != nil:
		return nil, protocol.Errorf(protocol.PreconditionFailed, protocol.BasicConsume, "reply consumer already set")
	case !o.NoAck:
		return nil, protocol.Errorf(protocol.PreconditionFailed, protocol.BasicConsume, "reply consumer cannot acknowledge")
	}
	tag := o.Tag
	if tag == "" {
		tag = ch.b.randomName("amq.ctag-")
	}
	name := ch.b.randomName(ReplyTo+".") + "." + ch.b.randomName("")
	cs := &Consumer{ch: ch, tag: tag, queue: ReplyTo, followsClock: ch.b.cfg.Clock != nil}
	ch.reply = &replyConsumer{tag: tag, name: name, cons: cs}
	ch.b.replies[name] = ch
	return cs, nil
}

// cancelReplyTo drops the channel's reply consumer; caller holds the lock.
func (ch *Channel) cancelReplyTo() {
	if ch.reply != nil {
		delete(ch.b.replies, ch.reply.name)
		ch.reply.cons.cancelled = true
		ch.reply = nil
	}
}

// replyToFor rewrites a request's reply_to "amq.rabbitmq.reply-to" to the
// channel's reply name; without a reply consumer it is RabbitMQ's 406.
func (ch *Channel) replyToFor(m *Message) error {
	if m.ReplyTo != ReplyTo {
		return nil
	}
	if ch.reply == nil {
		return protocol.Errorf(protocol.PreconditionFailed, protocol.BasicPublish, "fast reply consumer does not exist")
	}
	m.ReplyTo = ch.reply.name
	return nil
}

// deliverReply sends a message published to the default exchange with a
// reply name to that name's reply consumer, if it still exists, and
// reports whether it counts as routed: in RabbitMQ 3.10 it does not, so a
// mandatory reply also comes back as basic.return; from 4.2 a delivered
// reply counts (Profile.ReplyToMandatoryRouted). Caller holds the lock.
func (b *Broker) deliverReply(key string, x *exchange, m *Message) (routed bool) {
	ch := b.replies[key]
	if ch == nil || ch.closed != nil {
		return false
	}
	b.nextMessageID++
	body, props := b.ownCopy(m)
	qm := &queue.Message{ID: b.nextMessageID, Exchange: x.name, RoutingKey: key, Properties: props, Body: body}
	ch.pushDelivery(ch.reply.cons, ch.core.NextTag(), false, qm, false)
	return b.profile.ReplyToMandatoryRouted
}
