package queue

import "container/heap"

// readyList holds one priority level's ready messages in sequence order.
//
// Messages that have never been fetched are appended to a ring in publish
// order. A requeued message goes to a min-heap keyed by sequence. Every
// requeued message was fetched from the head, so its sequence is below every
// message still in the ring: the heap always sits in front of the ring, and
// the head of the list is the heap's minimum if there is one. Requeue is
// O(log k) for k requeued messages, whatever the queue length.
type readyList struct {
	fresh    ring
	requeued seqHeap
}

func (l *readyList) len() int { return l.fresh.len() + len(l.requeued) }

func (l *readyList) head() *Message {
	if len(l.requeued) > 0 {
		return l.requeued[0]
	}
	return l.fresh.front()
}

func (l *readyList) pop() *Message {
	if len(l.requeued) > 0 {
		return heap.Pop(&l.requeued).(*Message)
	}
	return l.fresh.popFront()
}

func (l *readyList) push(m *Message)    { l.fresh.pushBack(m) }
func (l *readyList) requeue(m *Message) { heap.Push(&l.requeued, m) }

// each calls f for every message in order; it stops when f returns false.
func (l *readyList) each(f func(m *Message) bool) {
	if len(l.requeued) > 0 {
		sorted := make(seqHeap, len(l.requeued))
		copy(sorted, l.requeued)
		for len(sorted) > 0 {
			if !f(heap.Pop(&sorted).(*Message)) {
				return
			}
		}
	}
	for i := 0; i < l.fresh.len(); i++ {
		if !f(l.fresh.at(i)) {
			return
		}
	}
}

func (l *readyList) clear() {
	l.fresh = ring{}
	l.requeued = nil
}

type seqHeap []*Message

func (h seqHeap) Len() int           { return len(h) }
func (h seqHeap) Less(i, j int) bool { return h[i].Seq < h[j].Seq }
func (h seqHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *seqHeap) Push(x any)        { *h = append(*h, x.(*Message)) }
func (h *seqHeap) Pop() any {
	old := *h
	m := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return m
}

// ring is a growable circular buffer of messages.
type ring struct {
	buf  []*Message
	head int
	n    int
}

func (r *ring) len() int { return r.n }

func (r *ring) front() *Message {
	if r.n == 0 {
		return nil
	}
	return r.buf[r.head]
}

func (r *ring) at(i int) *Message { return r.buf[(r.head+i)%len(r.buf)] }

func (r *ring) pushBack(m *Message) {
	if r.n == len(r.buf) {
		size := 2 * len(r.buf)
		if size == 0 {
			size = 8
		}
		buf := make([]*Message, size)
		for i := 0; i < r.n; i++ {
			buf[i] = r.at(i)
		}
		r.buf, r.head = buf, 0
	}
	r.buf[(r.head+r.n)%len(r.buf)] = m
	r.n++
}

func (r *ring) popFront() *Message {
	if r.n == 0 {
		return nil
	}
	m := r.buf[r.head]
	r.buf[r.head] = nil
	r.head = (r.head + 1) % len(r.buf)
	r.n--
	if r.n == 0 {
		r.head = 0
	}
	return m
}

// enqueue appends a message at the tail of its priority level and gives it
// the next sequence number.
func (q *classic[T]) enqueue(m *Message) {
	q.nextSeq++
	m.Seq = q.nextSeq
	if q.maxPriority > 0 && m.Properties != nil {
		m.priority = min(m.Properties.Priority, uint8(q.maxPriority))
	}
	q.levels[m.priority].push(m)
	q.readyCount++
	q.readyBytes += int64(len(m.Body))
}

// head returns the message the next fetch would take, or nil.
func (q *classic[T]) head() *Message {
	for p := len(q.levels) - 1; p >= 0; p-- {
		if m := q.levels[p].head(); m != nil {
			return m
		}
	}
	return nil
}

// fetch takes the head message. It reports whether the message was fetched
// before (the redelivered flag), and counts it as unacked when ackRequired.
func (q *classic[T]) fetch(ackRequired bool) (m *Message, redelivered bool) {
	if m = q.take(); m == nil {
		return nil, false
	}
	redelivered = m.Delivered
	m.Delivered = true
	if ackRequired {
		q.unacked++
	}
	return m, redelivered
}

// take removes the head message without fetching it.
func (q *classic[T]) take() *Message {
	for p := len(q.levels) - 1; p >= 0; p-- {
		if q.levels[p].len() > 0 {
			m := q.levels[p].pop()
			q.readyCount--
			q.readyBytes -= int64(len(m.Body))
			return m
		}
	}
	return nil
}

// requeue returns an unacked message to its original position.
func (q *classic[T]) requeue(m *Message) {
	q.levels[m.priority].requeue(m)
	q.readyCount++
	q.readyBytes += int64(len(m.Body))
}
