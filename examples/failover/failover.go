// Package failover is an example of a client of a RabbitMQ cluster: a
// Publisher and a Consumer of one quorum queue, each given the cluster's
// node URLs as a client is given a real cluster's hosts. When a node
// stops, crashes or is cut off, they reconnect to the next node and carry
// on: the publisher publishes again what the broker had not confirmed, the
// consumer declares the queue again and resumes, and handles each message
// once however often it is delivered. failover_test.go property-tests the
// pair against node faults on a simulated 3-node cluster.
package failover

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// Message is what the Publisher publishes and the Consumer hands on. ID
// travels as the AMQP message-id property; it is what makes a message
// published twice, or delivered twice, the same message.
type Message struct {
	ID   string
	Body []byte
}

// Nodes is how the Publisher and the Consumer reach the cluster.
type Nodes struct {
	// URLs are the nodes' AMQP URLs, tried in turn: the first at the
	// start, the next after each failure.
	URLs []string
	// Dial dials a node (amqp.Config.Dial); nil: amqp091-go's default.
	Dial func(network, addr string) (net.Conn, error)
	// Backoff is the pause before each reconnect.
	Backoff time.Duration
	// Logf, if set, logs each connection and why it ended.
	Logf func(format string, args ...any)
}

// session is one connection's life: it returns why it ended, nil when
// the work is done.
type session func(ctx context.Context, conn *amqp.Connection) error

// run runs sessions, one node after another, until one returns nil or ctx
// ends; then it returns ctx's error or nil.
func (n *Nodes) run(ctx context.Context, name string, s session) error {
	if len(n.URLs) == 0 {
		return errors.New("failover: no node URLs")
	}
	for i := 0; ; i = (i + 1) % len(n.URLs) {
		err := n.once(ctx, name, n.URLs[i], s)
		if err == nil || ctx.Err() != nil {
			return ctx.Err()
		}
		n.logf("%s: %s: %v; next: %s in %v", name, host(n.URLs[i]), err, host(n.URLs[(i+1)%len(n.URLs)]), n.Backoff)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(n.Backoff):
		}
	}
}

// once dials url and runs s on the connection, which it closes after.
func (n *Nodes) once(ctx context.Context, name, url string, s session) error {
	conn, err := amqp.DialConfig(url, amqp.Config{
		Dial:       n.Dial,
		Properties: amqp.Table{"connection_name": name},
	})
	if err != nil {
		return err
	}
	n.logf("%s: connected to %s", name, host(url))
	defer conn.Close()
	return s(ctx, conn)
}

func (n *Nodes) logf(format string, args ...any) {
	if n.Logf != nil {
		n.Logf(format, args...)
	}
}

// host is a URL's host, to log without the password.
func host(url string) string {
	u, err := amqp.ParseURI(url)
	if err != nil {
		return "?"
	}
	return fmt.Sprintf("%s:%d", u.Host, u.Port)
}

// closeError is why a connection closed: NotifyClose's error, nil when
// the client closed it.
func closeError(e *amqp.Error) error {
	if e == nil {
		return amqp.ErrClosed
	}
	return e
}

// declare declares the queue both sides use: a durable quorum queue, which
// keeps every message it confirmed while a majority of the nodes runs.
// Declaring an existing queue again is a read of the metadata store, which
// works on any node, even one cut off from the majority.
func declare(ch *amqp.Channel, queue string) error {
	_, err := ch.QueueDeclare(queue, true, false, false, false, amqp.Table{"x-queue-type": "quorum"})
	return err
}

// Publisher publishes messages persistently to Queue through the default
// exchange, with publisher confirms: a message is done once the broker
// has acked it. One nacked, returned (mandatory, the queue gone), or
// unconfirmed when its connection ends is published again on the next
// connection, so a message may reach the queue twice; the Consumer
// handles it once.
type Publisher struct {
	Nodes
	// Queue is the queue published to, declared at each connection.
	Queue string
	// Window is how many messages may wait for their confirms at once
	// (1 below 1).
	Window int
	// ConfirmTimeout ends the connection when the oldest message waits
	// longer for its confirm (0: no limit), unless the broker has
	// blocked the connection (connection.blocked, a resource alarm):
	// a node cut off from the majority holds publishes to a quorum queue
	// without confirming or refusing them, for as long as the cut lasts.
	ConfirmTimeout time.Duration
	// Confirmed, if set, is called with each message's ID once the
	// broker has confirmed it, once per message.
	Confirmed func(id string)

	// pending are the messages taken from in and not yet confirmed,
	// oldest first.
	pending []Message
	// closed is set once in is closed.
	closed bool
}

// Run publishes what it receives from in until in is closed and every
// message is confirmed (it returns nil), or ctx ends (it returns ctx's
// error; a later Run publishes first what this one left unconfirmed). It
// reconnects after every failure, to the next node.
func (p *Publisher) Run(ctx context.Context, in <-chan Message) error {
	p.closed = false
	return p.run(ctx, "publisher", func(ctx context.Context, conn *amqp.Connection) error { return p.session(ctx, conn, in) })
}

// errNotConfirmed ends a session whose oldest message was nacked or
// returned: its connection may be on a node that cannot serve the queue.
var errNotConfirmed = errors.New("a publish was not confirmed")

// session publishes on one connection.
func (p *Publisher) session(ctx context.Context, conn *amqp.Connection, in <-chan Message) error {
	window := max(p.Window, 1)
	closed := conn.NotifyClose(make(chan *amqp.Error, 1))
	// amqp091-go's reader hands over each connection.blocked and
	// unblocked, waiting up to 5 s for a listener that does not read:
	// this one always reads, until the connection ends.
	var isBlocked atomic.Bool
	blockedChanged := make(chan struct{}, 1)
	go func(blocks <-chan amqp.Blocking) {
		for b := range blocks {
			isBlocked.Store(b.Active)
			select {
			case blockedChanged <- struct{}{}:
			default:
			}
		}
	}(conn.NotifyBlocked(make(chan amqp.Blocking)))
	ch, err := conn.Channel()
	if err != nil {
		return err
	}
	if err := ch.Confirm(false); err != nil {
		return err
	}
	// Each publish gets at most one return, before its confirm, and the
	// returns are read before each confirm: a buffer of window never
	// fills (amqp091-go's reader would wait on a full one).
	returns := ch.NotifyReturn(make(chan amqp.Return, window))
	if err := declare(ch, p.Queue); err != nil {
		return err
	}
	// inFlight are the confirms of pending[:len(inFlight)], published on
	// this connection.
	var inFlight []*amqp.DeferredConfirmation
	returned := map[string]bool{}
	timeout := time.NewTimer(0)
	timeout.Stop()
	defer timeout.Stop()
	restart := func() { // the oldest message's wait starts
		timeout.Stop()
		if p.ConfirmTimeout > 0 && len(inFlight) > 0 && !isBlocked.Load() {
			timeout.Reset(p.ConfirmTimeout)
		}
	}
	for {
		// Publish again what an earlier connection left unconfirmed,
		// then what comes, as the window allows.
		for len(inFlight) < min(window, len(p.pending)) {
			m := p.pending[len(inFlight)]
			dc, err := ch.PublishWithDeferredConfirmWithContext(ctx, "", p.Queue, true, false, amqp.Publishing{
				MessageId: m.ID, DeliveryMode: amqp.Persistent, Body: m.Body,
			})
			if err != nil {
				return err
			}
			if inFlight = append(inFlight, dc); len(inFlight) == 1 {
				restart()
			}
		}
		if p.closed && len(p.pending) == 0 {
			return nil
		}
		var next <-chan Message
		if !p.closed && len(p.pending) < window {
			next = in
		}
		var oldest <-chan struct{}
		if len(inFlight) > 0 {
			oldest = inFlight[0].Done()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case e := <-closed:
			return closeError(e)
		case <-blockedChanged:
			restart()
		case <-timeout.C:
			return fmt.Errorf("no confirm within %v", p.ConfirmTimeout)
		case m, ok := <-next:
			if !ok {
				p.closed = true
				continue
			}
			p.pending = append(p.pending, m)
		case <-oldest:
			// amqp091-go hands a return over before the confirm that
			// follows it: every return up to this confirm is in.
			for len(returns) > 0 {
				returned[(<-returns).MessageId] = true
			}
			m := p.pending[0]
			if !inFlight[0].Acked() || returned[m.ID] {
				// A nack, a return, or the channel closed (amqp091-go
				// nacks what was in flight).
				return errNotConfirmed
			}
			p.pending, inFlight = p.pending[1:], inFlight[1:]
			if p.Confirmed != nil {
				p.Confirmed(m.ID)
			}
			restart()
		}
	}
}

// Consumer consumes Queue and hands each message to Handle, once per
// message ID: a message delivered again (after a connection was lost
// before its ack, or published twice) is acked without being handled
// again. After a connection or its channel closes, or the broker cancels
// the consumer, it reconnects to the next node, declares the queue again
// and resumes.
type Consumer struct {
	Nodes
	// Queue is the queue consumed, declared at each connection.
	Queue string
	// Prefetch is the consumer's prefetch count (basic.qos).
	Prefetch int
	// Handle handles a message; it is called from Run's goroutine.
	Handle func(Message)

	// handled are the IDs of the messages handled. A real consumer keeps
	// them where it keeps the effect of handling (in the same database
	// transaction), so that they survive it.
	handled map[string]bool
}

// Run consumes until ctx ends.
func (c *Consumer) Run(ctx context.Context) {
	_ = c.run(ctx, "consumer", c.session)
}

// errCancelled ends a session whose consumer the broker cancelled
// (basic.cancel; the channel stays open).
var errCancelled = errors.New("the broker cancelled the consumer")

// session consumes on one connection until it fails.
func (c *Consumer) session(ctx context.Context, conn *amqp.Connection) error {
	closed := conn.NotifyClose(make(chan *amqp.Error, 1))
	ch, err := conn.Channel()
	if err != nil {
		return err
	}
	chClosed := ch.NotifyClose(make(chan *amqp.Error, 1))
	if err := declare(ch, c.Queue); err != nil {
		return err
	}
	// Qos before Consume: a consumer created first keeps an unlimited
	// window.
	if err := ch.Qos(c.Prefetch, 0, false); err != nil {
		return err
	}
	deliveries, err := ch.Consume(c.Queue, "", false, false, false, false, nil)
	if err != nil {
		return err
	}
	if c.handled == nil {
		c.handled = map[string]bool{}
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case e := <-closed:
			return closeError(e)
		case d, ok := <-deliveries:
			if !ok {
				// amqp091-go ends the deliveries when the connection or
				// the channel closes, after it has handed over why, and
				// when the broker cancels the consumer.
				select {
				case e := <-closed:
					return closeError(e)
				case e := <-chClosed:
					return closeError(e)
				default:
					return errCancelled
				}
			}
			if !c.handled[d.MessageId] {
				c.Handle(Message{ID: d.MessageId, Body: d.Body})
				c.handled[d.MessageId] = true
			}
			// An ack that fails (the connection is gone) leaves the
			// message to be delivered again, and it is then acked
			// without being handled.
			_ = d.Ack(false)
		}
	}
}
