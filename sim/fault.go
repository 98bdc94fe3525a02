package sim

import "slices"

// Fault injection and the hooks the wire server needs: listing connections
// and channels, and closing them from the broker's side with an error of the
// caller's choosing.

// Connections returns the open connections, in the order they were made.
func (b *Broker) Connections() []*Connection {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.conns)
}

// Channels returns the connection's open channels, by channel number.
func (c *Connection) Channels() []*Channel {
	c.b.mu.Lock()
	defer c.b.mu.Unlock()
	out := make([]*Channel, 0, len(c.channels))
	for _, ch := range c.channels {
		out = append(out, ch)
	}
	slices.SortFunc(out, func(a, b *Channel) int { return int(a.id) - int(b.id) })
	return out
}

// CloseWithError closes the connection from the broker's side with err, as
// RabbitMQ does for a connection (hard) error: the client is pushed a
// ConnectionClose carrying err's code, text and method, every channel
// closes with its unacked deliveries requeued, and the connection's
// exclusive queues are deleted. It reports false, doing nothing, when the
// connection is already closed or err is nil.
//
// The wire server uses it for the protocol errors it detects itself (a
// frame on an unopened channel, an unexpected frame, ...); tests use it to
// inject faults.
func (c *Connection) CloseWithError(err *Error) bool {
	c.b.mu.Lock()
	defer c.b.mu.Unlock()
	if c.closed != nil || err == nil {
		return false
	}
	c.fail(err)
	c.b.flush()
	return true
}

// CloseWithError closes the channel from the broker's side with err, as
// RabbitMQ does when a method fails: a soft error (err.Hard false) closes
// the channel, pushing a ChannelClose and requeueing its unacked
// deliveries; a hard one closes the whole connection. It reports false,
// doing nothing, when the channel is already closed or err is nil.
func (ch *Channel) CloseWithError(err *Error) bool {
	ch.b.mu.Lock()
	defer ch.b.mu.Unlock()
	if ch.closed != nil || ch.conn.closed != nil || err == nil {
		return false
	}
	ch.fail(err)
	ch.b.flush()
	return true
}
