package sim

import (
	"maps"
	"slices"
	"strings"

	"github.com/amqpsim/amqpsim/consumer"
	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/queue"
)

// ExchangeDeclare is exchange.declare. kind is direct, fanout, topic or
// headers.
func (ch *Channel) ExchangeDeclare(name, kind string, o ExchangeOptions, opts ...CallOption) error {
	return ch.do(&call{m: protocol.ExchangeDeclare, noWait: noWait(opts), describe: func(e *Event) { e.Exchange, e.Target, e.Options = name, kind, o }, apply: func() error {
		v := ch.conn.vhost
		// RabbitMQ checks the type before the name, so "" with an unknown
		// type is 503 (406 from 3.13), not 403.
		if !o.Passive && !exchangeKinds[kind] {
			code := protocol.CommandInvalid
			if ch.b.profile.UnknownExchangeTypeChannelError {
				code = protocol.PreconditionFailed
			}
			return protocol.Errorf(code, protocol.ExchangeDeclare, "unknown exchange type '%s'", kind)
		}
		if name == "" {
			return protocol.Errorf(protocol.AccessRefused, protocol.ExchangeDeclare, "operation not permitted on the default exchange")
		}
		// A passive declare checks no permission (measured on 3.10.8 and
		// 4.0.5), any from 4.3, before the lookup (measured on 4.3.6).
		if o.Passive {
			if err := ch.checkPassiveAccess(protocol.ExchangeDeclare, "exchange", name); err != nil {
				return err
			}
			_, err := v.exchange(name, protocol.ExchangeDeclare)
			return err
		}
		if err := ch.checkAccess(protocol.ExchangeDeclare, permConfigure, "exchange", name); err != nil {
			return err
		}
		if x, ok := v.exchanges[name]; ok {
			return x.equivalent(v, kind, o)
		}
		if err := reservedName("exchange", name, protocol.ExchangeDeclare); err != nil {
			return err
		}
		if err := o.Args.Validate(); err != nil {
			return protocol.Errorf(protocol.PreconditionFailed, protocol.ExchangeDeclare, "invalid arguments: %v", err)
		}
		if ae, ok := o.Args["alternate-exchange"]; ok {
			if _, isString := ae.(string); !isString {
				return protocol.Errorf(protocol.PreconditionFailed, protocol.ExchangeDeclare,
					"invalid type '%s' for arg 'alternate-exchange' in %s", protocol.TypeName(ae), exchangeResource(name, v.name))
			}
			// A new exchange with an alternate exchange needs read on
			// itself and write on the alternate (rabbit_channel,
			// exchange.declare).
			if err := ch.checkAccess(protocol.ExchangeDeclare, permRead, "exchange", name); err != nil {
				return err
			}
			if err := ch.checkAccess(protocol.ExchangeDeclare, permWrite, "exchange", ae.(string)); err != nil {
				return err
			}
		}
		if err := ch.checkExchangeDeclare(name); err != nil {
			return err
		}
		x := newExchange(name, kind, o)
		x.applyPolicy(v.exchangePolicy(name))
		v.exchanges[name] = x
		return nil
	}, reply: okReply(protocol.ExchangeDeclareOk)})
}

// ExchangeDelete is exchange.delete. Deleting a missing exchange is not an
// error; IfUnused refuses an exchange that has bindings.
func (ch *Channel) ExchangeDelete(name string, o ExchangeDeleteOptions, opts ...CallOption) error {
	return ch.do(&call{m: protocol.ExchangeDelete, noWait: noWait(opts), describe: func(e *Event) { e.Exchange, e.Options = name, o }, apply: func() error {
		v := ch.conn.vhost
		if name == "" {
			return protocol.Errorf(protocol.AccessRefused, protocol.ExchangeDelete, "operation not permitted on the default exchange")
		}
		// rabbit_channel:check_exchange_deletion refuses every "amq." name,
		// existing or not (checked against RabbitMQ 3.10.8).
		if strings.HasPrefix(name, "amq.") {
			return protocol.Errorf(protocol.AccessRefused, protocol.ExchangeDelete, "deletion of system %s not allowed", exchangeResource(name, v.name))
		}
		if err := ch.checkAccess(protocol.ExchangeDelete, permConfigure, "exchange", name); err != nil {
			return err
		}
		if err := ch.checkExchangeDelete(name); err != nil {
			return err
		}
		x, ok := v.exchanges[name]
		if !ok {
			return nil
		}
		if o.IfUnused && x.bindings.len() > 0 {
			return protocol.Errorf(protocol.PreconditionFailed, protocol.ExchangeDelete, "%s in use", exchangeResource(name, v.name))
		}
		ch.b.deleteExchange(v, x)
		return nil
	}, reply: okReply(protocol.ExchangeDeleteOk)})
}

// QueueDeclare is queue.declare. An empty name makes the broker generate
// one ("amq.gen-…"); the returned QueueInfo has it.
func (ch *Channel) QueueDeclare(name string, o QueueOptions, opts ...CallOption) (QueueInfo, error) {
	var info QueueInfo
	err := ch.do(&call{m: protocol.QueueDeclare, noWait: noWait(opts), describe: func(e *Event) { e.Queue, e.Options = name, o }, apply: func() error {
		v := ch.conn.vhost
		if isReplyTo(name) {
			// rabbit_channel answers any declare of the direct reply-to
			// names with 0 messages and 1 consumer.
			info = QueueInfo{Name: name, Consumers: 1}
			return nil
		}
		if o.Passive {
			// From 4.3 a passive declare needs a permission on the name,
			// checked first: "" too (measured on 4.3.6).
			if err := ch.checkPassiveAccess(protocol.QueueDeclare, "queue", name); err != nil {
				return err
			}
			// A passive declare does not expand "" to the channel's last
			// queue: RabbitMQ 3.10.8 answers "no queue '' in vhost '/'".
			if name == "" {
				return protocol.Errorf(protocol.NotFound, protocol.QueueDeclare, "no queue '' in vhost '%s'", v.name)
			}
			q, err := ch.lookupQueue(name, protocol.QueueDeclare)
			if err != nil {
				return err
			}
			info = ch.queueInfo(q)
			ch.lastQueue = q.Name()
			q.Touch() // a declare, passive or not, restarts x-expires
			return nil
		}
		// RabbitMQ checks the "amq." prefix of a client-supplied name only,
		// and before it looks for an existing queue (check_name in
		// rabbit_channel): a generated "amq.gen-…" name is accepted, and a
		// non-passive redeclare of one by name is 403 (checked against
		// RabbitMQ 3.10.8).
		if name == "" {
			// rabbit_channel asks rabbit_amqqueue:is_server_named_allowed/1
			// before anything else.
			if err := queue.CheckServerNamed(o.Args); err != nil {
				return err
			}
			name = ch.b.randomName("amq.gen-")
		} else if err := reservedName("queue", name, protocol.QueueDeclare); err != nil {
			return err
		}
		// configure on the name, the generated one too (measured on
		// 3.10.8: a user who may configure only "^cfg" cannot declare a
		// server-named queue).
		if err := ch.checkAccess(protocol.QueueDeclare, permConfigure, "queue", name); err != nil {
			return err
		}
		// "Durable = DurableDeclare andalso not ExclusiveDeclare": an
		// exclusive queue is never durable (checked against RabbitMQ 3.10.8).
		durable := o.Durable && !o.Exclusive
		if q, ok := v.queues[name]; ok {
			// Exclusivity is checked before the queue's process is
			// called: an exclusive queue whose owner's node crashed
			// answers 405 at once (exclusive-owner-killed-locked.txt).
			if (q.Options().Exclusive && q.owner != ch.conn) || q.Options().Exclusive != o.Exclusive {
				return lockedError(q, protocol.QueueDeclare)
			}
			if err := ch.checkReach(q, protocol.QueueDeclare); err != nil {
				return err
			}
			if err := q.Equivalent(queue.Options{Durable: durable, AutoDelete: o.AutoDelete, Args: o.Args}); err != nil {
				return err
			}
			info = ch.queueInfo(q)
			ch.lastQueue = q.Name()
			q.Touch() // a declare, passive or not, restarts x-expires
			return nil
		}
		// A new queue with a dead-letter exchange needs read on itself
		// and write on the exchange (rabbit_channel, queue.declare).
		if dlx, ok := o.Args["x-dead-letter-exchange"].(string); ok {
			if err := ch.checkAccess(protocol.QueueDeclare, permRead, "queue", name); err != nil {
				return err
			}
			if err := ch.checkAccess(protocol.QueueDeclare, permWrite, "exchange", dlx); err != nil {
				return err
			}
		}
		q, err := ch.b.newQueue(v.name, name, queue.Options{Durable: durable, Exclusive: o.Exclusive, AutoDelete: o.AutoDelete, Args: o.Args})
		if err != nil {
			return err
		}
		// The arguments are checked first (rabbit_amqqueue:declare/7 runs
		// check_declare_arguments, then is_queue_args_combination_permitted);
		// a redeclaration of an existing queue never gets here.
		if ch.b.profile.TransientNonExclusiveDenied && !durable && !o.Exclusive {
			return protocol.Errorf(protocol.InternalError, protocol.QueueDeclare, "%s", transientNonExclusiveText)
		}
		if err := ch.checkMetadata(q); err != nil {
			return err
		}
		if o.Exclusive {
			q.owner = ch.conn
		}
		ch.b.addQueue(v, q, ch.conn.node)
		// Every queue is bound to the default exchange by its name; routing
		// there is a map lookup, so no binding is stored.
		info = QueueInfo{Name: name}
		ch.lastQueue = name
		return nil
	}, reply: func() Push {
		return Push{Method: protocol.QueueDeclareOk, Delivery: Delivery{Queue: info.Name, MessageCount: info.Ready}, Consumers: info.Consumers}
	}})
	if err != nil {
		return QueueInfo{}, err
	}
	return info, nil
}

// addQueue adds a queue newQueue made to its vhost, led by node; the
// policy that matches its name applies. Caller holds the lock.
func (b *Broker) addQueue(v *vhost, q *brokerQueue, node int) {
	b.placeQueue(q, node)
	b.nextQueueID++
	q.id = b.nextQueueID
	v.queues[q.Name()] = q
	if def := v.queuePolicy(q); def != nil {
		q.ApplyPolicy(def)
	}
	q.Touch()
}

// QueueBind is queue.bind. An empty queue name means the last queue declared
// on the channel.
func (ch *Channel) QueueBind(queueName, key, exchangeName string, args Table, opts ...CallOption) error {
	return ch.do(&call{m: protocol.QueueBind, noWait: noWait(opts), describe: func(e *Event) {
		e.Queue, e.RoutingKey, e.Exchange, e.Options = queueName, key, exchangeName, tableOption(args)
	}, apply: func() error {
		x, q, err := ch.bindingEnds(queueName, key, exchangeName, args, protocol.QueueBind)
		if err != nil {
			return err
		}
		if err := ch.checkBindingWrite(protocol.QueueBind); err != nil {
			return err
		}
		x.bind(destination{q: q}, key, args)
		return nil
	}, reply: okReply(protocol.QueueBindOk)})
}

// QueueUnbind is queue.unbind. Removing a binding that does not exist is not
// an error, even when its queue or exchange does not exist (RabbitMQ
// 3.10.8, 4.0.5 and 4.3.6: unbind-missing-ends.txt); the permission checks
// come first.
func (ch *Channel) QueueUnbind(queueName, key, exchangeName string, args Table) error {
	return ch.do(&call{m: protocol.QueueUnbind, describe: func(e *Event) {
		e.Queue, e.RoutingKey, e.Exchange, e.Options = queueName, key, exchangeName, tableOption(args)
	}, apply: func() error {
		x, q, err := ch.bindingEnds(queueName, key, exchangeName, nil, protocol.QueueUnbind)
		if err != nil {
			return err
		}
		if err := ch.checkBindingWrite(protocol.QueueUnbind); err != nil || x == nil || q == nil {
			return err
		}
		if x.unbind(destination{q: q}, key, args) {
			// Only the last binding going deletes an auto-delete
			// exchange: an unbind that removes nothing leaves it
			// (exchange-auto-delete-unbind-nothing.txt).
			ch.b.maybeAutoDeleteExchange(ch.conn.vhost, x)
		}
		return nil
	}, reply: okReply(protocol.QueueUnbindOk)})
}

// bindingEnds finds the two ends of a binding with RabbitMQ's errors, in
// rabbit_channel:binding_action's order: write permission on the queue,
// the default exchange cannot be bound, read permission on the exchange
// (and, for a topic exchange, on the key), then a missing exchange is
// reported before a missing queue (for queue.unbind a missing end is no
// error, and its end is nil); a new binding is validated
// (validateBinding) before the queue's exclusivity is checked, as
// rabbit_binding:add/3 does (RS@v3.10.8 and RS@v4.3.5: "we want to fail
// on that in preference to anything else" comes after validate_binding;
// recorded: topic-hash-wildcard-limit.txt).
func (ch *Channel) bindingEnds(queueName, key, exchangeName string, args Table, m protocol.Method) (*exchange, *brokerQueue, error) {
	v := ch.conn.vhost
	queueName, err := ch.queueName(queueName, m)
	if err != nil {
		return nil, nil, err
	}
	if err := ch.checkAccess(m, permWrite, "queue", queueName); err != nil {
		return nil, nil, err
	}
	if exchangeName == "" {
		return nil, nil, protocol.Errorf(protocol.AccessRefused, m, "operation not permitted on the default exchange")
	}
	if err := ch.checkAccess(m, permRead, "exchange", exchangeName); err != nil {
		return nil, nil, err
	}
	if err := ch.checkTopicAccess(m, permRead, v.exchanges[exchangeName], key); err != nil {
		return nil, nil, err
	}
	if m == protocol.QueueUnbind && (v.exchanges[exchangeName] == nil || v.queues[queueName] == nil) {
		return nil, nil, nil
	}
	x, err := v.exchange(exchangeName, m)
	if err != nil {
		return nil, nil, err
	}
	q, ok := v.queues[queueName]
	if !ok {
		return nil, nil, protocol.Errorf(protocol.NotFound, m, "no queue '%s' in vhost '%s'", queueName, v.name)
	}
	if m == protocol.QueueBind {
		if err := ch.b.validateBinding(x.kind, key, args, m); err != nil {
			return nil, nil, err
		}
	}
	if err := ch.checkExclusive(q, m); err != nil {
		return nil, nil, err
	}
	return x, q, nil
}

// QueuePurge is queue.purge: it removes the ready messages and returns how
// many; unacked deliveries are untouched.
func (ch *Channel) QueuePurge(name string, opts ...CallOption) (int, error) {
	n := 0
	err := ch.do(&call{m: protocol.QueuePurge, noWait: noWait(opts), describe: func(e *Event) { e.Queue = name }, apply: func() error {
		if err := ch.checkQueueAccess(protocol.QueuePurge, permRead, name); err != nil {
			return err
		}
		q, err := ch.lookupQueue(name, protocol.QueuePurge)
		if err != nil {
			return err
		}
		// The queue's type may refuse it (a stream).
		n, err = q.Purge()
		return err
	}, reply: countReply(protocol.QueuePurgeOk, &n)})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// QueueDelete is queue.delete. It returns the number of ready messages
// deleted. Deleting a missing queue is not an error. IfEmpty is checked
// before IfUnused; unacked messages make a queue neither used nor non-empty.
func (ch *Channel) QueueDelete(name string, o QueueDeleteOptions, opts ...CallOption) (int, error) {
	n := 0
	err := ch.do(&call{m: protocol.QueueDelete, noWait: noWait(opts), describe: func(e *Event) { e.Queue, e.Options = name, o }, apply: func() error {
		name, err := ch.queueName(name, protocol.QueueDelete)
		if err != nil {
			return err
		}
		// configure, even for a missing queue (measured on 3.10.8).
		if err := ch.checkAccess(protocol.QueueDelete, permConfigure, "queue", name); err != nil {
			return err
		}
		q, ok := ch.conn.vhost.queues[name]
		if !ok {
			return nil
		}
		if err := ch.checkExclusive(q, protocol.QueueDelete); err != nil {
			return err
		}
		// The queue's type applies if-unused and if-empty, and says what
		// delete-ok counts.
		if n, err = q.CheckDelete(o.IfUnused, o.IfEmpty); err != nil {
			return err
		}
		if err := ch.checkQueueDelete(q); err != nil {
			return err
		}
		ch.b.deleteQueue(q)
		return ch.waitForMembers(q)
	}, reply: countReply(protocol.QueueDeleteOk, &n)})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// deleteQueue removes a queue with its ready messages and bindings, and
// cancels its consumers (telling clients that asked to be told). Its
// deliveries stay in their channels' ledgers, where settling them does
// nothing. Caller holds the lock.
func (b *Broker) deleteQueue(q *brokerQueue) {
	if q.deleted {
		return
	}
	v := b.vhosts[q.Vhost()]
	if b.tracing() {
		e := q.event(EventQueueDeleted, nil)
		e.Count = q.Ready()
		b.record(e)
	}
	q.Delete()
	q.deleted = true
	q.dropHeld()
	q.cluster.suspects = nil
	q.stopTimers()
	delete(v.queues, q.Name())
	if v.routed == q {
		v.routed = nil
	}
	for _, cc := range slices.Clone(q.Consumers()) {
		q.cancelConsumer(cc)
	}
	for _, x := range sortedSources(q.sources) {
		if x.unbindAll(destination{q: q}) {
			b.maybeAutoDeleteExchange(v, x)
		}
	}
}

// cancelConsumer removes consumer cc from q on the broker's side, telling
// its client (basic.cancel) when it takes consumer_cancel_notify and its
// channel is open. Caller holds the lock.
func (q *brokerQueue) cancelConsumer(cc *consumer.Consumer[*Consumer]) {
	cs := cc.Owner()
	q.RemoveConsumer(cc)
	cs.cancelled = true
	ch := cs.ch
	delete(ch.consumers, cc.Tag)
	if _, ok := ch.groups[q]; ok {
		ch.core.Forget(q)
		delete(ch.groups, q)
	}
	if !ch.conn.opts.NoCancelNotify && ch.closed == nil {
		ch.pushCancel(cc.Tag, 0)
	}
}

// sortedSources returns the exchanges of a destination's sources by name,
// for deterministic iteration.
func sortedSources(sources sourceCounts) []*exchange {
	return slices.SortedFunc(maps.Keys(sources), func(a, b *exchange) int { return strings.Compare(a.name, b.name) })
}

// sortedExchanges returns a vhost's exchanges by name, for deterministic
// iteration.
func sortedExchanges(v *vhost) []*exchange {
	names := slices.Sorted(maps.Keys(v.exchanges))
	out := make([]*exchange, len(names))
	for i, n := range names {
		out[i] = v.exchanges[n]
	}
	return out
}

// checkXMatch validates a headers binding's x-match with RabbitMQ 3.10.8's
// errors; m is the binding's method.
func checkXMatch(args Table, m protocol.Method) error {
	v, ok := args["x-match"]
	if !ok {
		return nil
	}
	s, isString := v.(string)
	if !isString {
		return protocol.Errorf(protocol.PreconditionFailed, m,
			"Invalid x-match field type %s (value %v); expected longstr", protocol.TypeName(v), v)
	}
	switch s {
	case "all", "any", "all-with-x", "any-with-x":
		return nil
	}
	return protocol.Errorf(protocol.PreconditionFailed, m,
		"Invalid x-match field value <<\"%s\">>; expected all, any, all-with-x, or any-with-x", s)
}
