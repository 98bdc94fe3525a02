package sim

import (
	"slices"
	"sync/atomic"

	"github.com/amqpsim/amqpsim/internal/scratch"
	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/queue"
)

// outbox is a connection's output: every push, in the order the broker
// made it, in one log. There is one way in (add, or queuePush for what a
// queue pushes) and two ways out, over the same log:
//
//   - Drain takes every waiting push in order: how a shell reads.
//   - A lane takes the pushes of one in-process reader (a consumer's
//     deliveries, a channel's returns, confirms or cancels) in order:
//     how Consumer.Next, Channel.Returns, Confirms and Cancels read. A
//     lane is only an index, the log positions of its pushes.
//
// Every push enters the log and its reader's lane, whoever reads the
// connection; a push is gone once either way took it. The pushes no
// lane indexes (basic.get replies, tx.commit-ok, closes, connection
// blocks) are read by Drain alone.
type outbox struct {
	log   []outItem // log[head:] are waiting or taken; seq grows along it
	head  int
	taken int // taken items in log[head:]
	seq   uint64
	// drains counts the Drains: each took everything, so a lane last
	// written before the latest one is empty (lane.drain).
	drains uint64
	// staging is set during a client's method call on this connection,
	// and on a batched connection until it is idle: what queues push in
	// reaction (deliveries, broker cancels) waits in staged, behind the
	// channel's own pushes.
	staging bool
	staged  []stagedItem
	// notify is ShellOptions.Notify; busy is pending() > 0, for a look
	// without the lock (Connection.HasPending).
	notify func()
	busy   atomic.Bool
	// deliveriesTaken counts the deliveries taken since the connection
	// last looked (Connection.taken).
	deliveriesTaken int
}

// lane is an in-process reader's index into its connection's outbox: the
// sequence numbers of its waiting pushes, oldest first. Invariant: while
// drain equals the outbox's drains, seqs[read:] are exactly the reader's
// pushes in the log not yet taken; otherwise it has none.
type lane struct {
	seqs  []uint64
	read  int
	drain uint64
	// waiting is len(seqs)-read, or more until a Drain's reset is seen:
	// a reader may look at it without the lock to learn that it has
	// nothing (Consumer.Next).
	waiting atomic.Int32
}

// outItem is one push, kept small: deliveries and confirms, the pushes of
// the hot paths, are held by their fields and become a Push only when
// taken; the others are held whole.
type outItem struct {
	seq         uint64
	tag         uint64         // delivery tag, or a confirm's publish tag
	cons        *Consumer      // basic.deliver: the consumer, for its tag and queue
	msg         *queue.Message // basic.deliver
	full        *Push          // the other pushes
	method      protocol.Method
	channel     uint16
	redelivered bool
	multiple    bool
	taken       bool
}

// push returns the Push the item holds.
func (it *outItem) push() Push {
	var p Push
	it.fill(&p)
	return p
}

// fill makes p, which is zero, the Push the item holds, in place: a Push
// is large.
func (it *outItem) fill(p *Push) {
	if it.full != nil {
		*p = *it.full
		return
	}
	p.Method, p.Channel, p.Multiple = it.method, it.channel, it.multiple
	if it.msg != nil {
		p.Delivery.set(it.cons.tag, it.tag, it.redelivered, it.cons.queue, it.msg)
	} else {
		p.DeliveryTag = it.tag
	}
}

// compact returns the item for p: by its fields when p is a confirm, whole
// otherwise.
func compact(p *Push) outItem {
	it := outItem{method: p.Method, channel: p.Channel}
	switch p.Method {
	case protocol.BasicAck, protocol.BasicNack:
		it.tag, it.multiple = p.DeliveryTag, p.Multiple
	default:
		full := *p
		it.full = &full
	}
	return it
}

// pending returns the number of pushes not yet taken.
func (o *outbox) pending() int { return len(o.log) - o.head - o.taken }

// add appends an item to the log, and to its reader's lane l (nil for a
// push only Drain reads).
func (o *outbox) add(it outItem, l *lane) {
	wasEmpty := o.pending() == 0
	o.seq++
	it.seq = o.seq
	o.log = append(o.log, it)
	if l != nil {
		l.valid(o)
		l.seqs = append(l.seqs, o.seq)
		l.waiting.Add(1)
	}
	if wasEmpty {
		o.busy.Store(true)
		if o.notify != nil {
			o.notify()
		}
	}
}

// stagedItem is a queue's push held during a call, with its lane; owner
// is the channel it goes to, and late marks a delivery from a quorum
// queue, which reaches RabbitMQ's channel only after the queue's
// consensus (Channel.dropLateDeliveries).
type stagedItem struct {
	outItem
	lane  *lane
	owner *Channel
	late  bool
}

// queuePush appends a push a queue makes (a delivery, a broker cancel).
// During a client's call it waits behind the channel's own pushes (its
// replies, returns, confirms and closes): in RabbitMQ the channel and its
// queues are separate processes, and what the queues send in reaction to
// a method reaches the client after what the channel sends for it.
func (o *outbox) queuePush(it outItem, l *lane, owner *Channel, late bool) {
	if o.staging {
		o.staged = append(o.staged, stagedItem{it, l, owner, late})
		return
	}
	o.add(it, l)
}

// beginCall starts holding queue pushes; endCall appends them (see
// Connection.endCall and Idle).
func (o *outbox) beginCall() { o.staging = true }

func (o *outbox) endCall() {
	o.staging = false
	if len(o.staged) > 0 || cap(o.staged) > keepCap {
		// Most calls have nothing to append, clear or release: small
		// enough to inline, endCall then costs them no call.
		o.appendStaged()
	}
}

// appendStaged is endCall when something was staged.
func (o *outbox) appendStaged() {
	for i := range o.staged {
		o.add(o.staged[i].outItem, o.staged[i].lane)
	}
	o.staged = reuse(o.staged)
}

// keepCap is the most room an emptied slice of the outbox keeps for
// reuse: a burst (a consumer taking a deep queue) does not hold its peak
// once it is taken.
const keepCap = 1024

// reuse returns s emptied: cleared for reuse, or nil when it grew past
// keepCap.
func reuse[T any](s []T) []T {
	if cap(s) > keepCap {
		return nil
	}
	scratch.Zero(s)
	return s[:0]
}

// shrink is reuse of a slice that holds nothing to clear.
func shrink[T any](s []T) []T {
	if cap(s) > keepCap {
		return nil
	}
	return s[:0]
}

// dropStaged drops what is staged for ch (only its late deliveries when
// lateOnly) and returns how many deliveries it dropped.
func (o *outbox) dropStaged(ch *Channel, lateOnly bool) (deliveries int) {
	kept := o.staged[:0]
	for _, st := range o.staged {
		switch {
		case st.owner != ch || lateOnly && !st.late:
			kept = append(kept, st)
		case st.method == protocol.BasicDeliver:
			deliveries++
		}
	}
	clear(o.staged[len(kept):])
	o.staged = kept
	return deliveries
}

// valid empties the lane if a Drain took its pushes.
func (l *lane) valid(o *outbox) {
	if l.drain != o.drains {
		l.seqs, l.read, l.drain = shrink(l.seqs), 0, o.drains
		l.waiting.Store(0)
	}
}

// next takes the oldest push of lane l into it, and reports whether there
// was one. It fills it in place rather than return it: an item is large
// enough that each copy shows on the delivery path.
func (o *outbox) next(l *lane, it *outItem) bool {
	l.valid(o)
	if l.read == len(l.seqs) {
		return false
	}
	seq := l.seqs[l.read]
	l.read++
	l.waiting.Add(-1)
	switch {
	case l.read == len(l.seqs):
		l.seqs, l.read = shrink(l.seqs), 0
	case l.read > 64 && l.read*2 > len(l.seqs):
		// A reader that stays behind by a push or two never empties its
		// lane: move what waits to the front.
		n := copy(l.seqs, l.seqs[l.read:])
		l.seqs, l.read = l.seqs[:n], 0
	}
	if h := o.head; h < len(o.log) && o.log[h].seq == seq && !o.log[h].taken {
		// The oldest push, the common case: the head moves past it,
		// with no search and no mark.
		*it = o.log[h]
		o.log[h] = outItem{}
		o.head++
	} else {
		i, ok := o.find(seq)
		if !ok {
			panic("sim: outbox: a lane's push is not waiting")
		}
		*it = o.log[i]
		o.log[i] = outItem{seq: seq, taken: true}
		o.taken++
	}
	if it.method == protocol.BasicDeliver {
		o.deliveriesTaken++
	}
	if o.head == len(o.log) {
		// Emptied, as a log read as fast as it is written mostly is:
		// compact would only find that.
		o.log, o.head = shrink(o.log), 0
	} else {
		o.compact()
	}
	if o.pending() == 0 {
		o.busy.Store(false)
	}
	return true
}

// find returns the index of the item with sequence number seq, which is
// in the log.
func (o *outbox) find(seq uint64) (int, bool) {
	live := o.log[o.head:]
	i, ok := slices.BinarySearchFunc(live, seq, func(it outItem, s uint64) int {
		switch {
		case it.seq < s:
			return -1
		case it.seq > s:
			return 1
		}
		return 0
	})
	return o.head + i, ok && !live[i].taken
}

// compact reclaims taken items: at the front at once, and in the middle
// once they are the majority, so that an untaken push (an unread confirm)
// holds no more than itself.
func (o *outbox) compact() {
	for o.head < len(o.log) && o.log[o.head].taken {
		o.head++
		o.taken--
	}
	switch {
	case o.head == len(o.log):
		o.log, o.head = shrink(o.log), 0 // taken items hold nothing
	case o.head > 64 && o.head*2 > len(o.log):
		// A reader that stays behind by a push or two never empties the
		// log: move what waits to the front rather than let the taken
		// prefix grow with every push.
		n := copy(o.log, o.log[o.head:])
		clear(o.log[n:])
		o.log, o.head = o.log[:n], 0
	case o.taken > 64 && o.taken*2 > len(o.log)-o.head:
		kept := o.log[:0]
		for _, it := range o.log[o.head:] {
			if !it.taken {
				kept = append(kept, it)
			}
		}
		clear(o.log[len(kept):])
		o.log, o.head, o.taken = kept, 0, 0
	}
}

// drain takes every waiting push, in order, appending them to buf.
func (o *outbox) drain(buf []Push) []Push {
	for i := range o.log[o.head:] {
		if it := &o.log[o.head+i]; !it.taken {
			buf = append(buf, Push{})
			it.fill(&buf[len(buf)-1])
			if it.method == protocol.BasicDeliver {
				o.deliveriesTaken++
			}
		}
	}
	o.log, o.head, o.taken = reuse(o.log), 0, 0
	o.drains++
	o.busy.Store(false)
	return buf
}
