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
// the allow function it passes to Pick. A refusal suspends the consumer's
// group until Resume, as a RabbitMQ queue marks the channel's limiter
// suspended.
package consumer

// Settings are a consumer's basic.consume settings, fixed at creation.
type Settings struct {
	Tag       string
	NoAck     bool
	Exclusive bool
	Priority  int
	// Prefetch is the per-consumer window; 0 means unlimited. It is ignored
	// for no-ack consumers, which RabbitMQ gives no credit entry.
	Prefetch int
}

// Consumer is one consumer of one queue and its credit window. T is the
// broker's record of the consumer, which the consumer carries for it (see
// Owner).
type Consumer[T any] struct {
	Settings
	owner T
	group *Group[T]
	// outstanding counts deliveries sent and not yet settled. It only moves
	// for consumers that must ack. Invariant: outstanding ≤ Prefetch when
	// Prefetch > 0, except after a qos lowering, which RabbitMQ never
	// applies to existing consumers.
	outstanding int
	// paused keeps the consumer from taking messages until
	// Rotation.Unpause (Rotation.Pause).
	paused bool

	state    state
	band     *band[T]
	prev     *Consumer[T]
	next     *Consumer[T]
	blockSeq uint64
}

// New returns a consumer of group g (its queue's consumers on one
// channel), not yet in a rotation, carrying owner.
func New[T any](s Settings, g *Group[T], owner T) *Consumer[T] {
	return &Consumer[T]{Settings: s, group: g, owner: owner}
}

// Owner returns the broker's record of the consumer.
func (c *Consumer[T]) Owner() T { return c.owner }

// Group returns the consumers of the same queue on the same channel.
func (c *Consumer[T]) Group() *Group[T] { return c.group }

// Outstanding returns the deliveries sent and not yet settled.
func (c *Consumer[T]) Outstanding() int { return c.outstanding }

// Paused reports whether the consumer takes no message until
// Rotation.Unpause.
func (c *Consumer[T]) Paused() bool { return c.paused }

type state uint8

const (
	detached        state = iota // not in any rotation
	active                       // in a priority band
	blockedNoCredit              // its own window is full, or it was paused
	blockedCredit                // has credit, but its channel was suspended
)

// HasCredit reports whether the consumer's own window lets it take a message.
func (c *Consumer[T]) HasCredit() bool {
	return c.NoAck || c.Prefetch == 0 || c.outstanding < c.Prefetch
}

// Blocked reports whether the consumer is out of the rotation until a
// settlement or a channel resume brings it back.
func (c *Consumer[T]) Blocked() bool {
	return c.state == blockedNoCredit || c.state == blockedCredit
}

// Group is the consumers of one queue that share a channel. RabbitMQ keeps
// their blocked set and the channel-limiter state per channel and queue.
type Group[T any] struct {
	// suspended is set when the channel-wide limiter refused a delivery to
	// one of the group and cleared by Rotation.Resume. While it is set
	// every consumer of the group is blocked when its turn comes.
	suspended bool

	withCredit list[T] // blockedCredit consumers in block order
}

// Suspended reports whether the channel-wide limiter refused the group
// and the queue has not been told to resume it.
func (g *Group[T]) Suspended() bool { return g.suspended }

// list is an intrusive doubly linked list of consumers.
type list[T any] struct {
	head, tail *Consumer[T]
	n          int
}

func (l *list[T]) pushBack(c *Consumer[T]) {
	c.prev, c.next = l.tail, nil
	if l.tail != nil {
		l.tail.next = c
	} else {
		l.head = c
	}
	l.tail = c
	l.n++
}

func (l *list[T]) remove(c *Consumer[T]) {
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

type band[T any] struct {
	priority int
	list[T]
}
