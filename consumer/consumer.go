// Package consumer models what a classic queue knows about its consumers: each
// consumer's credit window (prefetch, outstanding deliveries, no-ack, priority,
// exclusivity) and the rotation that decides who gets the next message.
//
// The rotation follows rabbit_queue_consumers in RabbitMQ 3.10: active consumers
// sit in priority bands, each a FIFO. The head of the highest band is offered
// the next message; if it cannot take it, it leaves the active set for its
// channel's blocked set and the next one is tried. A consumer that takes a
// message moves to the tail of its band. Blocking is lazy: a consumer whose
// window just filled stays in its band until its turn comes. When a settlement
// gives a blocked consumer credit again, it and every other consumer of that
// channel that has credit rejoin the tails of their bands, in the order they
// were blocked. Blocked consumers cost nothing when messages are dispatched.
//
// The package holds no messages and no channels: the queue asks the rotation
// for a consumer and the broker decides about the channel-wide limit through
// the allow function it passes to Pick.
package consumer

// Consumer is one consumer of one queue and its credit window.
type Consumer struct {
	Tag       string
	NoAck     bool
	Exclusive bool
	Priority  int
	// Prefetch is the per-consumer window; 0 means unlimited. It is ignored
	// for no-ack consumers, which RabbitMQ gives no credit entry.
	Prefetch int
	// Outstanding counts deliveries sent and not yet settled. It only moves
	// for consumers that must ack. Invariant: Outstanding ≤ Prefetch when
	// Prefetch > 0, except after a qos lowering, which RabbitMQ never applies
	// to existing consumers.
	Outstanding int
	// Group is the set of this queue's consumers that share its channel.
	Group *Group
	// Ref is the owner's handle for this consumer (the broker's record).
	Ref any

	state    state
	band     *band
	prev     *Consumer
	next     *Consumer
	blockSeq uint64
}

type state uint8

const (
	detached        state = iota // not in any rotation
	active                       // in a priority band
	blockedNoCredit              // its own window is full
	blockedCredit                // has credit, but its channel was suspended
)

// HasCredit reports whether the consumer's own window lets it take a message.
func (c *Consumer) HasCredit() bool {
	return c.NoAck || c.Prefetch == 0 || c.Outstanding < c.Prefetch
}

// Blocked reports whether the consumer is out of the rotation until a
// settlement or a channel resume brings it back.
func (c *Consumer) Blocked() bool {
	return c.state == blockedNoCredit || c.state == blockedCredit
}

// Group is the consumers of one queue that share a channel. RabbitMQ keeps
// their blocked set and the channel-limiter state per channel and queue.
type Group struct {
	// Suspended is set when the channel-wide limiter refused a delivery and
	// cleared by Resume. While it is set every consumer of the group is
	// blocked when its turn comes.
	Suspended bool
	// Ref is the owner's handle for the group (the broker's channel).
	Ref any

	withCredit list // blockedCredit consumers in block order
}

// list is an intrusive doubly linked list of consumers.
type list struct {
	head, tail *Consumer
	n          int
}

func (l *list) pushBack(c *Consumer) {
	c.prev, c.next = l.tail, nil
	if l.tail != nil {
		l.tail.next = c
	} else {
		l.head = c
	}
	l.tail = c
	l.n++
}

func (l *list) remove(c *Consumer) {
	if c.prev != nil {
		c.prev.next = c.next
	} else {
		l.head = c.next
	}
	if c.next != nil {
		c.next.prev = c.prev
	} else {
		l.tail = c.prev
	}
	c.prev, c.next = nil, nil
	l.n--
}

type band struct {
	priority int
	list
}
