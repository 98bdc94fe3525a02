package sim

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/amqpsim/amqpsim/channel"
	"github.com/amqpsim/amqpsim/cluster"
	"github.com/amqpsim/amqpsim/consumer"
	"github.com/amqpsim/amqpsim/internal/scratch"
	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/queue"
)

// Consume is basic.consume. The consumer gets the channel's current
// per-consumer prefetch (the last basic.qos with global=false) and keeps it.
// Deliveries are read with Consumer.Next, or drained with the connection's
// other pushes.
func (ch *Channel) Consume(queueName string, o ConsumeOptions, opts ...CallOption) (*Consumer, error) {
	var cs *Consumer
	err := ch.do(&call{m: protocol.BasicConsume, noWait: noWait(opts), describe: func(e *Event) {
		e.Queue, e.ConsumerTag, e.NoAck, e.Options = queueName, o.Tag, o.NoAck, o
	}, apply: func() error {
		// RabbitMQ checks a client-chosen tag before it looks the queue up
		// (rabbit_channel, basic.consume): reusing a tag against a missing
		// queue is 530, not 404 (checked against RabbitMQ 3.10.8).
		_, dup := ch.consumers[o.Tag]
		if dup && o.Tag != "" {
			return protocol.Errorf(protocol.NotAllowed, protocol.BasicConsume, "attempt to reuse consumer tag '%s'", o.Tag)
		}
		// 4.0's consumer_max_per_channel, checked first when the tag is
		// new, for the reply-to pseudo queue too, which is not counted
		// (rabbit_channel: maps:size(ConsumerMapping) >= MaxConsumers).
		if max := ch.b.cfg.ConsumerMaxPerChannel; max > 0 && !dup && len(ch.consumers) >= max {
			return protocol.Errorf(protocol.NotAllowed, protocol.BasicConsume, "reached maximum (%d) of consumers per channel", max)
		}
		if queueName == ReplyTo {
			var err error
			cs, err = ch.consumeReplyTo(o)
			return err
		}
		if err := ch.checkQueueAccess(protocol.BasicConsume, permRead, queueName); err != nil {
			return err
		}
		q, err := ch.lookupQueue(queueName, protocol.BasicConsume)
		if err != nil {
			return err
		}
		tag := o.Tag
		if tag == "" {
			tag = ch.b.randomName("amq.ctag-")
		}
		if _, dup := ch.consumers[tag]; dup {
			return protocol.Errorf(protocol.NotAllowed, protocol.BasicConsume, "attempt to reuse consumer tag '%s'", tag)
		}
		// The queue's type checks the rest in its order, then the
		// consumer joins.
		limit, _ := ch.core.GlobalLimit()
		req := queue.ConsumeRequest{Args: o.Args, NoAck: o.NoAck, Exclusive: o.Exclusive,
			Prefetch: ch.core.Prefetch(), GlobalLimit: limit, Now: ch.b.now}
		if err := q.Consume(req, func(priority int) *consumer.Consumer[*Consumer] {
			g := ch.groups[q]
			if g == nil {
				g = &consumer.Group[*Consumer]{}
				ch.groups[q] = g
			}
			s := consumer.Settings{Tag: tag, NoAck: o.NoAck, Exclusive: o.Exclusive, Priority: priority}
			if !o.NoAck {
				s.Prefetch = ch.core.Prefetch()
			}
			cs = &Consumer{ch: ch, q: q, tag: tag, queue: q.Name(), args: o.Args, followsClock: ch.b.cfg.Clock != nil}
			cs.core = consumer.New(s, g, cs)
			ch.consumers[tag] = cs
			ch.order = append(ch.order, cs)
			return cs.core
		}); err != nil {
			return err
		}
		q.Touch()
		ch.b.markDirty(q)
		return nil
	}, reply: func() Push { return Push{Method: protocol.BasicConsumeOk, Delivery: Delivery{ConsumerTag: cs.Tag()}} }})
	if err != nil {
		return nil, err
	}
	return cs, nil
}

// Cancel is basic.cancel. The consumer's unacked deliveries stay on the
// channel, to be settled or requeued when it closes. An unknown tag is not
// an error. Cancelling the last consumer of an auto-delete queue deletes it.
func (ch *Channel) Cancel(tag string, opts ...CallOption) error {
	return ch.do(&call{m: protocol.BasicCancel, noWait: noWait(opts), describe: func(e *Event) { e.ConsumerTag = tag }, apply: func() error {
		if ch.reply != nil && ch.reply.tag == tag {
			ch.cancelReplyTo()
			return nil
		}
		cs, ok := ch.consumers[tag]
		if !ok {
			return nil
		}
		q := cs.q
		q.RemoveConsumer(cs.core)
		cs.cancelled = true
		delete(ch.consumers, tag)
		if q.Options().AutoDelete && q.ConsumerCount() == 0 {
			ch.b.deleteQueue(q)
			return nil
		}
		q.Touch()
		ch.b.markDirty(q)
		return nil
	}, reply: func() Push { return Push{Method: protocol.BasicCancelOk, Delivery: Delivery{ConsumerTag: tag}} }})
}

// Publish is basic.publish. A mandatory message that reaches no queue comes
// back as a basic.return (312 NO_ROUTE); in confirm mode every publish is
// then confirmed. A body larger than Broker.MaxMessageSize closes the
// channel with RabbitMQ's 406.
func (ch *Channel) Publish(exchangeName, key string, o PublishOptions, m Message) error {
	return ch.publish(exchangeName, key, o, m, uint64(len(m.Body)))
}

// PublishTooLarge is basic.publish of a message whose content header
// announced a body of size bytes, more than Broker.MaxMessageSize, which
// the shell did not keep: the broker refuses it as Publish refuses such
// a body, after the checks RabbitMQ makes before the size. A size within
// the limit is a Go error, and nothing happens.
func (ch *Channel) PublishTooLarge(exchangeName, key string, o PublishOptions, size uint64) error {
	if max := ch.b.MaxMessageSize(); size <= max {
		return fmt.Errorf("sim: PublishTooLarge of %d bytes, within the broker's max message size %d", size, max)
	}
	return ch.publish(exchangeName, key, o, Message{}, size)
}

// publish is basic.publish of m, whose body has size bytes.
func (ch *Channel) publish(exchangeName, key string, o PublishOptions, m Message, size uint64) error {
	ch.b.mu.Lock()
	if err := ch.closed; err != nil {
		ch.b.mu.Unlock()
		return err
	}
	if ch.held() || ch.conn.holdsPublish(size) {
		return ch.hold(ch.publishCall(exchangeName, key, o, m, size))
	}
	ch.start()
	if ch.b.tracing() {
		ch.b.record(ch.publishEvent(exchangeName, key, o, &m))
	}
	return ch.end(ch.publishIn(exchangeName, key, o, &m, size))
}

// publishEvent is the trace event of a publish.
func (ch *Channel) publishEvent(exchangeName, key string, o PublishOptions, m *Message) Event {
	e := ch.callEvent(protocol.BasicPublish)
	e.Exchange, e.RoutingKey, e.Options = exchangeName, key, o
	e.Body, e.Properties = ch.b.ownCopy(m)
	return e
}

// publishCall is a publish as the channel queues it, with its own copy of
// the message: the publisher may reuse its buffers once Publish returns.
func (ch *Channel) publishCall(exchangeName, key string, o PublishOptions, m Message, size uint64) *call {
	body, props := ch.b.ownCopy(&m)
	m.Body = body
	if props != nil {
		m.Properties = *props
	}
	return &call{m: protocol.BasicPublish,
		describe: func(e *Event) { *e = ch.publishEvent(exchangeName, key, o, &m) },
		apply:    func() error { return ch.publishIn(exchangeName, key, o, &m, size) }}
}

// publishChecks checks a publish's topic permission, reply-to, user-id,
// expiration and CC and BCC headers in its release's order
// (Profile.PublishChecksMessageFirst), and returns the expiration. Up to
// 3.13 (RS@v3.10.8 rabbit_channel handle_method basic.publish): the
// topic permission, the reply-to (maybe_set_fast_reply_to as the content
// is decoded), the user-id, the expiration, then the message's headers.
func (ch *Channel) publishChecks(x *exchange, key string, m *Message) (ttl time.Duration, hasTTL bool, err error) {
	if ch.b.profile.PublishChecksMessageFirst {
		if err := ch.replyToFor(m); err != nil {
			return 0, false, err
		}
		if ttl, hasTTL, err = parseExpiration(m.Expiration); err != nil {
			return 0, false, err
		}
		if err := checkRoutingHeaders(m.Headers); err != nil {
			return 0, false, err
		}
		// The topic permission covers every routing key of the message:
		// the CC and BCC ones too (check_write_permitted_on_topics/4 over
		// mc:routing_keys/1; users-topic-permissions-cc.txt).
		for _, k := range routingKeys(key, m.Headers, nil) {
			if err := ch.checkTopicAccess(protocol.BasicPublish, permWrite, x, k); err != nil {
				return 0, false, err
			}
		}
		return ttl, hasTTL, ch.checkUserID(m.UserID)
	}
	if err := ch.checkTopicAccess(protocol.BasicPublish, permWrite, x, key); err != nil {
		return 0, false, err
	}
	if err := ch.replyToFor(m); err != nil {
		return 0, false, err
	}
	if err := ch.checkUserID(m.UserID); err != nil {
		return 0, false, err
	}
	if ttl, hasTTL, err = parseExpiration(m.Expiration); err != nil {
		return 0, false, err
	}
	return ttl, hasTTL, checkRoutingHeaders(m.Headers)
}

// publishIn is publish within the call.
func (ch *Channel) publishIn(exchangeName, key string, o PublishOptions, m *Message, size uint64) error {
	// rabbit_channel, basic.publish: immediate has its own clause;
	// the size is checked first in the other.
	if o.Immediate {
		return protocol.Errorf(protocol.NotImplemented, protocol.BasicPublish, "immediate=true")
	}
	if err := ch.b.checkMessageSize(size); err != nil {
		return err
	}
	// rabbit_channel, basic.publish: write on the exchange before
	// it is looked up, then internal, then publishChecks.
	if err := ch.checkAccess(protocol.BasicPublish, permWrite, "exchange", exchangeName); err != nil {
		return err
	}
	x, err := ch.conn.vhost.exchange(exchangeName, protocol.BasicPublish)
	if err != nil {
		return err
	}
	if x.internal {
		return protocol.Errorf(protocol.AccessRefused, protocol.BasicPublish, "cannot publish to internal %s", exchangeResource(x.name, ch.conn.vhost.name))
	}
	ttl, hasTTL, err := ch.publishChecks(x, key, m)
	if err != nil {
		return err
	}
	if ch.tx != nil {
		return ch.tx.hold(ch.b, ch.conn.vhost, x, exchangeName, key, o, *m, ttl, hasTTL)
	}
	if ch.confirming && ch.b.nackNext > 0 {
		ch.b.nackNext--
		if ch.b.tracing() {
			e := connEvent(EventPublishRejected, ch.conn, ch.id)
			e.Exchange, e.RoutingKey, e.Body, e.Reason = exchangeName, key, m.Body, "nack injected"
			ch.b.record(e)
		}
		ch.published(exchangeName, key, PublishOptions{}, m, 0, true, confirmQueued)
		return nil
	}
	ch.b.publisher = ch
	routed, rejected, stage, err := ch.b.publish(ch.conn.vhost, x, key, m, ttl, hasTTL)
	ch.b.publisher = nil
	if err != nil {
		return err
	}
	ch.published(exchangeName, key, o, m, routed, rejected, stage)
	return nil
}

// NackPublishes makes the broker refuse the next n publishes made in
// confirm mode (outside transactions), on any channel: each is dropped
// before routing and confirmed with basic.nack, as RabbitMQ nacks a
// message its queue could not take. A fault for testing a publisher's
// handling of nacks; the trace shows each as an EventPublishRejected with
// Reason "nack injected". A later call replaces the count.
func (b *Broker) NackPublishes(n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.nackNext = max(n, 0)
}

// published sends what a routed publish owes its publisher: basic.return
// (312 NO_ROUTE) of a mandatory message that reached no queue, and in
// confirm mode the confirm, a nack when a queue refused it (x-overflow
// reject-publish): at once when no queue took the message, otherwise
// when the connection is next idle, at the stage the queues confirm it
// (see confirmStage).
func (ch *Channel) published(exchangeName, key string, o PublishOptions, m *Message, routed int, rejected bool, stage confirmStage) {
	if routed == 0 && o.Mandatory {
		// The publisher may reuse its buffer once Publish returns.
		r := *m
		r.Body = append([]byte(nil), m.Body...)
		ch.push(Push{Method: protocol.BasicReturn, ReplyCode: protocol.NoRoute, ReplyText: "NO_ROUTE",
			Delivery: Delivery{Exchange: exchangeName, RoutingKey: key, Message: r}})
	}
	if !ch.confirming {
		return
	}
	ch.publishTag++
	if w := ch.b.heldNow; w != nil {
		// A replicated queue out of reach holds the message: the confirm
		// waits for it (cluster.go).
		ch.b.heldNow = nil
		w.tag, w.nack = ch.publishTag, rejected
		ch.holding = append(ch.holding, w.tag)
		return
	}
	if stage == confirmAtOnce && !rejected {
		// The channel confirms it itself, after the return, before it
		// reads its next method: alone, so without multiple.
		ch.push(Push{Method: protocol.BasicAck, Delivery: Delivery{DeliveryTag: ch.publishTag}})
		return
	}
	ch.ready.confirm(ch.publishTag, rejected, stage == confirmLate)
	ch.conn.pendingConfirms++
}

// Publish routes a message through an exchange of vhost without a channel,
// as the management API's publish does: no confirms, no returns. It fails
// for a missing vhost or exchange, and with the 406 a channel's publish
// gets for a body larger than MaxMessageSize.
func (b *Broker) Publish(vhostName, exchangeName, key string, m Message) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	v, err := b.lookupVhost(vhostName)
	if err != nil {
		return err
	}
	x, err := v.exchange(exchangeName, protocol.BasicPublish)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrNoExchange, err)
	}
	if err := b.checkMessageSize(uint64(len(m.Body))); err != nil {
		return err
	}
	ttl, hasTTL, err := parseExpiration(m.Expiration)
	if err != nil {
		return err
	}
	if b.tracing() {
		b.tracePublish(v, exchangeName, key, &m)
	}
	_, _, _, err = b.publish(v, x, key, &m, ttl, hasTTL)
	b.flush()
	return err
}

// tracePublish records Publish's event. Out of line, as the other trace
// events of the hot paths are: an Event is large, and an untraced call's
// frame need not hold one.
func (b *Broker) tracePublish(v *vhost, exchangeName, key string, m *Message) {
	e := Event{Kind: EventPublish, Vhost: v.name, Exchange: exchangeName, RoutingKey: key}
	e.Body, e.Properties = b.ownCopy(m)
	b.record(e)
}

// publish routes m and enqueues it in every queue it reaches, returning how
// many queues it reached (a direct reply-to counts), whether any refused
// it (x-overflow reject-publish), and when a publisher would be sent its
// confirm (a direct reply-to alone is taken as a message that reached no
// queue, confirmed at once; not measured), or routing's error, when
// nothing is enqueued. ttl is the message's own TTL. Caller holds the
// lock.
func (b *Broker) publish(v *vhost, x *exchange, key string, m *Message, ttl time.Duration, hasTTL bool) (routed int, rejected bool, stage confirmStage, err error) {
	replied := false
	if x.name == "" && isReplyTo(key) { // the default exchange: routing cannot fail
		replied = b.deliverReply(key, x, m)
	}
	b.routeKeys = routingKeys(key, m.Headers, b.routeKeys[:0])
	b.routed, err = b.route(v, x, b.routeKeys, m.Headers, b.routed[:0])
	if err != nil {
		scratch.Zero(b.routed)
		return 0, false, confirmAtOnce, err
	}
	var id uint64
	if len(b.routed) > 0 {
		id = b.newMessageID()
	}
	routed, rejected, stage, crashed := b.enqueue(b.routed, x, key, m, ttl, hasTTL, id)
	scratch.Zero(b.routed)
	if crashed {
		return 0, false, confirmAtOnce, protocol.ChannelCrash()
	}
	if replied {
		routed++
	}
	return routed, rejected, stage, nil
}

// enqueue puts m, the message id (newMessageID), into the queues routing
// chose, skipping deleted ones; the body is copied once and shared, and
// BCC is removed. It returns how many queues took it, whether any refused
// it, and the stage of its confirm; or crashed when converting m for a
// stream crashes the publishing channel (Rules.ConversionCrashes), after
// the classic and quorum queues took it, as rabbit_queue_type:deliver
// hands a message to the types in that order.
func (b *Broker) enqueue(queues []*brokerQueue, x *exchange, key string, m *Message, ttl time.Duration, hasTTL bool, id uint64) (routed int, rejected bool, stage confirmStage, crashed bool) {
	if len(queues) == 0 {
		return 0, false, confirmAtOnce, false
	}
	// Only a header converts badly: a message without any, as most are,
	// looks no further.
	crashed = len(m.Headers) > 0 && slices.ContainsFunc(queues, func(q *brokerQueue) bool { return q.caps.StoresAMQP10 }) &&
		b.profile.Queue.ConversionCrashes(m.Headers)
	body, props := b.ownCopy(m)
	if props != nil {
		delete(props.Headers, "BCC")
	}
	// Each queue's process takes the message in the reverse of routing's
	// order: rabbit_classic_queue:deliver's qpids and delegate's
	// grouping by node each build their list by prepending, and quorum
	// queues' commands go out in the order of rabbit_queue_type's
	// grouping, which prepends too. The queue that takes it first delivers
	// first, so its consumer's delivery tag is the lower one on a channel
	// that consumes from both (recorded, cc-delivery-order.txt; RabbitMQ's
	// schedulers can still swap two classic queues now and then). A
	// queue that delivers after consensus (a quorum queue) dispatches after
	// the others: a stream's reader hears of its write sooner than a
	// quorum queue commits, whatever the names (races/stream-before-quorum.txt:
	// 32 of 36 publishes on 3.10.8, 4.0.5 and 4.3.6; fuzz seed 18002).
	// Dead-lettering (deadLetter) and a cluster's held publishes keep
	// routing's reverse order: no recording shows theirs.
	for i := len(queues) - 1; i >= 0; i-- {
		q := queues[i]
		if q.deleted || crashed && q.caps.StoresAMQP10 {
			continue
		}
		if b.clustered() {
			if r := b.reach(q, b.publishingNode()); r == cluster.StoppedHome || r == cluster.Lost {
				// A classic queue whose home is out of reach: the
				// channel nacks the message, and never returns it
				// (measured on 4.3.6, docs/cluster.md section 2).
				routed++
				rejected = true
				continue
			}
		}
		qm := b.newMessage()
		qm.ID, qm.Exchange, qm.RoutingKey, qm.Properties, qm.Body = id, x.name, key, props, body
		if b.clustered() && b.holdPublish(q, func() bool { b.markDirty(q); return q.Publish(qm, int64(ttl), hasTTL) }) {
			routed++
			continue
		}
		if !q.Publish(qm, int64(ttl), hasTTL) {
			rejected = true
		}
		routed++
		stage = max(stage, q.confirmStage(m.DeliveryMode == 2))
		if q.caps.DeliversAfterConsensus && len(queues) > 1 {
			b.consensus = append(b.consensus, q)
			continue
		}
		b.markDirty(q)
	}
	for _, q := range b.consensus {
		b.markDirty(q)
	}
	scratch.Zero(b.consensus)
	b.consensus = b.consensus[:0]
	return routed, rejected, stage, crashed
}

// newMessageID returns the id of a new published message: every copy of
// it has the same. Caller holds the lock.
func (b *Broker) newMessageID() uint64 {
	b.nextMessageID++
	return b.nextMessageID
}

// messageBlock is how many message records newMessage allocates at once.
const messageBlock = 32

// newMessage returns a zero message record for a publish, carved from
// blocks of messageBlock: one allocation serves that many publishes. A
// block stays alive while any of its messages does. Caller holds the lock.
func (b *Broker) newMessage() *queue.Message {
	if len(b.msgBlock) == 0 {
		b.msgBlock = make([]queue.Message, messageBlock)
	}
	m := &b.msgBlock[0]
	b.msgBlock = b.msgBlock[1:]
	return m
}

// ownCopy returns the broker's copies of a published message's body and
// properties (nil when it has none), for the queues and the trace: the
// publisher may reuse its buffer and its headers map once Publish returns.
// Caller holds the lock.
func (b *Broker) ownCopy(m *Message) ([]byte, *protocol.Properties) {
	body := b.copyBody(m.Body)
	if isZeroProperties(&m.Properties) {
		return body, nil
	}
	p := m.Properties
	p.Headers = maps.Clone(p.Headers)
	return body, &p
}

// Bodies of at most smallBody bytes are copied into blocks of bodyBlock.
const (
	smallBody = 512
	bodyBlock = 8192
)

// copyBody returns the broker's copy of body. A small body is carved from
// a block, as newMessage carves message records: one allocation serves
// many publishes, and a block stays alive while any of its bodies does.
// The copy's capacity is its length, so that an append to it cannot
// reach the next body. Caller holds the lock.
func (b *Broker) copyBody(body []byte) []byte {
	n := len(body)
	if n == 0 || n > smallBody {
		return append(make([]byte, 0, n), body...)
	}
	if n > len(b.bodyBlock) {
		b.bodyBlock = make([]byte, bodyBlock)
	}
	c := b.bodyBlock[:n:n]
	b.bodyBlock = b.bodyBlock[n:]
	copy(c, body)
	return c
}

// isZeroProperties reports whether p has no property. An empty headers
// table is one, as on the wire: RabbitMQ stores it, and a 4.3 quorum queue
// counts its 4 bytes (measured on 4.3.6 with a raw socket).
func isZeroProperties(p *protocol.Properties) bool {
	return p.ContentType == "" && p.ContentEncoding == "" && p.Headers == nil && p.DeliveryMode == 0 &&
		p.Priority == 0 && p.CorrelationID == "" && p.ReplyTo == "" && p.Expiration == "" &&
		p.MessageID == "" && p.Timestamp.IsZero() && p.Type == "" && p.UserID == "" && p.AppID == "" && p.ClusterID == ""
}

// Get is basic.get. It is not limited by either prefetch window. ok is false
// for basic.get-empty. Without noAck the delivery joins the channel's unacked
// deliveries like any other. The reply also waits in the outbox, in its
// place, for Connection.Drain.
func (ch *Channel) Get(queueName string, noAck bool) (d Delivery, ok bool, err error) {
	err = ch.do(&call{m: protocol.BasicGet, describe: func(e *Event) { e.Queue, e.NoAck = queueName, noAck }, apply: func() error {
		if err := ch.checkQueueAccess(protocol.BasicGet, permRead, queueName); err != nil {
			return err
		}
		q, err := ch.lookupQueue(queueName, protocol.BasicGet)
		if err != nil {
			return err
		}
		// The queue's type may refuse basic.get (a stream, a quorum
		// single active consumer queue). What a quorum queue's no-ack
		// get expires behind the taken message is dead-lettered after
		// get-ok: the reply leaves the queue before the dead letters
		// reach their queues (a classic queue drops them first).
		b := ch.b
		b.holdDeadLetters = noAck && q.caps.DeliversAfterConsensus
		ok, err = q.Get(!noAck, func(m *queue.Message, redelivered bool) {
			tag := ch.core.NextTag()
			if !noAck {
				ch.core.Record(channel.Delivery[delivery]{Tag: tag, Queue: q.id, At: ch.b.now, Ref: delivery{q: q, m: m}})
				if q.caps.ConsumerTimeout {
					ch.armTick()
				}
			}
			d = makeDelivery("", tag, redelivered, q.Name(), m)
		})
		held := b.deadLetters
		b.holdDeadLetters, b.deadLetters = false, nil
		defer func() {
			for _, dl := range held {
				b.deadLetter(dl.q, dl.m, dl.reason, nil)
			}
		}()
		if err != nil {
			return err
		}
		if !ok {
			ch.pushReply(Push{Method: protocol.BasicGetEmpty})
			return nil
		}
		b.markDirty(q)
		// The count is taken after the expired messages behind the head
		// were dropped.
		d.MessageCount = q.Ready()
		ch.pushReply(Push{Method: protocol.BasicGetOk, Delivery: d})
		ch.delivered(q.Name(), "", false)
		return nil
	}})
	return d, ok, err
}

// pushReply pushes the reply of a method that answers with content or
// after pushes of its own (basic.get, tx.commit): it waits in the outbox
// in order, where a shell takes it with Drain; the in-process caller also
// has it as the method's result.
func (ch *Channel) pushReply(p Push) { ch.push(p) }

// Ack is basic.ack; multiple acks every delivery up to and including tag,
// and tag 0 with multiple acks all.
func (ch *Channel) Ack(tag uint64, multiple bool) error {
	return ch.settleCall(protocol.BasicAck, tag, multiple, false, queue.Ack)
}

// Nack is basic.nack: requeue returns the messages to their original
// positions; otherwise they are dead-lettered or dropped.
func (ch *Channel) Nack(tag uint64, multiple, requeue bool) error {
	return ch.settleCall(protocol.BasicNack, tag, multiple, requeue, rejectSettlement(requeue))
}

// Reject is basic.reject of one delivery.
func (ch *Channel) Reject(tag uint64, requeue bool) error {
	// 4.3 counts a basic.reject as a failed delivery, a basic.nack not
	// (queue.Rules.SplitDeliveryCount, ClassicDeliveryCount).
	how := queue.RejectFailed
	if requeue {
		how = queue.RequeueFailed
	}
	return ch.settleCall(protocol.BasicReject, tag, false, requeue, how)
}

// settleCall is the call of a settlement by method m (basic.ack, nack or
// reject); requeue is the method's own flag, for the trace.
func (ch *Channel) settleCall(m protocol.Method, tag uint64, multiple, requeue bool, how queue.Settlement) error {
	if err := ch.begin(); err != nil {
		if err == errHeld {
			return ch.hold(&call{m: m, describe: func(e *Event) { settleEvent(e, m, tag, multiple, requeue) },
				apply: func() error { return ch.settle(m, tag, multiple, how) }})
		}
		return err
	}
	if ch.b.tracing() {
		ch.traceSettleCall(m, tag, multiple, requeue)
	}
	return ch.end(ch.settle(m, tag, multiple, how))
}

// traceSettleCall records the call event of a settlement (out of line:
// see tracePublish).
func (ch *Channel) traceSettleCall(m protocol.Method, tag uint64, multiple, requeue bool) {
	e := ch.callEvent(m)
	settleEvent(&e, m, tag, multiple, requeue)
	ch.b.record(e)
}

// settleEvent fills in the trace event of a settlement by method m.
func settleEvent(e *Event, m protocol.Method, tag uint64, multiple, requeue bool) {
	e.DeliveryTag, e.Multiple = tag, multiple
	if m != protocol.BasicAck {
		e.Requeue = requeue
	}
}

func rejectSettlement(requeue bool) queue.Settlement {
	if requeue {
		return queue.Requeue
	}
	return queue.Reject
}

// Recover is basic.recover: every unacked delivery on the channel is
// requeued. RabbitMQ refuses requeue=false with 540, closing the connection.
func (ch *Channel) Recover(requeue bool) error { return ch.recover(protocol.BasicRecover, requeue) }

// RecoverAsync is the deprecated basic.recover-async: Recover without a
// reply; requeue=false is the same 540, naming basic.recover-async.
func (ch *Channel) RecoverAsync(requeue bool) error {
	return ch.recover(protocol.BasicRecoverAsync, requeue)
}

func (ch *Channel) recover(m protocol.Method, requeue bool) error {
	c := &call{m: m, describe: func(e *Event) { e.Requeue = requeue }, apply: func() error {
		if !requeue {
			return protocol.Errorf(protocol.NotImplemented, m, "requeue=false")
		}
		// A queue's type may refuse to requeue its deliveries (a 3.10
		// stream crashes the channel).
		if err := ch.checkSettle(ch.core.Deliveries(), m, queue.Requeue); err != nil {
			return err
		}
		ch.apply(ch.core.TakeAll(), queue.Requeue)
		return nil
	}}
	if m == protocol.BasicRecover {
		c.reply = func() Push { return Push{Method: protocol.BasicRecoverOk} }
	}
	return ch.do(c)
}

func (ch *Channel) settle(m protocol.Method, tag uint64, multiple bool, how queue.Settlement) error {
	ds, err := ch.core.Settle(m, tag, multiple, ch.settled[:0])
	if err != nil {
		return err
	}
	// A queue's type may refuse the settlement (a 3.10 stream takes only
	// acks): nothing is settled, and the deliveries stay the channel's,
	// to go back to their queues with the rest when the error closes it
	// (a stream's count of unacked deliveries leaked one per refused
	// delivery: fuzz seeds 2054 and 2075). A transaction only stages the
	// settlement: the queue's type is asked at the commit (TxCommit).
	if ch.tx == nil && mayRefuse(ds) {
		if err := ch.checkSettle(ds, m, how); err != nil {
			ch.core.Restore(ds)
			clear(ds)
			return err
		}
	}
	if ch.tx != nil {
		ch.tx.settles = append(ch.tx.settles, heldSettle{ds: slices.Clone(ds), how: how})
		clear(ds)
		return nil
	}
	ch.apply(ds, how)
	// Only the references keep anything of weight alive (a queue, a
	// message, a consumer; the consumer tag at most a short string):
	// clearing them alone is cheaper than clearing the whole delivery,
	// on every settlement.
	for i := range ds {
		ds[i].Ref = delivery{}
	}
	ch.settled = ds[:0]
	return nil
}

// mayRefuse reports whether a queue of deliveries ds may refuse their
// settlement (queue.Caps.RefusesSettlements), so that checkSettle must
// ask: small enough to inline, this costs the settlements no queue can
// refuse, most of them, no call.
func mayRefuse(ds []channel.Delivery[delivery]) bool {
	for i := range ds {
		if ds[i].Ref.q.caps.RefusesSettlements {
			return true
		}
	}
	return false
}

// checkSettle asks the queues of deliveries ds, in order, whether their
// types take a settlement by method m, and returns the first refusal. A
// deleted queue's deliveries are ignored, as their settlement is, and so
// are those the channel lost with their queue's node.
func (ch *Channel) checkSettle(ds []channel.Delivery[delivery], m protocol.Method, how queue.Settlement) error {
	for i := range ds {
		d := &ds[i] // a Delivery is large: not copied per iteration
		if q := d.Ref.q; q.caps.RefusesSettlements && !q.deleted && !ch.lostDelivery(d.Ref, d.Tag) {
			if err := q.CheckSettle(m, how); err != nil {
				return err
			}
		}
	}
	return nil
}

// apply settles deliveries taken from the ledger the way RabbitMQ's channel
// does. The limiter hears of the settlement first. Then the deliveries are
// settled in RabbitMQ's groups (channel.Groups), each group's queue giving
// credit back and dispatching before the next group is settled. Last, the
// queues the limiter released resume.
//
// A quorum queue's settlements wait for consensus, a classic queue's do
// not: the channel sends each queue its part at once, and what the classic
// queues deliver back reaches it first (recorded on 3.10.8, 4.0.5 and
// 4.3.6: settle-classic-before-quorum.txt). So the groups of the queues
// that deliver after consensus settle last, each still dispatching before
// the next (each is a command of its own, checked out on its own).
func (ch *Channel) apply(ds []channel.Delivery[delivery], how queue.Settlement) {
	released := ch.core.Released(ds)
	if len(ds) == 1 {
		// One delivery is one group, whatever its queue's type: an ack of
		// one delivery, the common case, needs no sort and no closure.
		ch.settleGroup(ds, how)
	} else {
		ch.settleGroups(ds, how)
	}
	ch.resumeConsumers(released)
	ch.syncTick()
}

// settleGroups is apply's settlement of several deliveries: their groups
// in RabbitMQ's order, those of the queues that deliver after consensus
// last.
func (ch *Channel) settleGroups(ds []channel.Delivery[delivery], how queue.Settlement) {
	late := false
	channel.Groups(ds, func(group []channel.Delivery[delivery]) {
		if group[0].Ref.q.caps.DeliversAfterConsensus {
			late = true
		} else {
			ch.settleGroup(group, how)
		}
	})
	if late {
		channel.Groups(ds, func(group []channel.Delivery[delivery]) {
			if group[0].Ref.q.caps.DeliversAfterConsensus {
				ch.settleGroup(group, how)
			}
		})
	}
}

// settleGroup settles one group of deliveries of one queue and dispatches
// the queue.
func (ch *Channel) settleGroup(group []channel.Delivery[delivery], how queue.Settlement) {
	b := ch.b
	q := group[0].Ref.q
	if b.tracing() {
		ch.traceSettle(group, how)
	}
	if q.deleted {
		return
	}
	settled := b.settled[:0]
	for i := range group {
		d := &group[i] // a Delivery is large: not copied per iteration
		if ch.lostDelivery(d.Ref, d.Tag) {
			continue // the queue took it back when the channel lost it
		}
		settled = append(settled, queue.Settled[*Consumer]{Message: d.Ref.m, Consumer: d.Ref.c, Tag: d.Tag})
	}
	// A queue dispatches before what a reject or nack dead-letters
	// reaches another queue: its next delivery reaches the channel in one
	// hop, a dead letter in two (the queue publishes it, its target
	// delivers it), so 3.10.8, 4.0.5 and 4.3.6 give the reject's next
	// delivery the lower tag (dlx-reject-next-delivery-first.txt).
	b.holdDeadLetters = !how.Requeues()
	q.Settle(settled, how)
	held := b.deadLetters
	b.holdDeadLetters, b.deadLetters = false, nil
	scratch.Zero(settled)
	b.settled = settled[:0]
	b.markDirty(q)
	b.flush()
	if len(held) == 0 {
		return
	}
	for _, d := range held {
		b.deadLetter(d.q, d.m, d.reason, nil)
	}
	b.flush()
}

// traceSettle records the settle events of a group (out of line: see
// tracePublish).
func (ch *Channel) traceSettle(group []channel.Delivery[delivery], how queue.Settlement) {
	q := group[0].Ref.q
	for _, d := range group {
		e := connEvent(EventSettle, ch.conn, ch.id)
		e.DeliveryTag, e.Queue, e.Requeue, e.ConsumerTag = d.Tag, q.Name(), how.Requeues(), d.ConsumerTag
		e.MessageID, e.Body = d.Ref.m.ID, d.Ref.m.Body
		ch.b.record(e)
	}
}

// MaxMessageSizeCap is the most RabbitMQ takes for max_message_size,
// 512 MiB (rabbit_channel:get_max_message_size/0, ?MAX_MSG_SIZE).
const MaxMessageSizeCap = 536870912

// MaxMessageSize returns the largest body a publish may carry:
// Config.MaxMessageSize, or the release's default, at most
// MaxMessageSizeCap. A shell asks it before it reads a body, so as not to
// buffer one the broker will refuse (see PublishTooLarge).
func (b *Broker) MaxMessageSize() uint64 { return b.maxMessageSize }

// maxMessageSize is MaxMessageSize, from the configuration.
func (cfg Config) maxMessageSize(p *Profile) uint64 {
	n := cfg.MaxMessageSize
	if n == 0 {
		n = p.MaxMessageSize
	}
	return min(n, MaxMessageSizeCap)
}

// checkMessageSize is rabbit_channel:check_msg_size/2: a body of size
// bytes over the limit is refused with 406. RabbitMQ drops "configured"
// from the text when the limit is the 512 MiB cap; amqpsim keeps it.
func (b *Broker) checkMessageSize(size uint64) error {
	if size > b.maxMessageSize {
		return messageTooLarge(size, b.maxMessageSize)
	}
	return nil
}

// messageTooLarge is checkMessageSize's refusal. It is kept out of line
// (the compiler would inline it) so that checkMessageSize inlines into
// every publish.
//
//go:noinline
func messageTooLarge(size, max uint64) error {
	return protocol.Errorf(protocol.PreconditionFailed, protocol.BasicPublish,
		"message size %d is larger than configured max size %d", size, max)
}
