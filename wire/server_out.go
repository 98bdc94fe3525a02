package wire

import (
	"fmt"
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
	outPush
	outHeartbeat
)

// outItem is one thing for the writer to send: a method the server
// answers with, a push the broker made (the push-th of the pushes queued
// with it: a Push is large, and is copied once, from the outbox), or a
// heartbeat.
type outItem struct {
	kind  outKind
	ch    uint16
	final bool // the server's last frame: the connection ends after it (closeLater)
	m     Method
	push  int
}

func methodItem(ch uint16, m Method) outItem { return outItem{kind: outMethod, ch: ch, m: m} }

// closes reports whether the item is part of the connection's closing
// handshake: the server's connection.close or close-ok. pushes are the
// pushes queued with it.
func (it *outItem) closes(pushes []sim.Push) bool {
	switch it.kind {
	case outPush:
		return pushes[it.push].Method == protocol.ConnectionClose
	case outMethod:
		switch it.m.(type) {
		case *ConnectionClose, *ConnectionCloseOk:
			return true
		}
	}
	return false
}

// describe names the item for logs; pushes are the pushes queued with it.
func (it *outItem) describe(pushes []sim.Push) string {
	switch it.kind {
	case outPush:
		return fmt.Sprintf("%v on channel %d", pushes[it.push].Method, it.ch)
	case outMethod:
		return fmt.Sprintf("%v on channel %d", it.m.ID(), it.ch)
	}
	return "a heartbeat"
}

// call runs one broker call made by the reader, queues its reply, if any,
// then everything the broker pushed meanwhile: the reply reaches the
// client before what the call caused (consume-ok before the deliveries).
// callMu keeps the writer from draining the outbox in between.
func (c *serverConn) call(f func() (outItem, bool)) {
	c.callMu.Lock()
	c.inCall.Store(true)
	it, ok := f()
	c.mu.Lock()
	if ok {
		c.out = append(c.out, it)
	}
	c.inCall.Store(false) // before the drain: a push after it wakes the writer
	drop := c.drainLocked()
	queued := len(c.out) > 0
	c.mu.Unlock()
	c.callMu.Unlock()
	if drop {
		c.resetTransport()
	}
	if queued {
		c.signal()
	}
}

// drain moves what the broker pushed to the connection into the writer's
// queue; caller holds callMu.
func (c *serverConn) drain() {
	c.mu.Lock()
	drop := c.drainLocked()
	c.mu.Unlock()
	if drop {
		c.resetTransport()
	}
}

// drainLocked is drain; caller holds callMu and mu (which the broker never
// waits for: Notify only signals). It reports whether the transport is to
// close at once with a reset (its node crashed), which the caller does
// once it has released mu.
func (c *serverConn) drainLocked() (drop bool) {
	sc := c.sc
	if sc == nil || !sc.HasPending() {
		return false
	}
	n := len(c.pushes)
	c.pushes = sc.Drain(c.pushes)
	for i := n; i < len(c.pushes); i++ {
		p := &c.pushes[i]
		if p.Method == protocol.ChannelCloseOk {
			// The reply to the client's channel.close: the number is
			// free, unless the broker closed the channel first and
			// waits for the client's close-ok.
			if cs, ok := c.chans[p.Channel]; ok && !cs.sim.Closing() {
				cs.gone.Store(true)
			}
		}
		if p.Method == protocol.ConnectionClose && p.Drop {
			// The connection's cluster node stopped (the close, then the
			// socket closes without waiting for close-ok) or crashed
			// (the socket closes, nothing written).
			if p.Err == nil {
				// Before closing: whoever closes the transport from
				// now on resets it (closeTransport).
				c.crashed.Store(true)
				drop = true
			}
			c.closing.Store(true)
			if p.Err != nil {
				c.out = append(c.out, outItem{kind: outPush, ch: p.Channel, push: i, final: true})
			}
			continue
		}
		if p.Method == protocol.ConnectionClose {
			c.closing.Store(true)
			if c.closeTimer == nil {
				c.closeTimer = time.AfterFunc(c.closeTimeout(), c.closeTransport)
			}
		}
		c.out = append(c.out, outItem{kind: outPush, ch: p.Channel, push: i})
	}
	return drop
}

// enqueue queues an item for the writer now.
func (c *serverConn) enqueue(it outItem) {
	c.mu.Lock()
	c.out = append(c.out, it)
	c.mu.Unlock()
	c.signal()
}

// notify is the broker's ShellOptions.Notify, called under the broker's
// lock: it wakes the writer to drain the outbox, unless the reader is in a
// call, which drains it on its way out (the writer would only wait for
// callMu).
func (c *serverConn) notify() {
	if !c.inCall.Load() {
		c.signal()
	}
}

// signal wakes the writer; it never blocks.
func (c *serverConn) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// writePush writes one push as its frames.
func (c *serverConn) writePush(p *sim.Push) error {
	switch p.Method {
	case protocol.BasicDeliver:
		c.deliver = BasicDeliver{ConsumerTag: p.ConsumerTag, DeliveryTag: p.DeliveryTag, Redelivered: p.Redelivered,
			Exchange: p.Exchange, RoutingKey: p.RoutingKey}
		return c.fw.WriteContent(p.Channel, &c.deliver, &p.Properties, p.Body)
	case protocol.BasicGetOk:
		return c.fw.WriteContent(p.Channel, &BasicGetOk{DeliveryTag: p.DeliveryTag, Redelivered: p.Redelivered,
			Exchange: p.Exchange, RoutingKey: p.RoutingKey, MessageCount: uint32(p.MessageCount)}, &p.Properties, p.Body)
	case protocol.BasicGetEmpty:
		return c.fw.WriteMethod(p.Channel, &BasicGetEmpty{})
	case protocol.TxCommitOk:
		return c.fw.WriteMethod(p.Channel, &TxCommitOk{})
	case protocol.BasicReturn:
		return c.fw.WriteContent(p.Channel, &BasicReturn{ReplyCode: uint16(p.ReplyCode), ReplyText: p.ReplyText,
			Exchange: p.Exchange, RoutingKey: p.RoutingKey}, &p.Properties, p.Body)
	case protocol.BasicAck:
		c.confirm = BasicAck{DeliveryTag: p.DeliveryTag, Multiple: p.Multiple}
		return c.fw.WriteMethod(p.Channel, &c.confirm)
	case protocol.BasicNack:
		c.nack = BasicNack{DeliveryTag: p.DeliveryTag, Multiple: p.Multiple}
		return c.fw.WriteMethod(p.Channel, &c.nack)
	case protocol.BasicCancel:
		return c.fw.WriteMethod(p.Channel, &BasicCancel{ConsumerTag: p.ConsumerTag, NoWait: true})
	case protocol.ChannelClose:
		e := p.Err
		return c.fw.WriteMethod(p.Channel, &ChannelClose{ReplyCode: uint16(e.Code), ReplyText: e.Text, ClassID: e.Method.Class, MethodID: e.Method.ID})
	case protocol.ConnectionClose:
		return c.fw.WriteMethod(0, closeMethod(p.Err))
	case protocol.ConnectionBlocked:
		return c.fw.WriteMethod(0, &ConnectionBlocked{Reason: p.ReplyText})
	case protocol.ConnectionUnblock:
		return c.fw.WriteMethod(0, &ConnectionUnblocked{})
	}
	if m := replyMethod(p); m != nil {
		return c.fw.WriteMethod(p.Channel, m)
	}
	return fmt.Errorf("wire: no frames for a push of %v", p.Method)
}

// replyMethod is the method of a reply the broker pushed, nil for a push
// that is not one.
func replyMethod(p *sim.Push) Method {
	switch p.Method {
	case protocol.ChannelCloseOk:
		return &ChannelCloseOk{}
	case protocol.ChannelFlowOk:
		return &ChannelFlowOk{Active: true} // active=false is refused
	case protocol.ExchangeDeclareOk:
		return &ExchangeDeclareOk{}
	case protocol.ExchangeDeleteOk:
		return &ExchangeDeleteOk{}
	case protocol.ExchangeBindOk:
		return &ExchangeBindOk{}
	case protocol.ExchangeUnbindOk:
		return &ExchangeUnbindOk{}
	case protocol.QueueDeclareOk:
		return &QueueDeclareOk{Queue: p.Queue, MessageCount: uint32(p.MessageCount), ConsumerCount: uint32(p.Consumers)}
	case protocol.QueueBindOk:
		return &QueueBindOk{}
	case protocol.QueueUnbindOk:
		return &QueueUnbindOk{}
	case protocol.QueuePurgeOk:
		return &QueuePurgeOk{MessageCount: uint32(p.MessageCount)}
	case protocol.QueueDeleteOk:
		return &QueueDeleteOk{MessageCount: uint32(p.MessageCount)}
	case protocol.BasicQosOk:
		return &BasicQosOk{}
	case protocol.BasicConsumeOk:
		return &BasicConsumeOk{ConsumerTag: p.ConsumerTag}
	case protocol.BasicCancelOk:
		return &BasicCancelOk{ConsumerTag: p.ConsumerTag}
	case protocol.BasicRecoverOk:
		return &BasicRecoverOk{}
	case protocol.ConfirmSelectOk:
		return &ConfirmSelectOk{}
	case protocol.TxSelectOk:
		return &TxSelectOk{}
	case protocol.TxRollbackOk:
		return &TxRollbackOk{}
	}
	return nil
}

// writeLoop is the writer goroutine: it sends queued items in order, in
// batches, until the reader finishes or a write fails.
func (c *serverConn) writeLoop() {
	defer c.wg.Done()
	defer c.doneWriting()
	var batch []outItem
	var pushes []sim.Push
	for {
		c.mu.Lock()
		for len(c.out) == 0 {
			c.mu.Unlock()
			select {
			case <-c.wake:
			case <-c.done:
				return
			}
			// Pushes the broker made on its own (another connection's
			// publish, a timer) wait in the outbox.
			c.callMu.Lock()
			c.drain()
			c.callMu.Unlock()
			c.mu.Lock()
		}
		batch, c.out = c.out, batch[:0]
		pushes, c.pushes = c.pushes, pushes[:0]
		c.writing = true
		sc := c.sc // set before the broker pushes anything
		c.mu.Unlock()

		final, data, delivered := false, false, 0
		for i := range batch {
			it := &batch[i]
			if c.unsendable && !it.closes(pushes) {
				continue // the connection is closing with 541
			}
			var err error
			switch it.kind {
			case outMethod:
				err = c.fw.WriteMethod(it.ch, it.m)
			case outPush:
				err = c.writePush(&pushes[it.push])
			case outHeartbeat:
				err = c.fw.WriteHeartbeat()
			}
			if err != nil {
				if c.bw.Flush() != nil {
					c.closeTransport() // the transport failed
					return
				}
				// An encoding error (a name over 255 bytes, a frame
				// over frame-max, a table value with no AMQP type):
				// nothing of the frame was written. RabbitMQ's channel
				// dies on it (method_field_shortstr_overflow, ...) and
				// the connection closes with 541 INTERNAL_ERROR
				// (rabbit_binary_generator:map_exception/3: a reason that
				// is not an AMQP error is internal_error, with no
				// explanation; measured on 3.10.8). Nothing queued after
				// the frame is sent but the close itself.
				c.s.logf("wire: %s: cannot send %s: %v; closing the connection with 541 INTERNAL_ERROR", c.displayName(), it.describe(pushes), err)
				c.unsendable = true
				c.connError(&protocol.Error{Code: protocol.InternalError, Text: "INTERNAL_ERROR", Hard: true})
				continue
			}
			data = data || it.kind != outHeartbeat
			final = final || it.final
			if it.kind == outPush && pushes[it.push].Method == protocol.BasicDeliver {
				delivered++
			}
		}
		clear(batch)
		clear(pushes)
		if err := c.bw.Flush(); err != nil {
			c.closeTransport()
			return
		}
		if data {
			c.sent.Add(1)
		}
		if delivered > 0 {
			// The deliveries reached the socket: the broker may send more
			// (sim.ShellOptions.MaxUnsent). Before doneWriting, so that
			// Server.Flushed sees what the bound held back, now pushed.
			sc.Written(delivered)
		}
		c.doneWriting()
		if final {
			c.closeLater()
			return
		}
	}
}

// doneWriting records that the writer holds no batch it has not yet
// flushed (Server.Flushed), and tells Server.OnWritten.
func (c *serverConn) doneWriting() {
	c.mu.Lock()
	c.writing = false
	c.mu.Unlock()
	if c.s.OnWritten != nil {
		c.s.OnWritten()
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
	c.mu.Lock()
	c.lingerTimer = time.AfterFunc(lingerTimeout, c.closeTransport)
	c.mu.Unlock()
}

// heartbeatLoop is RabbitMQ's two heartbeaters (rabbit_heartbeat), started
// at tune-ok, when received bytes had been read. The sender writes a heartbeat every heartbeat/2 in which
// nothing else was written. The receiver looks every heartbeat interval at
// the bytes received, and closes the socket, without a close frame, on the
// second look in a row that finds none (Threshold 1): measured on RabbitMQ
// 3.10.8 with a 2 s heartbeat, heartbeats every second and a silent
// client dropped 6 s after its connection.open.
func (c *serverConn) heartbeatLoop(received uint64) {
	defer c.wg.Done()
	send := time.NewTicker(c.heartbeat / 2)
	defer send.Stop()
	recv := time.NewTicker(c.heartbeat)
	defer recv.Stop()
	lastSent, lastRecv, silent := c.sent.Load(), received, 0
	for {
		select {
		case <-c.done:
			return
		case <-send.C:
			if c.hung() {
				continue // a hung node sends nothing
			}
			if s := c.sent.Load(); s == lastSent {
				c.enqueue(outItem{kind: outHeartbeat})
			} else {
				lastSent = s
			}
		case <-recv.C:
			if r := c.recvBytes.Load(); r != lastRecv || c.paused.Load() || c.hung() {
				lastRecv, silent = r, 0
				continue
			}
			if silent++; silent >= 2 {
				c.s.logf("wire: %s: missed heartbeats from client, timeout: %ds", c.displayName(), int(c.heartbeat/time.Second))
				c.closeTransport()
				return
			}
		}
	}
}

// batchReader is the socket as the reader reads it: each read from the
// socket is a batch of the client's frames. Before it reads the next, the
// broker hears that the last is applied (sim.Connection.Idle), as
// RabbitMQ's channels act when their mailboxes run empty; and it counts
// the bytes, for the heartbeat monitor.
type batchReader struct{ c *serverConn }

func (r batchReader) Read(p []byte) (int, error) {
	c := r.c
	c.mu.Lock()
	sc := c.sc
	c.mu.Unlock()
	if sc != nil && !c.closing.Load() {
		c.call(func() (outItem, bool) { sc.Idle(); return outItem{}, false })
		if sc.Hung() {
			c.waitHung(sc)
		}
	}
	n, err := c.nc.Read(p)
	c.recvBytes.Add(uint64(n))
	return n, err
}
