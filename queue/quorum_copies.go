package queue

import "github.com/amqpsim/amqpsim/protocol"

// The copies a quorum queue makes of a returned message, to carry its
// x-delivery-count header, cost a RabbitMQ-like return no allocation of
// its own in the common case: the message records and their properties are
// carved from blocks (as a stream's are), and the headers of a publisher
// that set none are shared by every delivery with the same counts.
// BenchmarkDeepQueue/quorum measured 6 allocations per step (publish,
// nack with requeue, redelivery, ack) before, 2 after: the broker's copy
// of the body and the published message's record.

// quorumBlock is how many message records, and how many properties, a
// quorum queue allocates at once for its counted copies. A block stays
// alive while one of its copies does, so it is kept small.
const quorumBlock = 32

// quorumSharedCounts bounds the shared header tables a queue keeps: one
// per combination of counts met, so that a message returned thousands of
// times does not grow the queue.
const quorumSharedCounts = 256

// countKey is the headers withCounts adds.
type countKey struct {
	dc, ac       int64
	hasDC, hasAC bool
}

// quorumCopies hands out the records and properties of counted copies.
type quorumCopies struct {
	msgs  []Message             // the unused rest of the current block
	props []protocol.Properties // likewise
	// shared are the properties of a message published without any, by
	// counts; sharedHeaders the header tables of one published without
	// headers. Both are read-only once made, like every delivered
	// message's properties.
	shared        map[countKey]*protocol.Properties
	sharedHeaders map[countKey]protocol.Table
}

// message returns a new record holding a copy of m.
func (k *quorumCopies) message(m *Message) *Message {
	if len(k.msgs) == 0 {
		k.msgs = make([]Message, quorumBlock)
	}
	c := &k.msgs[0]
	k.msgs = k.msgs[1:]
	*c = *m
	return c
}

// withCounts is withCounts(p, ...) from the queue's blocks and shared
// tables; p is not modified.
func (k *quorumCopies) withCounts(p *protocol.Properties, key countKey) *protocol.Properties {
	if p == nil {
		if c, ok := k.shared[key]; ok {
			return c
		}
		c := withCounts(nil, key.dc, key.hasDC, key.ac, key.hasAC)
		if len(k.shared) < quorumSharedCounts {
			if k.shared == nil {
				k.shared = map[countKey]*protocol.Properties{}
			}
			k.shared[key] = c
		}
		return c
	}
	if len(k.props) == 0 {
		k.props = make([]protocol.Properties, quorumBlock)
	}
	c := &k.props[0]
	k.props = k.props[1:]
	*c = *p
	if len(p.Headers) > 0 {
		c.Headers = countHeaders(p.Headers, key)
		return c
	}
	h, ok := k.sharedHeaders[key]
	if !ok {
		h = countHeaders(nil, key)
		if len(k.sharedHeaders) < quorumSharedCounts {
			if k.sharedHeaders == nil {
				k.sharedHeaders = map[countKey]protocol.Table{}
			}
			k.sharedHeaders[key] = h
		}
	}
	c.Headers = h
	return c
}
