package queue

import "math/bits"

// quorumReady holds a quorum queue's messages that were never returned
// (rabbit_fifo's messages), in the order the release takes them:
//   - NoQuorumPriorities: one FIFO (3.x, lqueue).
//   - TwoQuorumPriorities: rabbit_fifo_q (4.0–4.2), two FIFOs, high for
//     priority > 4 (rabbit_fifo:priority_tag/1). Every third take is
//     "fair": it takes the older head of the two (lower Raft index, here
//     Seq); the other takes prefer high. The counter counts every take.
//   - StrictQuorumPriorities: rabbit_fifo_pq (4.3), 32 FIFOs, always the
//     highest non-empty; priority above 31 is 31 and none is 4
//     (rabbit_fifo:msg_priority/1). A priority of 0 is taken for none, as
//     clients send no priority property for 0.
type quorumReady struct {
	mode    QuorumPriorities
	levels  []ring // by level, highest last
	full    uint32 // bit l is set when levels[l] is not empty
	n       int
	counter int // rabbit_fifo_q's dequeue_counter
}

// quorumWeight is rabbit_fifo_q's ?WEIGHT.
const quorumWeight = 2

func newQuorumReady(mode QuorumPriorities) quorumReady {
	n := 1
	switch mode {
	case TwoQuorumPriorities:
		n = 2
	case StrictQuorumPriorities:
		n = 32
	}
	return quorumReady{mode: mode, levels: make([]ring, n)}
}

func (r *quorumReady) len() int { return r.n }

// level is the FIFO m belongs to.
func (r *quorumReady) level(m *Message) int {
	var p int
	if m.Properties != nil {
		p = int(m.Properties.Priority)
	}
	switch r.mode {
	case TwoQuorumPriorities:
		if p > 4 {
			return 1
		}
		return 0
	case StrictQuorumPriorities:
		if p == 0 {
			return 4
		}
		return min(p, 31)
	}
	return 0
}

func (r *quorumReady) pushBack(m *Message) {
	l := r.level(m)
	r.levels[l].pushBack(m)
	r.full |= 1 << l
	r.n++
}

// next is the level the next take comes from, or -1 when empty.
func (r *quorumReady) next() int {
	if r.n == 0 {
		return -1
	}
	if r.mode == TwoQuorumPriorities {
		lo, hi := &r.levels[0], &r.levels[1]
		switch {
		case hi.len() > 0 && lo.len() > 0 && r.counter == quorumWeight:
			if hi.front().Seq < lo.front().Seq {
				return 1
			}
			return 0
		case hi.len() > 0:
			return 1
		}
		return 0
	}
	return bits.Len32(r.full) - 1 // the highest non-empty level
}

// front is the message the next take returns, nil when empty.
func (r *quorumReady) front() *Message {
	if l := r.next(); l >= 0 {
		return r.levels[l].front()
	}
	return nil
}

func (r *quorumReady) popFront() *Message {
	l := r.next()
	if l < 0 {
		return nil
	}
	if r.counter == quorumWeight {
		r.counter = 0
	} else {
		r.counter++
	}
	r.n--
	m := r.levels[l].popFront()
	if r.levels[l].len() == 0 {
		r.full &^= 1 << l
	}
	return m
}

// eachHead calls f with the head of each non-empty level.
func (r *quorumReady) eachHead(f func(*Message)) {
	for full := r.full; full != 0; full &= full - 1 {
		f(r.levels[bits.TrailingZeros32(full)].front())
	}
}

// takeExpiredHeads appends to gone, level by level from the lowest, the
// messages at the level's head for which expired holds
// (rabbit_fifo_pq:take_while/2 over its ordered buckets), and takes them
// out.
func (r *quorumReady) takeExpiredHeads(expired func(*Message) bool, gone []*Message) []*Message {
	for full := r.full; full != 0; full &= full - 1 {
		l := bits.TrailingZeros32(full)
		level := &r.levels[l]
		for level.len() > 0 && expired(level.front()) {
			gone = append(gone, level.popFront())
			r.n--
		}
		if level.len() == 0 {
			r.full &^= 1 << l
		}
	}
	return gone
}

// all returns the messages in the order they would be taken.
func (r *quorumReady) all() []*Message {
	c := r.clone()
	out := make([]*Message, 0, r.n)
	for m := c.popFront(); m != nil; m = c.popFront() {
		out = append(out, m)
	}
	return out
}

func (r *quorumReady) clone() quorumReady {
	c := *r
	c.levels = make([]ring, len(r.levels))
	for i := range r.levels {
		for j := 0; j < r.levels[i].len(); j++ {
			c.levels[i].pushBack(r.levels[i].at(j))
		}
	}
	return c
}

// clear empties it, keeping the mode.
func (r *quorumReady) clear() { *r = newQuorumReady(r.mode) }
