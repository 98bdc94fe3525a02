package consumer

import (
	"cmp"
	"slices"
	"sort"
)

// Rotation is the round robin of a queue's consumers within priority bands,
// with the blocked sets of their channels.
type Rotation[T any] struct {
	bands    []*band[T] // highest priority first; empty bands are kept
	count    int        // every consumer added and not removed
	blockSeq uint64
	scratch  []*Consumer[T] // reused by Credit and unblock
}

// Len returns the number of consumers in the rotation, blocked ones included.
func (r *Rotation[T]) Len() int { return r.count }

// Add puts a new consumer at the tail of its priority band.
func (r *Rotation[T]) Add(c *Consumer[T]) {
	if c.state != detached {
		panic("consumer: Add of a consumer already in a rotation")
	}
	r.count++
	r.activate(c)
}

// Remove takes a consumer out of the rotation, wherever it is.
func (r *Rotation[T]) Remove(c *Consumer[T]) {
	switch c.state {
	case detached:
		return
	case active:
		c.band.remove(c)
	case blockedCredit:
		c.group.withCredit.remove(c)
	}
	c.state = detached
	c.band = nil
	r.count--
}

func (r *Rotation[T]) activate(c *Consumer[T]) {
	b := r.bandFor(c.Priority)
	c.state = active
	c.band = b
	b.pushBack(c)
}

func (r *Rotation[T]) bandFor(priority int) *band[T] {
	i := sort.Search(len(r.bands), func(i int) bool { return r.bands[i].priority <= priority })
	if i < len(r.bands) && r.bands[i].priority == priority {
		return r.bands[i]
	}
	b := &band[T]{priority: priority}
	r.bands = append(r.bands, nil)
	copy(r.bands[i+1:], r.bands[i:])
	r.bands[i] = b
	return b
}

// Pick returns the consumer that gets the next message, or nil when no active
// consumer can take one. It offers the message to the head of the highest
// non-empty band; a consumer whose group is suspended, whose window is full,
// or that allow refuses is moved to the blocked set and the next one is tried.
// The chosen consumer moves to the tail of its band. allow is the channel-wide
// limiter: it is called last, only for a consumer that has credit, and its
// refusal suspends the consumer's group.
func (r *Rotation[T]) Pick(allow func(c *Consumer[T]) bool) *Consumer[T] {
	for _, b := range r.bands {
		for b.head != nil {
			c := b.head
			if r.admits(c, allow) {
				b.remove(c)
				b.pushBack(c)
				return c
			}
			r.block(c)
		}
	}
	return nil
}

// Offer tries one consumer alone, as a single-active-consumer queue does: it
// reports whether c can take a message, blocking it if not.
func (r *Rotation[T]) Offer(c *Consumer[T], allow func(c *Consumer[T]) bool) bool {
	if c.state == active && r.admits(c, allow) {
		return true
	}
	if c.state == active {
		r.block(c)
	}
	return false
}

// admits reports whether c may take a message: it is not paused, its
// group is not suspended, its window has room, and allow (the
// channel-wide limiter, asked last) agrees. A refusal by allow suspends
// the group.
func (r *Rotation[T]) admits(c *Consumer[T], allow func(c *Consumer[T]) bool) bool {
	if c.paused || c.group.suspended || !c.HasCredit() {
		return false
	}
	if allow != nil && !allow(c) {
		c.group.suspended = true
		return false
	}
	return true
}

func (r *Rotation[T]) block(c *Consumer[T]) {
	c.band.remove(c)
	c.band = nil
	r.blockSeq++
	c.blockSeq = r.blockSeq
	if c.HasCredit() && !c.paused {
		c.state = blockedCredit
		c.group.withCredit.pushBack(c)
	} else {
		c.state = blockedNoCredit
	}
}

// Pause keeps c from taking messages until Unpause, as a RabbitMQ 4.3
// quorum queue does with a consumer whose delivery timed out (rabbit_fifo
// status {timeout, up}). Its credit still moves. Like rabbit_fifo, which
// leaves such a consumer in its service queue and drops it when its turn
// comes (checkout_one/4 skips a consumer that is not up), c stays where
// it is in its band and leaves the rotation when Pick or Offer reaches it.
func (r *Rotation[T]) Pause(c *Consumer[T]) { c.paused = true }

// Unpause lets c take messages again. If it is still in its band it
// takes its turn there. If it left the rotation while paused, it rejoins
// the tail of its band now when rejoin is set and it has credit, or else
// at the next Credit that names it: rabbit_fifo puts a consumer back in
// its service queue only in update_or_remove_con/4, which a settlement
// or discard calls but not the return (basic.nack with requeue) of a
// message the consumer no longer holds.
func (r *Rotation[T]) Unpause(c *Consumer[T], rejoin bool) {
	c.paused = false
	if rejoin && c.state == blockedNoCredit && c.HasCredit() {
		r.activate(c)
	}
}

// Spent takes c out of its band at once if its window is full, as
// rabbit_fifo does: checkout_one/4 puts a consumer back in the service
// queue only while it has credit left, and a settlement that gives it
// credit appends it at the tail (update_or_remove_sub/5). A classic queue
// instead blocks a consumer lazily, when it reaches the head without
// credit. The order shows: a consumer that ran out and got credit back
// goes behind the others of its priority
// (scenarios/library/quorum-credit-rejoin.txt).
func (r *Rotation[T]) Spent(c *Consumer[T]) {
	if c.state == active && !c.HasCredit() {
		r.block(c)
	}
}

// Delivered records a delivery to c: an ack-mode consumer uses one credit.
func (r *Rotation[T]) Delivered(c *Consumer[T]) {
	if !c.NoAck {
		c.outstanding++
	}
}

// Credit gives one credit back to each consumer in settled (a consumer
// appears once per settled delivery; all belong to one group) after acks,
// nacks or rejects. If that lifts any window off zero, those consumers and
// every consumer of the group that has credit rejoin the rotation, in the
// order they were blocked: RabbitMQ's subtract_acks followed by one unblock.
// A consumer that left the rotation paused and was unpaused without
// rejoining counts as lifted off zero; a paused one stays out. It reports
// whether any consumer rejoined.
func (r *Rotation[T]) Credit(settled []*Consumer[T]) bool {
	gained := r.scratch[:0]
	var g *Group[T]
	for _, c := range settled {
		if c.NoAck {
			continue
		}
		wasFull := !c.HasCredit()
		// parked: it left the rotation paused and has credit to spare.
		parked := !wasFull && c.state == blockedNoCredit && !slices.Contains(gained, c)
		c.outstanding--
		if c.outstanding < 0 {
			panic("consumer: more settlements than deliveries")
		}
		if (wasFull || parked) && c.HasCredit() && c.state != detached && !c.paused {
			gained = append(gained, c)
			g = c.group
		}
	}
	if g == nil {
		return false
	}
	moved := r.unblock(g, gained)
	clear(gained)
	r.scratch = gained[:0]
	return moved
}

// Resume clears a group's suspension (the channel-wide limit has room again,
// or was removed) and brings back its consumers that have credit.
func (r *Rotation[T]) Resume(g *Group[T]) bool {
	if !g.suspended {
		return false
	}
	g.suspended = false
	return r.unblock(g, nil)
}

// unblock moves the group's consumers that have credit, among them those
// of gained that were blocked for credit, to the tails of their bands in the
// order they were blocked.
func (r *Rotation[T]) unblock(g *Group[T], gained []*Consumer[T]) bool {
	// gained is compacted in place to the consumers that move.
	moving := gained[:0]
	for _, c := range gained {
		if c.state == blockedNoCredit {
			moving = append(moving, c)
		}
	}
	for c := g.withCredit.head; c != nil; c = c.next {
		moving = append(moving, c)
	}
	if len(moving) == 0 {
		return false
	}
	slices.SortFunc(moving, func(a, b *Consumer[T]) int { return cmp.Compare(a.blockSeq, b.blockSeq) })
	for _, c := range moving {
		if c.state == blockedCredit {
			g.withCredit.remove(c)
		}
		r.activate(c)
	}
	return true
}
