package sim

import (
	"fmt"
	"strings"

	"github.com/amqpsim/amqpsim/channel"
	"github.com/amqpsim/amqpsim/consumer"
	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/queue"
)

// Channel is one AMQP channel. Its methods are the client's AMQP methods;
// each returns RabbitMQ's error as a *Error, after which the channel (soft
// error) or the whole connection (hard error) is closed, with every unacked
// delivery requeued, exactly as RabbitMQ does.
type Channel struct {
	b    *Broker
	conn *Connection
	id   uint16
	core *channel.Channel

	consumers  map[string]*Consumer
	order      []*Consumer // consumers in creation order
	groups     map[*queue.Queue]*consumer.Group
	lastQueue  string // for methods that name the queue ""
	confirming bool
	publishTag uint64
	closed     error

	// Kept for in-process readers when the connection has no sink.
	settled []channel.Delivery // scratch for settlements
	tick    *timer             // consumer-timeout tick, see syncTick

	returns  []Return
	confirms []Confirm
	cancels  []string
}

// ID returns the channel number.
func (ch *Channel) ID() uint16 { return ch.id }

// Err returns why the channel closed, or nil while it is open.
func (ch *Channel) Err() error {
	ch.b.mu.Lock()
	defer ch.b.mu.Unlock()
	return ch.closed
}

// do runs one AMQP method under the broker lock: it refuses calls on a closed
// channel, turns a protocol error into the channel or connection close
// RabbitMQ performs, and dispatches the queues the method touched.
// describe renders the call's arguments for the trace; it runs only when
// tracing, so the hot path formats nothing.
func (ch *Channel) do(m protocol.Method, describe func() string, f func() error) error {
	b := ch.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if ch.closed != nil {
		return ch.closed
	}
	if !b.cfg.NoTrace {
		detail := ""
		if describe != nil {
			detail = describe()
		}
		b.event(ch.conn, ch.id, m.String(), "%s", detail)
	}
	err := f()
	if perr, ok := err.(*protocol.Error); ok {
		ch.fail(perr)
	}
	b.flush()
	return err
}

// fail applies a protocol error: a soft one closes this channel, a hard one
// the connection. Caller holds the lock.
func (ch *Channel) fail(err *protocol.Error) {
	if err.Hard {
		ch.conn.fail(err)
		return
	}
	ch.b.event(ch.conn, ch.id, "channel.close", "%d %s", err.Code, err.Text)
	ch.shutdown(&closedError{what: fmt.Sprintf("channel %d", ch.id), cause: err})
	ch.conn.push(ChannelClose{Channel: ch.id, Err: err})
}

// Close closes the channel as channel.close does: its consumers go and its
// unacked deliveries are requeued to their original positions.
func (ch *Channel) Close() error {
	return ch.do(protocol.ChannelClose, nil, func() error {
		ch.shutdown(&closedError{what: fmt.Sprintf("channel %d", ch.id)})
		return nil
	})
}

// shutdown removes the channel: its consumers are removed, its unacked
// deliveries requeued, and auto-delete queues left without consumers are
// deleted (taking the requeued messages with them). Caller holds the lock.
func (ch *Channel) shutdown(err error) {
	ch.closed = err
	delete(ch.conn.channels, ch.id)
	ds := ch.core.TakeAll()
	var touched []*queue.Queue
	for _, cs := range ch.order {
		if !cs.cancelled {
			cs.q.RemoveConsumer(&cs.core)
			cs.cancelled = true
			touched = appendQueue(touched, cs.q)
		}
	}
	for _, d := range ds {
		touched = appendQueue(touched, d.Queue)
	}
	for _, q := range touched {
		if q.Deleted {
			continue
		}
		if q.AutoDelete && q.HadConsumer() && q.ConsumerCount() == 0 {
			ch.b.deleteQueue(q)
			continue
		}
		for _, d := range ds {
			if d.Queue == q {
				q.Requeue(d.Message)
			}
		}
		q.DropOverLimit(ch.b.maxlenFn)
		ch.b.dropExpired(q)
		ch.b.touchExpires(q)
		ch.b.markDirty(q)
	}
	ch.b.stop(ch.tick)
	ch.consumers, ch.order, ch.groups = nil, nil, nil
}

func appendQueue(qs []*queue.Queue, q *queue.Queue) []*queue.Queue {
	for _, e := range qs {
		if e == q {
			return qs
		}
	}
	return append(qs, q)
}

// Qos is basic.qos: see channel.Channel.Qos for RabbitMQ's rules.
func (ch *Channel) Qos(prefetchCount, prefetchSize int, global bool) error {
	if prefetchCount < 0 || prefetchCount > 65535 || prefetchSize < 0 || prefetchSize > 1<<32-1 {
		return fmt.Errorf("sim: basic.qos prefetch count %d or size %d out of range", prefetchCount, prefetchSize)
	}
	return ch.do(protocol.BasicQos, func() string { return fmt.Sprintf("count=%d size=%d global=%t", prefetchCount, prefetchSize, global) }, func() error {
		resume, err := ch.core.Qos(uint32(prefetchSize), uint16(prefetchCount), global)
		if err != nil {
			return err
		}
		ch.resume(resume)
		return nil
	})
}

// resume lifts the suspension of consumer groups released by the limiter,
// starting at a seeded random position as RabbitMQ's notify_queues does.
func (ch *Channel) resume(groups []*consumer.Group) {
	if len(groups) == 0 {
		return
	}
	start := 0
	if len(groups) > 1 {
		start = ch.b.rng.IntN(len(groups))
	}
	for i := range groups {
		g := groups[(start+i)%len(groups)]
		q := g.Ref.(*queue.Queue)
		if !q.Deleted {
			q.Resume(g)
			ch.b.markDirty(q)
		}
	}
}

// Confirm is confirm.select: from now on every publish on this channel is
// confirmed with basic.ack (or basic.nack), tags counting from 1.
func (ch *Channel) Confirm() error {
	return ch.do(protocol.ConfirmSelect, nil, func() error {
		ch.confirming = true
		return nil
	})
}

// Flow is channel.flow. RabbitMQ refuses active=false with 540, closing the
// connection; active=true is accepted.
func (ch *Channel) Flow(active bool) error {
	return ch.do(protocol.ChannelFlow, func() string { return fmt.Sprintf("active=%t", active) }, func() error {
		if !active {
			return protocol.Errorf(protocol.NotImplemented, protocol.ChannelFlow, "active=false")
		}
		return nil
	})
}

// queueName resolves "" to the last queue declared on the channel.
func (ch *Channel) queueName(name string, m protocol.Method) (string, error) {
	if name != "" {
		return name, nil
	}
	if ch.lastQueue == "" {
		return "", protocol.Errorf(protocol.NotFound, m, "no previously declared queue")
	}
	return ch.lastQueue, nil
}

// lookupQueue finds a queue for method m, checking that it exists and is not
// exclusive to another connection.
func (ch *Channel) lookupQueue(name string, m protocol.Method) (*queue.Queue, error) {
	name, err := ch.queueName(name, m)
	if err != nil {
		return nil, err
	}
	q, ok := ch.conn.vhost.queues[name]
	if !ok {
		return nil, protocol.Errorf(protocol.NotFound, m, "no queue '%s' in vhost '%s'", name, ch.conn.vhost.name)
	}
	if err := ch.checkExclusive(q, m); err != nil {
		return nil, err
	}
	return q, nil
}

func (ch *Channel) checkExclusive(q *queue.Queue, m protocol.Method) error {
	if q.Exclusive && q.Owner != ch.conn {
		return lockedError(q, m)
	}
	return nil
}

func lockedError(q *queue.Queue, m protocol.Method) error {
	return protocol.Errorf(protocol.ResourceLocked, m, "cannot obtain exclusive access to locked %s. It could be originally declared on another connection or the exclusive property value does not match that of the original declaration.", q.Resource())
}

func reservedName(kind, name string, m protocol.Method) error {
	if strings.HasPrefix(name, "amq.") {
		return protocol.Errorf(protocol.AccessRefused, m, "%s name '%s' contains reserved prefix 'amq.*'", kind, name)
	}
	return nil
}
