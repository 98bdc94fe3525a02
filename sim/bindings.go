package sim

import (
	"slices"
	"strings"

	"github.com/amqpsim/amqpsim/protocol"
)

// routingKeys returns a message's routing keys: key, then by
// sender-selected distribution those of its CC and BCC headers (arrays of
// strings), appended to buf.
func routingKeys(key string, headers Table, buf []string) []string {
	buf = append(buf, key)
	if len(headers) == 0 {
		return buf
	}
	for _, h := range [...]string{"CC", "BCC"} {
		if keys, ok := headers[h].([]any); ok {
			for _, k := range keys {
				if k, ok := k.(string); ok {
					buf = append(buf, k)
				}
			}
		}
	}
	return buf
}

// checkRoutingHeaders refuses CC and BCC headers that are not arrays, as
// rabbit_basic:header_routes/1 does when the channel makes the message
// ("invalid message: {unacceptable_type_in_header,"CC",longstr}", 406,
// on 3.10.8, 4.0.5 and 4.3.6: publish-cc-bcc-types.txt); elements of an
// array that are not strings are skipped (routingKeys).
func checkRoutingHeaders(headers Table) error {
	if len(headers) == 0 {
		return nil
	}
	for _, h := range [...]string{"CC", "BCC"} {
		v, ok := headers[h]
		if !ok {
			continue
		}
		if _, ok := v.([]any); !ok {
			return protocol.Errorf(protocol.PreconditionFailed, protocol.BasicPublish,
				"invalid message: {unacceptable_type_in_header,\"%s\",%s}", h, protocol.TypeName(v))
		}
	}
	return nil
}

// route appends to out, each once, the queues a message with routing keys
// keys reaches from exchange x, as rabbit_exchange:route does: every
// exchange on the way is matched with all the keys; one whose bindings
// give no destination passes the message to its alternate exchange; an
// exchange reached twice is matched once (cycles end); a missing alternate
// exchange routes nowhere. The queues come sorted by name, as RabbitMQ
// lists them (3.10.8: lists:usort of their names; 4.x: the keys of a map
// of them, in order up to 32). Unlike RabbitMQ, a publish whose topic
// matching would visit more than routeStateBudget states is refused with
// 541 INTERNAL_ERROR (topicWalk). Caller holds the lock.
//
// Queues and exchanges carry the number of the route that last reached
// them (routeMark), so that each is taken once without a search. It
// visits each exchange of the vhost at most once, so more visits than the
// vhost has exchanges mean the marks are broken: it then fails loudly
// with 541 INTERNAL_ERROR instead of following the cycle until memory
// runs out.
func (b *Broker) route(v *vhost, x *exchange, keys []string, headers Table, out []*brokerQueue) ([]*brokerQueue, error) {
	if x.name == "" { // the default exchange reaches the queues named by the keys, and nothing else
		if len(keys) == 1 {
			// No CC or BCC: one queue at most, nothing to mark or sort.
			if q := v.defaultRoute(keys[0]); q != nil {
				out = append(out, q)
			}
			return out, nil
		}
		b.routeMark++
		for _, k := range keys {
			if q := v.defaultRoute(k); q != nil && q.routeMark != b.routeMark {
				q.routeMark = b.routeMark
				out = append(out, q)
			}
		}
		sortQueues(out)
		return out, nil
	}
	r := &b.router
	b.routeMark++
	r.mark, r.out, r.work = b.routeMark, out, append(r.work[:0], x)
	r.walk.states, r.walk.over = 0, false
	x.routeMark = r.mark
	defer func() {
		clear(r.work)
		r.work, r.out = r.work[:0], nil
	}()
	for i := 0; i < len(r.work); i++ {
		if i >= len(v.exchanges) {
			return r.out, protocol.Errorf(protocol.InternalError, protocol.BasicPublish,
				"routing from %s visited %d exchanges, more than the vhost's %d: a cycle escaped routing's marks",
				exchangeResource(r.work[0].name, v.name), i+1, len(v.exchanges))
		}
		x := r.work[i]
		r.found = false
		for _, k := range keys {
			x.match(v, k, headers, &r.walk)
		}
		if r.walk.over {
			return r.out, protocol.Errorf(protocol.InternalError, protocol.BasicPublish,
				"routing from %s visited more than %d topic binding states, a publish amqpsim refuses as it would hold the whole broker (RabbitMQ routes it)",
				exchangeResource(r.work[0].name, v.name), r.walk.budget)
		}
		if !r.found && x.hasAlternate {
			if ae, ok := v.exchanges[x.alternate]; ok {
				r.take(destination{x: ae})
			}
		}
	}
	sortQueues(r.out)
	return r.out, nil
}

// defaultRoute returns the queue the default exchange routes key to, or
// nil.
func (v *vhost) defaultRoute(key string) *brokerQueue {
	if q := v.routed; q != nil && v.routedName == key { // nil once deleted (deleteQueue)
		return q
	}
	q := v.queues[key]
	if q != nil {
		v.routed, v.routedName = q, key
	}
	return q
}

// router is route's state, kept by the broker so that a publish
// allocates nothing to route.
type router struct {
	mark  uint64         // the number of this route
	out   []*brokerQueue // the queues reached
	work  []*exchange    // the exchanges reached, in the order reached
	found bool           // the exchange being matched gave a destination
	// walk is the topic walk, whose visit is take; its states count
	// those of this route, all keys and exchanges together.
	walk topicWalk
}

// take takes a destination an exchange's bindings gave: a queue or an
// exchange not reached before.
func (r *router) take(d destination) {
	r.found = true
	switch {
	case d.q != nil:
		if d.q.routeMark != r.mark {
			d.q.routeMark = r.mark
			r.out = append(r.out, d.q)
		}
	case d.x.routeMark != r.mark:
		d.x.routeMark = r.mark
		r.work = append(r.work, d.x)
	}
}

// sortQueues sorts the queues a message reached by name.
func sortQueues(qs []*brokerQueue) {
	if len(qs) > 1 {
		slices.SortFunc(qs, func(a, b *brokerQueue) int { return strings.Compare(a.Name(), b.Name()) })
	}
}

// ExchangeBind is exchange.bind: messages that exchange source routes with
// key (or args, for a headers exchange) go on to exchange destination. As
// in RabbitMQ 3.10.8, the default exchange cannot be either end (403) and
// a missing source is reported before a missing destination (404).
func (ch *Channel) ExchangeBind(destinationName, key, sourceName string, args Table, opts ...CallOption) error {
	return ch.do(&call{m: protocol.ExchangeBind, noWait: noWait(opts), describe: func(e *Event) {
		e.Exchange, e.RoutingKey, e.Target, e.Options = sourceName, key, destinationName, tableOption(args)
	}, apply: func() error {
		src, dst, err := ch.exchangeBindingEnds(sourceName, key, destinationName, protocol.ExchangeBind)
		if err != nil {
			return err
		}
		if err := ch.b.validateBinding(src.kind, key, args, protocol.ExchangeBind); err != nil {
			return err
		}
		if err := ch.checkBindingWrite(protocol.ExchangeBind); err != nil {
			return err
		}
		src.bind(destination{x: dst}, key, args)
		return nil
	}, reply: okReply(protocol.ExchangeBindOk)})
}

// ExchangeUnbind is exchange.unbind. Removing a binding that does not
// exist, even between missing exchanges, is not an error (RabbitMQ
// 3.10.8). An auto-delete source that loses its last binding is deleted.
func (ch *Channel) ExchangeUnbind(destinationName, key, sourceName string, args Table, opts ...CallOption) error {
	return ch.do(&call{m: protocol.ExchangeUnbind, noWait: noWait(opts), describe: func(e *Event) {
		e.Exchange, e.RoutingKey, e.Target, e.Options = sourceName, key, destinationName, tableOption(args)
	}, apply: func() error {
		v := ch.conn.vhost
		if err := ch.checkExchangeBinding(sourceName, key, destinationName, protocol.ExchangeUnbind); err != nil {
			return err
		}
		if err := ch.checkBindingWrite(protocol.ExchangeUnbind); err != nil {
			return err
		}
		src, dst := v.exchanges[sourceName], v.exchanges[destinationName]
		if src == nil || dst == nil {
			return nil
		}
		if src.unbind(destination{x: dst}, key, args) {
			ch.b.maybeAutoDeleteExchange(v, src)
		}
		return nil
	}, reply: okReply(protocol.ExchangeUnbindOk)})
}

// checkExchangeBinding is rabbit_channel:binding_action's checks for an
// exchange binding: write on the destination, neither end the default
// exchange, read on the source and, for a topic source, on the key.
func (ch *Channel) checkExchangeBinding(sourceName, key, destinationName string, m protocol.Method) error {
	if err := ch.checkAccess(m, permWrite, "exchange", destinationName); err != nil {
		return err
	}
	if sourceName == "" || destinationName == "" {
		return protocol.Errorf(protocol.AccessRefused, m, "operation not permitted on the default exchange")
	}
	if err := ch.checkAccess(m, permRead, "exchange", sourceName); err != nil {
		return err
	}
	return ch.checkTopicAccess(m, permRead, ch.conn.vhost.exchanges[sourceName], key)
}

func (ch *Channel) exchangeBindingEnds(sourceName, key, destinationName string, m protocol.Method) (src, dst *exchange, err error) {
	v := ch.conn.vhost
	if err := ch.checkExchangeBinding(sourceName, key, destinationName, m); err != nil {
		return nil, nil, err
	}
	if src, err = v.exchange(sourceName, m); err != nil {
		return nil, nil, err
	}
	if dst, err = v.exchange(destinationName, m); err != nil {
		return nil, nil, err
	}
	return src, dst, nil
}

// validateBinding is rabbit_exchange:validate_binding/2, the check of a
// new binding by the type (kind) of its source: a headers exchange's x-match
// (checkXMatch), and, where the release limits them
// (Profile.TopicMaxHashWords), the "#" words of a topic binding key.
func (b *Broker) validateBinding(kind, key string, args Table, m protocol.Method) error {
	switch kind {
	case "headers":
		return checkXMatch(args, m)
	case "topic":
		if most := b.profile.TopicMaxHashWords; most > 0 {
			if n := countHashWords(key); n > most {
				return protocol.Errorf(protocol.PreconditionFailed, m,
					"Topic binding key '%s' uses %d '#' wildcards, at most %d are allowed", key, n, most)
			}
		}
	}
	return nil
}

// deleteExchange removes an exchange with the bindings it is the source
// of and the bindings to it; an auto-delete exchange that loses its last
// binding that way goes too. Caller holds the lock.
func (b *Broker) deleteExchange(v *vhost, x *exchange) {
	delete(v.exchanges, x.name)
	for d := range x.bindings.byDest {
		if d.q != nil {
			delete(d.q.sources, x)
		} else {
			delete(d.x.sources, x)
		}
	}
	for _, src := range sortedSources(x.sources) {
		if src.unbindAll(destination{x: x}) {
			b.maybeAutoDeleteExchange(v, src)
		}
	}
}

// maybeAutoDeleteExchange deletes an auto-delete exchange that lost its last
// binding.
func (b *Broker) maybeAutoDeleteExchange(v *vhost, x *exchange) {
	if x.autoDelete && x.bindings.len() == 0 && v.exchanges[x.name] == x {
		b.deleteExchange(v, x)
	}
}
