package sim

// Flow control towards a client that does not read: RabbitMQ's queues stop
// delivering to a channel that has 200 messages not yet written to its
// socket (rabbit_queue_consumers' unsent_message_count, lowered by the
// writer's notify_sent), so a client that stops reading keeps its
// messages queued and the broker's memory bounded. The simulator counts
// per connection, not per channel and queue: a connection's unsent
// deliveries, pushed and not yet sent, which is taken from the outbox,
// or with ShellOptions.SentWhenWritten reported written by the shell
// (Written). A client reading several channels or queues on one
// connection is held back sooner than by RabbitMQ. The bound is
// ShellOptions.MaxUnsent: a shell sets DefaultMaxUnsent; in process,
// where nothing stands between the outbox and its reader, there is none
// unless set.

// DefaultMaxUnsent is RabbitMQ's bound on unsent deliveries per channel
// and queue, which a shell applies to the whole connection
// (ShellOptions.MaxUnsent).
const DefaultMaxUnsent = 200

// maxUnsent returns the connection's bound, or 0 for none.
func (c *Connection) maxUnsent() int { return max(c.opts.Shell.MaxUnsent, 0) }

// canSend reports whether the connection may be sent another delivery
// from q; when it may not, q is remembered and dispatched again once the
// client has caught up. Caller holds the lock.
func (c *Connection) canSend(q *brokerQueue) bool {
	if max := c.maxUnsent(); max == 0 || c.unsent < max {
		return true
	}
	for _, w := range c.waiting {
		if w == q {
			return false
		}
	}
	c.waiting = append(c.waiting, q)
	return false
}

// sent lowers the unsent count by n deliveries the client got, and
// resumes the queues that waited once there is room. Caller holds the
// lock.
func (c *Connection) sent(n int) {
	if n == 0 {
		return
	}
	c.unsent = max(c.unsent-n, 0)
	if len(c.waiting) == 0 || c.unsent >= c.maxUnsent() {
		return
	}
	waiting := c.waiting
	c.waiting = nil
	for _, q := range waiting {
		if q.deleted {
			continue
		}
		for _, ch := range c.channelsByID() {
			if g := ch.groups[q]; g != nil {
				q.Resume(g)
			}
		}
		c.b.markDirty(q)
	}
	c.b.flush()
}

// Written tells the broker that the shell wrote n of the deliveries it
// drained to the client's socket, so that more can follow (see
// ShellOptions.MaxUnsent and SentWhenWritten).
func (c *Connection) Written(n int) {
	c.b.mu.Lock()
	defer c.b.mu.Unlock()
	if c.closed == nil {
		c.sent(n)
	}
}

// channelsByID returns the open channels in number order. Caller holds the
// lock.
func (c *Connection) channelsByID() []*Channel {
	out := make([]*Channel, 0, len(c.channels))
	for _, ch := range c.channels {
		if ch.closed == nil {
			out = append(out, ch)
		}
	}
	sortChannels(out)
	return out
}
