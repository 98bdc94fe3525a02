package wire

import (
	"time"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// lingerTimeout bounds how long a connection stays open after the server's
// last frame (connection.close-ok) before the server closes it.
const lingerTimeout = 3 * time.Second

type outKind uint8

const (
	outMethod outKind = iota
	outContent
	outDeliver
	outHeartbeat
)

// outItem is one thing for the writer to send: a method, a method with
// content, a delivery or a heartbeat.
type outItem struct {
	kind  outKind
	ch    uint16
	final bool // the server's last frame: the connection ends after it (closeLater)
	m     Method
	props protocol.Properties
	body  []byte
	// basic.deliver's arguments, so deliveries need no allocation.
	ctag, exchange, key string
	tag                 uint64
	redelivered         bool
}

func methodItem(ch uint16, m Method) outItem { return outItem{kind: outMethod, ch: ch, m: m} }

func contentItem(ch uint16, m Method, props protocol.Properties, body []byte) outItem {
	return outItem{kind: outContent, ch: ch, m: m, props: props, body: body}
}

// begin marks the start of a broker call made by the reader: pushes the
// broker makes meanwhile are held, so that the call's reply reaches the
// client before them (consume-ok before the deliveries it causes).
func (c *serverConn) begin() {
	c.mu.Lock()
	c.inCall = true
	c.mu.Unlock()
}

// end queues the call's reply, if any, then the held pushes.
func (c *serverConn) end(reply ...outItem) {
	c.mu.Lock()
	c.out = append(c.out, reply...)
	c.out = append(c.out, c.held...)
	clear(c.held)
	c.held = c.held[:0]
	c.inCall = false
	c.mu.Unlock()
	c.signal()
}

// enqueue queues an item for the writer now.
func (c *serverConn) enqueue(it outItem) {
	c.mu.Lock()
	c.out = append(c.out, it)
	c.mu.Unlock()
	c.signal()
}

func (c *serverConn) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// sink receives the broker's pushes for this connection, under the broker's
// lock: it only queues them.
func (c *serverConn) sink(p sim.Push) {
	var it outItem
	c.mu.Lock()
	switch p := p.(type) {
	case sim.Deliver:
		it = outItem{kind: outDeliver, ch: p.Channel, ctag: p.ConsumerTag, tag: p.DeliveryTag,
			redelivered: p.Redelivered, exchange: p.Exchange, key: p.RoutingKey, props: p.Properties, body: p.Body}
	case sim.Return:
		// The body is the publisher's buffer, which the reader reuses.
		body := append([]byte(nil), p.Body...)
		it = contentItem(p.Channel, &BasicReturn{ReplyCode: uint16(p.ReplyCode), ReplyText: p.ReplyText,
			Exchange: p.Exchange, RoutingKey: p.RoutingKey}, p.Properties, body)
	case sim.Confirm:
		if p.Nack {
			it = methodItem(p.Channel, &BasicNack{DeliveryTag: p.DeliveryTag, Multiple: p.Multiple})
		} else {
			it = methodItem(p.Channel, &BasicAck{DeliveryTag: p.DeliveryTag, Multiple: p.Multiple})
		}
	case sim.Cancel:
		it = methodItem(p.Channel, &BasicCancel{ConsumerTag: p.ConsumerTag, NoWait: true})
	case sim.ChannelClose:
		if cs := c.chans[p.Channel]; cs != nil {
			cs.closing.Store(true)
		}
		e := p.Err
		it = methodItem(p.Channel, &ChannelClose{ReplyCode: uint16(e.Code), ReplyText: e.Text, ClassID: e.Method.Class, MethodID: e.Method.ID})
	case sim.ConnectionClose:
		c.closing.Store(true)
		if c.closeTimer == nil {
			nc := c.nc
			c.closeTimer = time.AfterFunc(c.closeTimeout(), func() { nc.Close() })
		}
		it = methodItem(0, closeMethod(p.Err))
	default:
		c.mu.Unlock()
		return
	}
	if c.inCall {
		c.held = append(c.held, it)
	} else {
		c.out = append(c.out, it)
	}
	c.mu.Unlock()
	c.signal()
}

// writeLoop is the writer goroutine: it sends queued items in order, in
// batches, until the reader finishes or a write fails.
func (c *serverConn) writeLoop() {
	defer c.wg.Done()
	var batch []outItem
	deliver := &BasicDeliver{}
	for {
		c.mu.Lock()
		for len(c.out) == 0 {
			c.mu.Unlock()
			select {
			case <-c.wake:
			case <-c.done:
				return
			}
			c.mu.Lock()
		}
		batch, c.out = c.out, batch[:0]
		c.mu.Unlock()

		final, data := false, false
		for i := range batch {
			it := &batch[i]
			var err error
			switch it.kind {
			case outMethod:
				err = c.fw.WriteMethod(it.ch, it.m)
			case outContent:
				err = c.fw.WriteContent(it.ch, it.m, &it.props, it.body)
			case outDeliver:
				*deliver = BasicDeliver{ConsumerTag: it.ctag, DeliveryTag: it.tag, Redelivered: it.redelivered,
					Exchange: it.exchange, RoutingKey: it.key}
				err = c.fw.WriteContent(it.ch, deliver, &it.props, it.body)
			case outHeartbeat:
				err = c.fw.WriteHeartbeat()
			}
			if err != nil {
				if c.bw.Flush() != nil {
					c.nc.Close() // the transport failed
					return
				}
				// An encoding error (a frame over frame-max, a table
				// value with no AMQP type): nothing was written.
				c.s.logf("wire: %s: cannot send %v: %v", c.displayName(), it.m, err)
				continue
			}
			data = data || it.kind != outHeartbeat
			final = final || it.final
		}
		clear(batch)
		if err := c.bw.Flush(); err != nil {
			c.nc.Close()
			return
		}
		if data {
			c.sent.Add(1)
		}
		if final {
			c.closeLater()
			return
		}
	}
}

// closeLater ends the server's side after its last frame, the close-ok of
// a client's connection.close: like RabbitMQ (rabbit_reader's
// close_connection/1, which only arms a terminate_connection timer), the
// server leaves the transport open for the client to close, and closes it
// itself after lingerTimeout. Closing or half-closing it at once made
// amqp091-go's reader see EOF right after close-ok, racing Close's own
// shutdown, so that NotifyClose listeners sometimes got a spurious
// "501 EOF" for a clean client close; RabbitMQ never causes that.
func (c *serverConn) closeLater() {
	nc := c.nc
	c.mu.Lock()
	c.lingerTimer = time.AfterFunc(lingerTimeout, func() { nc.Close() })
	c.mu.Unlock()
}

// heartbeatLoop sends a heartbeat every heartbeat/2 when nothing else was
// sent, and closes the connection when the client has sent nothing for two
// of those intervals (RabbitMQ: "missed heartbeats from client").
func (c *serverConn) heartbeatLoop() {
	defer c.wg.Done()
	interval := c.heartbeat / 2
	t := time.NewTicker(interval)
	defer t.Stop()
	lastSent, lastRecv, silent := c.sent.Load(), c.recv.Load(), 0
	for {
		select {
		case <-c.done:
			return
		case <-t.C:
		}
		if s := c.sent.Load(); s == lastSent {
			c.enqueue(outItem{kind: outHeartbeat})
		} else {
			lastSent = s
		}
		if r := c.recv.Load(); r == lastRecv {
			silent++
		} else {
			lastRecv, silent = r, 0
		}
		if silent >= 2 {
			c.s.logf("wire: %s: missed heartbeats from client, timeout: %ds", c.displayName(), int(c.heartbeat/time.Second))
			c.nc.Close()
			return
		}
	}
}
