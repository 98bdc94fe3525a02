package sim

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/amqpsim/amqpsim/channel"
	"github.com/amqpsim/amqpsim/consumer"
	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/queue"
)

// Consume is basic.consume. The consumer gets the channel's current
// per-consumer prefetch (the last basic.qos with global=false) and keeps it.
// Deliveries are read with Consumer.Next, or reach the connection's sink.
func (ch *Channel) Consume(queueName string, o ConsumeOptions) (*Consumer, error) {
	var cs *Consumer
	err := ch.do(protocol.BasicConsume, func() string {
		return fmt.Sprintf("%q tag=%q no-ack=%t exclusive=%t args=%v", queueName, o.Tag, o.NoAck, o.Exclusive, o.Args)
	}, func() error {
		// RabbitMQ checks a client-chosen tag before it looks the queue up
		// (rabbit_channel, basic.consume): reusing a tag against a missing
		// queue is 530, not 404 (checked against RabbitMQ 3.10.8).
		if _, dup := ch.consumers[o.Tag]; dup && o.Tag != "" {
			return protocol.Errorf(protocol.NotAllowed, protocol.BasicConsume, "attempt to reuse consumer tag '%s'", o.Tag)
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
		priority := 0
		if v, ok := o.Args["x-priority"]; ok {
			n, isInt := protocol.Int(v)
			if !isInt {
				// rabbit_amqqueue:check_int_arg formats "expected integer,
				// got <type>" and the channel prints it with ~p, quotes
				// included (checked against RabbitMQ 3.10.8).
				return protocol.Errorf(protocol.PreconditionFailed, protocol.BasicConsume, "invalid arg 'x-priority' for %s: \"expected integer, got %s\"", q.Resource(), protocol.TypeName(v))
			}
			priority = int(n)
		}
		if err := q.AdmitConsumer(o.Exclusive); err != nil {
			return err
		}
		g := ch.groups[q]
		if g == nil {
			g = &consumer.Group{Ref: q}
			ch.groups[q] = g
		}
		cs = &Consumer{ch: ch, q: q}
		cs.core = consumer.Consumer{Tag: tag, NoAck: o.NoAck, Exclusive: o.Exclusive, Priority: priority, Group: g, Ref: cs}
		if !o.NoAck {
			cs.core.Prefetch = ch.core.Prefetch
		}
		ch.consumers[tag] = cs
		ch.order = append(ch.order, cs)
		q.AddConsumer(&cs.core)
		ch.b.touchExpires(q)
		ch.b.markDirty(q)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return cs, nil
}

// Cancel is basic.cancel. The consumer's unacked deliveries stay on the
// channel, to be settled or requeued when it closes. An unknown tag is not
// an error. Cancelling the last consumer of an auto-delete queue deletes it.
func (ch *Channel) Cancel(tag string) error {
	return ch.do(protocol.BasicCancel, func() string { return fmt.Sprintf("%q", tag) }, func() error {
		cs, ok := ch.consumers[tag]
		if !ok {
			return nil
		}
		ch.cancel(cs)
		return nil
	})
}

func (ch *Channel) cancel(cs *Consumer) {
	q := cs.q
	q.RemoveConsumer(&cs.core)
	cs.cancelled = true
	delete(ch.consumers, cs.core.Tag)
	if q.AutoDelete && q.ConsumerCount() == 0 {
		ch.b.deleteQueue(q)
		return
	}
	ch.b.touchExpires(q)
	ch.b.markDirty(q)
}

// Publish is basic.publish. A mandatory message that reaches no queue comes
// back as a Return (312 NO_ROUTE); in confirm mode every publish is then
// confirmed.
func (ch *Channel) Publish(exchangeName, key string, o PublishOptions, m Message) error {
	return ch.do(protocol.BasicPublish, func() string { return fmt.Sprintf("exchange=%q key=%q mandatory=%t", exchangeName, key, o.Mandatory) }, func() error {
		if o.Immediate {
			return protocol.Errorf(protocol.NotImplemented, protocol.BasicPublish, "immediate=true")
		}
		x, err := ch.conn.vhost.exchange(exchangeName, protocol.BasicPublish)
		if err != nil {
			return err
		}
		if x.internal {
			return protocol.Errorf(protocol.AccessRefused, protocol.BasicPublish, "cannot publish to internal %s", exchangeResource(x.name, ch.conn.vhost.name))
		}
		ttl, hasTTL, err := parseExpiration(m.Expiration)
		if err != nil {
			return err
		}
		routed, rejected := ch.b.publish(ch.conn.vhost, x, key, m, ttl, hasTTL)
		if routed == 0 && o.Mandatory {
			ch.conn.push(Return{Channel: ch.id, ReplyCode: protocol.NoRoute, ReplyText: "NO_ROUTE", Exchange: exchangeName, RoutingKey: key, Message: m})
		}
		if ch.confirming {
			// A queue that refused the message (x-overflow reject-publish)
			// makes the confirm a nack.
			ch.publishTag++
			ch.conn.push(Confirm{Channel: ch.id, DeliveryTag: ch.publishTag, Nack: rejected})
		}
		return nil
	})
}

// Publish routes a message through an exchange of vhost "/" without a
// channel, as the management API's publish does: no confirms, no returns.
// It fails only for a missing exchange.
func (b *Broker) Publish(exchangeName, key string, m Message) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	v := b.vhosts["/"]
	x, err := v.exchange(exchangeName, protocol.BasicPublish)
	if err != nil {
		return err
	}
	ttl, hasTTL, err := parseExpiration(m.Expiration)
	if err != nil {
		return err
	}
	if !b.cfg.NoTrace {
		b.event(nil, 0, "publish", "exchange=%q key=%q", exchangeName, key)
	}
	b.publish(v, x, key, m, ttl, hasTTL)
	b.flush()
	return nil
}

// publish routes m and enqueues it in every queue it reaches, returning how
// many queues it reached and whether any refused it (x-overflow
// reject-publish). ttl is the message's own TTL. The body is copied once and
// shared. Caller holds the lock.
func (b *Broker) publish(v *vhost, x *exchange, key string, m Message, ttl time.Duration, hasTTL bool) (routed int, rejected bool) {
	b.routed = v.route(x, key, m.Headers, b.routed[:0])
	// Sender-selected distribution: the CC and BCC headers (arrays of
	// strings) add routing keys; BCC is removed before delivery.
	for _, h := range [...]string{"CC", "BCC"} {
		if keys, ok := m.Headers[h].([]any); ok {
			for _, k := range keys {
				if k, ok := k.(string); ok {
					b.routed = v.route(x, k, m.Headers, b.routed)
				}
			}
		}
	}
	if len(b.routed) == 0 {
		return 0, false
	}
	body := append([]byte(nil), m.Body...)
	var props *protocol.Properties
	if !isZeroProperties(&m.Properties) {
		p := m.Properties
		if len(p.Headers) > 0 {
			// The broker keeps its own copy: the publisher may reuse its map.
			p.Headers = maps.Clone(p.Headers)
			delete(p.Headers, "BCC")
		}
		props = &p
	}
	for _, q := range b.routed {
		if !b.enqueue(q, &queue.Message{Exchange: x.name, RoutingKey: key, Properties: props, Body: body}, ttl, hasTTL) {
			rejected = true
		}
	}
	routed = len(b.routed)
	clear(b.routed)
	return routed, rejected
}

func isZeroProperties(p *protocol.Properties) bool {
	return p.ContentType == "" && p.ContentEncoding == "" && len(p.Headers) == 0 && p.DeliveryMode == 0 &&
		p.Priority == 0 && p.CorrelationID == "" && p.ReplyTo == "" && p.Expiration == "" &&
		p.MessageID == "" && p.Timestamp.IsZero() && p.Type == "" && p.UserID == "" && p.AppID == "" && p.ClusterID == ""
}

// Get is basic.get. It is not limited by either prefetch window. ok is false
// for basic.get-empty. Without noAck the delivery joins the channel's unacked
// deliveries like any other.
func (ch *Channel) Get(queueName string, noAck bool) (d Delivery, ok bool, err error) {
	err = ch.do(protocol.BasicGet, func() string { return fmt.Sprintf("%q no-ack=%t", queueName, noAck) }, func() error {
		q, err := ch.lookupQueue(queueName, protocol.BasicGet)
		if err != nil {
			return err
		}
		// basic.get restarts the queue's x-expires timer.
		ch.b.touchExpires(q)
		// Like RabbitMQ's fetch, take the head even if it has expired
		// (its TTL timer has not fired yet: in a priority queue it may
		// be set for a later message), and drop what expired only
		// afterwards.
		m, redelivered := q.Fetch(!noAck)
		if m == nil {
			ch.b.event(ch.conn, ch.id, "basic.get-empty", "")
			return nil
		}
		tag := ch.core.NextTag()
		if !noAck {
			ch.core.Record(channel.Delivery{Tag: tag, Queue: q, Message: m, At: ch.b.now})
			ch.syncTick()
		}
		// Drop what expired behind the message before counting what
		// is left.
		ch.b.dropExpired(q)
		ch.b.markDirty(q)
		d = delivery("", tag, redelivered, m)
		d.MessageCount = q.Ready()
		ok = true
		ch.b.event(ch.conn, ch.id, "basic.get-ok", "tag=%d redelivered=%t left=%d body=%q", tag, redelivered, d.MessageCount, m.Body)
		return nil
	})
	return d, ok, err
}

func delivery(ctag string, tag uint64, redelivered bool, m *queue.Message) Delivery {
	d := Delivery{ConsumerTag: ctag, DeliveryTag: tag, Redelivered: redelivered, Exchange: m.Exchange, RoutingKey: m.RoutingKey}
	d.Body = m.Body
	if m.Properties != nil {
		d.Properties = *m.Properties
	}
	return d
}

// Ack is basic.ack; multiple acks every delivery up to and including tag,
// and tag 0 with multiple acks all.
func (ch *Channel) Ack(tag uint64, multiple bool) error {
	return ch.do(protocol.BasicAck, func() string { return fmt.Sprintf("tag=%d multiple=%t", tag, multiple) }, func() error {
		return ch.settle(protocol.BasicAck, tag, multiple, false)
	})
}

// Nack is basic.nack: requeue returns the messages to their original
// positions; otherwise they are dropped.
func (ch *Channel) Nack(tag uint64, multiple, requeue bool) error {
	return ch.do(protocol.BasicNack, func() string { return fmt.Sprintf("tag=%d multiple=%t requeue=%t", tag, multiple, requeue) }, func() error {
		return ch.settle(protocol.BasicNack, tag, multiple, requeue)
	})
}

// Reject is basic.reject of one delivery.
func (ch *Channel) Reject(tag uint64, requeue bool) error {
	return ch.do(protocol.BasicReject, func() string { return fmt.Sprintf("tag=%d requeue=%t", tag, requeue) }, func() error {
		return ch.settle(protocol.BasicReject, tag, false, requeue)
	})
}

// Recover is basic.recover: every unacked delivery on the channel is
// requeued. RabbitMQ refuses requeue=false with 540, closing the connection.
func (ch *Channel) Recover(requeue bool) error {
	return ch.do(protocol.BasicRecover, func() string { return fmt.Sprintf("requeue=%t", requeue) }, func() error {
		if !requeue {
			return protocol.Errorf(protocol.NotImplemented, protocol.BasicRecover, "requeue=false")
		}
		ch.apply(ch.core.TakeAll(), true, false)
		return nil
	})
}

func (ch *Channel) settle(m protocol.Method, tag uint64, multiple, requeue bool) error {
	ds, err := ch.core.Settle(m, tag, multiple, ch.settled[:0])
	if err != nil {
		return err
	}
	ch.apply(ds, requeue, m != protocol.BasicAck && !requeue)
	clear(ds)
	ch.settled = ds[:0]
	return nil
}

// apply settles deliveries taken from the ledger the way RabbitMQ's channel
// does. The limiter hears of the settlement first. Then the deliveries are
// settled one (queue, consumer tag) group at a time — queues in creation
// order, each basic.get delivery alone in tag order, then consumer tags in
// ascending order (see groupEnd) — and each group's queue gives credit back and dispatches
// before the next group is settled: RabbitMQ sends each group to its queue
// as one message, so the redeliveries of one group precede the requeue of
// the next (measured on RabbitMQ 3.10.8 with basic.recover and nack
// multiple). Last, the groups the limiter released resume.
//
// A nack or reject without requeue (reject) dead-letters the messages with
// reason "rejected"; an ack (neither) just forgets them.
func (ch *Channel) apply(ds []channel.Delivery, requeue, reject bool) {
	released := ch.core.Released(ds)
	if len(ds) > 1 {
		slices.SortStableFunc(ds, func(x, y channel.Delivery) int {
			if c := cmp.Compare(x.Queue.ID, y.Queue.ID); c != 0 {
				return c
			}
			return strings.Compare(consumerTag(x), consumerTag(y))
		})
	}
	for i := 0; i < len(ds); {
		j := groupEnd(ds, i)
		ch.settleGroup(ds[i:j], requeue, reject)
		i = j
	}
	ch.resume(released)
	ch.syncTick()
}

// groupEnd returns the end of the settlement group that starts at ds[i]:
// the deliveries of one queue and one consumer tag. Each basic.get delivery
// is a group of its own: RabbitMQ keys a get's pending ack by its delivery
// tag, so every get is requeued and dispatched in turn (checked against
// RabbitMQ 3.10.8: get m1, get m2, nack m1 with requeue, get m1, then nack
// all with requeue gives a prefetch-1 consumer m2, not m1).
func groupEnd(ds []channel.Delivery, i int) int {
	q, tag := ds[i].Queue, consumerTag(ds[i])
	j := i + 1
	if tag == "" {
		return j
	}
	for j < len(ds) && ds[j].Queue == q && consumerTag(ds[j]) == tag {
		j++
	}
	return j
}

// settleGroup settles one group of deliveries of one queue, gives their
// consumers credit back and dispatches the queue.
func (ch *Channel) settleGroup(group []channel.Delivery, requeue, reject bool) {
	b := ch.b
	q := group[0].Queue
	credited := b.credited[:0]
	for _, d := range group {
		if !b.cfg.NoTrace {
			b.event(ch.conn, ch.id, "settled", "tag=%d queue=%s requeue=%t body=%q", d.Tag, q.Name, requeue, d.Message.Body)
		}
		if q.Deleted {
			continue
		}
		if requeue {
			q.Requeue(d.Message)
		} else {
			q.Settle(d.Message)
			if reject {
				b.deadLetter(q, d.Message, "rejected")
			}
		}
		if d.Consumer != nil {
			credited = append(credited, d.Consumer)
		}
	}
	if !q.Deleted {
		q.Credit(credited)
		if requeue {
			// requeue_and_run: drop-head, then drop_expired_msgs.
			q.DropOverLimit(b.maxlenFn)
			b.dropExpired(q)
		}
		b.markDirty(q)
		b.flush()
	}
	clear(credited)
	b.credited = credited[:0]
}

func consumerTag(d channel.Delivery) string {
	if d.Consumer == nil {
		return ""
	}
	return d.Consumer.Tag
}

// allow is the channel-wide limiter's can_send for a consumer; caller holds
// the lock.
func (b *Broker) allow(c *consumer.Consumer) bool {
	ch := c.Ref.(*Consumer).ch
	if ch.closed != nil { // its connection is closing (Connection.shutdown)
		return false
	}
	return ch.core.Limiter.Allow(c.Group, !c.NoAck)
}

// deliver sends a message to a consumer: a delivery tag, a ledger entry
// unless no-ack, and basic.deliver to the client. Caller holds the lock.
func (b *Broker) deliver(c *consumer.Consumer, m *queue.Message, redelivered bool) {
	cs := c.Ref.(*Consumer)
	ch := cs.ch
	tag := ch.core.NextTag()
	if !c.NoAck {
		ch.core.Record(channel.Delivery{Tag: tag, Queue: cs.q, Message: m, Consumer: c, At: b.now})
		ch.syncTick()
	}
	d := delivery(c.Tag, tag, redelivered, m)
	if !b.cfg.NoTrace {
		b.tracePush(ch.conn, Deliver{Channel: ch.id, Delivery: d})
	}
	if sink := ch.conn.opts.Sink; sink != nil {
		sink(Deliver{Channel: ch.id, Delivery: d})
		return
	}
	cs.push(d)
}
