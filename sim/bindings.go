package sim

import (
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
// exchange routes nowhere. Caller holds the lock.
//
// It visits each exchange of the vhost at most once, so more visits than
// the vhost has exchanges mean the visited set is broken: it then fails
// loudly with 541 INTERNAL_ERROR instead of following the cycle until
// memory runs out.
func (b *Broker) route(v *vhost, x *exchange, keys []string, headers Table, out []*brokerQueue) ([]*brokerQueue, error) {
	if x.name == "" { // the default exchange reaches the queues named by the keys, and nothing else
		for _, k := range keys {
			q := v.routed // nil once deleted (deleteQueue)
			if q == nil || q.Name() != k {
				if q = v.queues[k]; q == nil {
					continue
				}
				v.routed = q
			}
			out = appendQueue(out, q)
		}
		return out, nil
	}
	work := append(b.routeWork[:0], x)
	for i := 0; i < len(work); i++ {
		if i >= len(v.exchanges) {
			err := protocol.Errorf(protocol.InternalError, protocol.BasicPublish,
				"routing from %s visited %d exchanges, more than the vhost's %d: a cycle escaped routing's visited set",
				exchangeResource(work[0].name, v.name), i+1, len(v.exchanges))
			clear(work)
			b.routeWork = work[:0]
			return out, err
		}
		x := work[i]
		dests := b.routeDests[:0]
		for _, k := range keys {
			dests = x.match(v, k, headers, dests)
		}
		if len(dests) == 0 && x.hasAlternate {
			if ae, ok := v.exchanges[x.alternate]; ok {
				dests = append(dests, destination{x: ae})
			}
		}
		for _, d := range dests {
			switch {
			case d.q != nil:
				out = appendQueue(out, d.q)
			case !containsExchange(work, d.x):
				work = append(work, d.x)
			}
		}
		clear(dests)
		b.routeDests = dests[:0]
	}
	clear(work)
	b.routeWork = work[:0]
	return out, nil
}

func containsExchange(xs []*exchange, x *exchange) bool {
	for _, e := range xs {
		if e == x {
			return true
		}
	}
	return false
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
		if src.kind == "headers" {
			if err := checkXMatch(args); err != nil {
				return err
			}
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

// deleteExchange removes an exchange with the bindings it is the source
// of and the bindings to it; an auto-delete exchange that loses its last
// binding that way goes too. Caller holds the lock.
func (b *Broker) deleteExchange(v *vhost, x *exchange) {
	delete(v.exchanges, x.name)
	for _, src := range sortedExchanges(v) {
		if src.toExchanges > 0 && src.unbindAll(destination{x: x}) {
			b.maybeAutoDeleteExchange(v, src)
		}
	}
}

// maybeAutoDeleteExchange deletes an auto-delete exchange that lost its last
// binding.
func (b *Broker) maybeAutoDeleteExchange(v *vhost, x *exchange) {
	if x.autoDelete && len(x.bindings) == 0 && v.exchanges[x.name] == x {
		b.deleteExchange(v, x)
	}
}
