package sim

import (
	"slices"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/queue"
)

// outbox is a connection's pushes in the order the broker made them. Each
// waits until it is taken: by Connection.Drain, which takes everything in
// order, or by the readers of one kind (Consumer.Next, Channel.Returns,
// ...). A connection's outbox is its only output.
type outbox struct {
	items []outItem // items[head:] are waiting or taken; seq grows along it
	head  int
	taken int // taken items in items[head:]
	seq   uint64
	// staging is set during a client's method call on this connection,
	// and on a batched connection until it is idle: what queues push in
	// reaction (deliveries, broker cancels) waits in staged, behind the
	// channel's own pushes.
	staging bool
	staged  []stagedItem
	// notify is ConnectOptions.Notify.
	notify func()
	// deliveriesTaken counts the deliveries readers took since the
	// connection last looked (Connection.taken).
	deliveriesTaken int
}

// outItem is one push, kept small: deliveries, confirms and cancels, the
// pushes of the hot paths, are held by their fields and become a Push only
// when taken; the others are held whole.
type outItem struct {
	method      protocol.Method
	channel     uint16
	redelivered bool
	multiple    bool
	taken       bool
	seq         uint64
	owner       *Channel // the channel a channel's push belongs to; numbers are reused
	tag         uint64   // delivery tag, or a confirm's publish tag
	ctag        string
	queue       string
	msg         *queue.Message // basic.deliver
	full        *Push          // the other pushes
}

// push returns the Push the item holds.
func (it *outItem) push() Push {
	if it.full != nil {
		return *it.full
	}
	p := Push{Method: it.method, Channel: it.channel, Multiple: it.multiple}
	if it.msg != nil {
		p.Delivery = makeDelivery(it.ctag, it.tag, it.redelivered, it.queue, it.msg)
	} else {
		p.ConsumerTag, p.DeliveryTag = it.ctag, it.tag
	}
	return p
}

// compact returns the item for p: by its fields when p is a confirm or a
// cancel, whole otherwise.
func compact(owner *Channel, p *Push) outItem {
	it := outItem{method: p.Method, channel: p.Channel, owner: owner}
	switch p.Method {
	case protocol.BasicAck, protocol.BasicNack:
		it.tag, it.multiple = p.DeliveryTag, p.Multiple
	case protocol.BasicCancel:
		it.ctag = p.ConsumerTag
	default:
		full := *p
		it.full = &full
	}
	return it
}

// pending returns the number of pushes not yet taken.
func (o *outbox) pending() int { return len(o.items) - o.head - o.taken }

// add appends an item and returns its sequence number.
func (o *outbox) add(it outItem) uint64 {
	wasEmpty := o.pending() == 0
	o.seq++
	it.seq = o.seq
	o.items = append(o.items, it)
	if wasEmpty && o.notify != nil {
		o.notify()
	}
	return o.seq
}

// stagedItem is a queue's push held during a call; cons, when set, is the
// in-process consumer that reads it with Next; late marks a delivery
// from a quorum queue, which reaches RabbitMQ's channel only after the
// queue's consensus (Channel.dropLateDeliveries).
type stagedItem struct {
	outItem
	cons *Consumer
	late bool
}

// queuePush appends a push a queue makes (a delivery, a broker cancel).
// During a client's call it waits behind the channel's own pushes (its
// replies, returns, confirms and closes): in RabbitMQ the channel and its
// queues are separate processes, and what the queues send in reaction to
// a method reaches the client after what the channel sends for it.
func (o *outbox) queuePush(it outItem, cons *Consumer, late bool) {
	if o.staging {
		o.staged = append(o.staged, stagedItem{it, cons, late})
		return
	}
	seq := o.add(it)
	if cons != nil {
		cons.remember(seq)
	}
}

// beginCall starts holding queue pushes; endCall appends them (see
// Connection.endCall and Idle).
func (o *outbox) beginCall() { o.staging = true }

func (o *outbox) endCall() {
	o.staging = false
	for _, st := range o.staged {
		o.queuePush(st.outItem, st.cons, false)
	}
	clear(o.staged)
	o.staged = o.staged[:0]
}

// dropLate drops the late deliveries staged for ch and returns how many
// it dropped.
func (o *outbox) dropLate(ch *Channel) int {
	kept := o.staged[:0]
	for _, st := range o.staged {
		if !st.late || st.owner != ch {
			kept = append(kept, st)
		}
	}
	n := len(o.staged) - len(kept)
	clear(o.staged[len(kept):])
	o.staged = kept
	return n
}

// find returns the index of the waiting push with sequence number seq.
func (o *outbox) find(seq uint64) (int, bool) {
	live := o.items[o.head:]
	if len(live) > 0 && live[0].seq == seq { // the common case: the oldest
		return o.head, !live[0].taken
	}
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

// has reports whether the push with sequence number seq is waiting.
func (o *outbox) has(seq uint64) bool {
	_, ok := o.find(seq)
	return ok
}

// take marks the push with sequence number seq taken and returns it.
func (o *outbox) take(seq uint64) (outItem, bool) {
	i, ok := o.find(seq)
	if !ok {
		return outItem{}, false
	}
	it := o.items[i]
	o.markTaken(i)
	if it.method == protocol.BasicDeliver {
		o.deliveriesTaken++
	}
	return it, true
}

// markTaken takes items[i] and reclaims the space of taken items.
func (o *outbox) markTaken(i int) {
	o.mark(i)
	o.compact()
}

func (o *outbox) mark(i int) {
	o.items[i] = outItem{seq: o.items[i].seq, taken: true}
	o.taken++
}

// compact reclaims taken items: at the front at once, and in the middle
// once they are the majority, so that an untaken push (an unread confirm)
// holds no more than itself.
func (o *outbox) compact() {
	for o.head < len(o.items) && o.items[o.head].taken {
		o.head++
		o.taken--
	}
	switch {
	case o.head == len(o.items):
		o.items, o.head = o.items[:0], 0
	case o.head > 64 && o.head*2 > len(o.items):
		// A reader that stays behind by a push or two never empties the
		// outbox: move what waits to the front rather than let the taken
		// prefix grow with every push.
		n := copy(o.items, o.items[o.head:])
		clear(o.items[n:])
		o.items, o.head = o.items[:n], 0
	case o.taken > 64 && o.taken*2 > len(o.items)-o.head:
		kept := o.items[:0]
		for _, it := range o.items[o.head:] {
			if !it.taken {
				kept = append(kept, it)
			}
		}
		clear(o.items[len(kept):])
		o.items, o.head, o.taken = kept, 0, 0
	}
}

// takeEach takes, in order, every waiting push of channel ch with one of
// the methods, and returns them.
func (o *outbox) takeEach(ch *Channel, methods ...protocol.Method) []Push {
	var out []Push
	for i := o.head; i < len(o.items); i++ {
		if it := &o.items[i]; !it.taken && it.owner == ch && slices.Contains(methods, it.method) {
			out = append(out, it.push())
			o.mark(i)
		}
	}
	o.compact()
	return out
}

// drain takes every waiting push, in order, appending them to buf.
func (o *outbox) drain(buf []Push) []Push {
	for i := range o.items[o.head:] {
		if it := &o.items[o.head+i]; !it.taken {
			buf = append(buf, it.push())
			if it.method == protocol.BasicDeliver {
				o.deliveriesTaken++
			}
		}
	}
	clear(o.items)
	o.items, o.head, o.taken = o.items[:0], 0, 0
	return buf
}
