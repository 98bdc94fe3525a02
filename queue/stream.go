package queue

import (
	"slices"
	"strings"
	"time"

	"github.com/amqpsim/amqpsim/consumer"
	"github.com/amqpsim/amqpsim/internal/scratch"
	"github.com/amqpsim/amqpsim/protocol"
)

// stream is a RabbitMQ 3.10.8 stream (x-queue-type=stream) as AMQP 0-9-1
// clients use it, on one node: an append-only log of messages, each with
// an offset, that every consumer reads on its own from where it asked to
// start (x-stream-offset), each delivery carrying its offset in the
// x-stream-offset header. A consumer's prefetch is its credit; an ack only
// returns credit, nothing leaves the log but by retention (x-max-length-bytes,
// x-max-age), which drops whole segments (stream_retention.go).
//
// Unlike RabbitMQ, every publish is a chunk of its own. RabbitMQ's osiris
// writer puts the messages that reach it together into one chunk, and a
// reader takes whole chunks: a consumer starting at "last" gets the whole
// last chunk, and one with little credit may get more messages than its
// prefetch (measured on RabbitMQ 3.10.8: three messages published in one
// step reach a consumer of prefetch 2 whole, and a consumer from "last"
// gets all three). Publishing one message per step, as the recorded
// scenarios do, gives one message per chunk on both.
type stream[T any] struct {
	declared
	env Env[T]

	// log holds the retained messages: log[i] has offset base+i.
	log     []streamEntry
	base    int64
	bodies  int64 // body bytes in log
	unacked int

	retention
	count lagCount

	rotation  consumer.Rotation[T] // for each consumer's credit only
	readers   []*reader[T]         // registration order
	order     []*reader[T]         // the order new messages are offered in
	byC       map[*consumer.Consumer[T]]*reader[T]
	hadReader bool
	settled   []*consumer.Consumer[T]
	// props is the unused rest of the block properties are copied into.
	props []protocol.Properties
	// filtering is RabbitMQ 3.13's stream filtering (Rules.StreamFiltering).
	filtering bool
	// filterSize is the bytes of a chunk's bloom filter, written when its
	// message has a filter value (x-stream-filter-size-bytes; a policy's
	// stream-filter-size-bytes is not modelled).
	filterSize int64
	epoch      time.Time
}

// streamEntry is one message in the log: as it is delivered (its
// properties carry the x-stream-offset header, made once) and when it was
// written.
type streamEntry struct {
	m *Message
	// at is when the chunk was written, on the Env.Now clock; ms is that
	// time as the wall-clock milliseconds RabbitMQ stamps a chunk with.
	at, ms int64
	// filter is the message's x-stream-filter-value, when hasFilter.
	filter    string
	hasFilter bool
	// seg is the number of the segment the chunk is in, pos its position
	// in the segment's file and size its bytes (chunkSize).
	seg  int32
	size int32
	pos  int64
}

// reader is one consumer's position in the log.
type reader[T any] struct {
	c *consumer.Consumer[T]
	// next is the offset it reads next; from is the offset it asked for
	// (OffsetAt): messages below it are skipped (rabbit_stream_queue
	// filters the records of a chunk with O >= StartOffs).
	next, from int64
	filter     *Filter
	// pinned are the entries, from offset pinnedBase, of the segments
	// that the retention evaluation its own attach ran deleted under a
	// 4.x reader (Rules.StreamReadBeforeRetention), which it reads
	// still.
	pinned     []streamEntry
	pinnedBase int64
	// ra is its read-ahead buffer, followed where
	// Rules.StreamReadAheadCrash holds.
	ra readAhead
}

func newStream[T any](env Env[T], d declared) (*stream[T], error) {
	if !d.opts.Rules.MaxAgeNoCrash {
		if err := maxAgeCrash(d.opts.Args); err != nil {
			return nil, err
		}
	}
	if err := d.validateStream(); err != nil {
		return nil, err
	}
	d.caps = d.streamCaps()
	s := &stream[T]{declared: d, env: env, byC: map[*consumer.Consumer[T]]*reader[T]{},
		filtering: d.opts.Rules.StreamFiltering, filterSize: defaultFilterSize, epoch: d.opts.Epoch}
	if n, ok := protocol.Int(d.opts.Args["x-stream-filter-size-bytes"]); ok {
		s.filterSize = n
	}
	s.retention.configure(d.opts.Args, nil)
	s.retention.start()
	return s, nil
}

// Equivalent checks a redeclaration: durable, auto_delete, then the
// arguments a stream accepts (stream-redeclare.txt), x-max-age in
// milliseconds where Rules.MaxAgeComparedInMs holds.
func (s *stream[T]) Equivalent(o Options) error {
	if !s.opts.Rules.MaxAgeComparedInMs {
		return s.equivalent(o, streamArgs)
	}
	cur := s.declared
	cur.opts.Args = maxAgeInMs(cur.opts.Args)
	o.Args = maxAgeInMs(o.Args)
	return cur.equivalent(o, streamArgs)
}

// ApplyPolicy applies a policy's max-length-bytes, max-age and
// stream-max-segment-size-bytes, which win over the queue's arguments
// (rabbit_stream_queue:update_stream_conf/2 with policy_precedence/2), and
// evaluates retention at once, as osiris_log:update_retention/2 does. A
// policy's other keys do not apply to streams.
func (s *stream[T]) ApplyPolicy(definition protocol.Table) {
	s.retention.configure(s.opts.Args, definition)
	s.evaluate(s.env.Now(), nil)
}

// Limits returns no limits: TTL, length limits and dead-lettering do not
// apply to a stream.
func (s *stream[T]) Limits() Limits {
	return Limits{MaxLength: -1, MaxLengthBytes: -1, Overflow: DropHead}
}

// Ready is what queue.declare-ok reports as message_count for a stream:
// RabbitMQ reads it from queue_coarse_metrics, which
// rabbit_osiris_metrics updates every 5 s (stream_tick_interval) with the
// log's last offset + 1 − first offset, so it lags publishes and retention
// by up to 5 s (stream-count.txt). amqpsim ticks at every 5 s of the
// broker's clock; RabbitMQ's tick runs from the node's start.
func (s *stream[T]) Ready() int { return s.count.at(s.env.Now(), s.retained()) }

// retained counts the offsets in the log now, the segments' snapshot
// chunks included, as RabbitMQ's count does.
func (s *stream[T]) retained() int { return len(s.log) }

// ReadyBytes returns the body bytes of the retained messages.
func (s *stream[T]) ReadyBytes() int64 { return s.bodies }

// Unacked counts deliveries not yet acknowledged.
func (s *stream[T]) Unacked() int { return s.unacked }

// Messages returns the retained messages, oldest first.
func (s *stream[T]) Messages() []*Message {
	out := make([]*Message, 0, len(s.log))
	for i := range s.log {
		if m := s.log[i].m; m != nil {
			out = append(out, m)
		}
	}
	return out
}

// Publish appends m to the log as one chunk (osiris:write): it gets the
// next offset, and its properties get the x-stream-offset header every
// delivery of it carries (rabbit_stream_queue:stream_entries/4 adds it as
// a long). When the append opens a new segment, retention is evaluated
// once the message is written. A stream takes every message; message TTL
// does not apply.
func (s *stream[T]) Publish(m *Message, _ int64, _ bool) bool {
	now := s.env.Now()
	s.count.mutate(now, s.retained())
	e := streamEntry{at: now, ms: s.epoch.Add(time.Duration(now)).UnixMilli()}
	if s.filtering && m.Properties != nil {
		e.filter, e.hasFilter = m.Properties.Headers["x-stream-filter-value"].(string)
	}
	rolled := s.roll(now, snapshotChunk)
	offset := s.base + int64(len(s.log))
	size := chunkSize(m, s.opts.Rules.StreamFormat)
	if e.hasFilter {
		size += s.filterSize
	}
	m.Seq = uint64(offset) + 1
	m.Properties = s.withStreamOffset(m.Properties, offset, m.Dead)
	e.m = m
	e.seg, e.pos = s.retention.appended(offset, e.ms, size)
	e.size = int32(size)
	s.log = append(s.log, e)
	s.bodies += int64(len(m.Body))
	if rolled {
		s.evaluate(now, nil)
	}
	if s.opts.Rules.StreamReadAheadCrash && !rolled {
		s.staleReadAhead(offset)
	}
	return true
}

// staleReadAhead crashes the channels of the 4.3 readers that osiris
// 1.13.1's read-ahead buffer fails when the chunk at offset is written,
// the first of messages in a segment that held only the snapshot chunk
// an attach wrote (measured on 4.3.6; decompiled osiris_log and
// rabbit_stream_queue of 4.3.6). rabbit_stream_queue keeps a reader's
// chunk iterator when a read ends at the end of the stream
// (chunk_iterator/3, rabbit_stream_queue.erl:1428-1440), and
// osiris_log:chunk_iterator/3 (1532-1535) copies that iterator's buffer
// back into the reader, whichever segment file the buffer was read from.
// A reader with credit that had read a chunk of messages in the previous
// segment crossed, at that end, into the snapshot-only one; hearing of
// the new chunk, it looks for its header right after the snapshot, and
// when the old buffer starts at or before that position
// (ra_read, 3037 and 3428-3431, checks positions only) it parses the
// previous segment's bytes there: parse_header/2 (3077) has no clause
// for them, and the channel crashes (541). A buffer starting later, as
// one a reader filled chunk by chunk while they were written does, is
// not used, and the reader reads on.
func (s *stream[T]) staleReadAhead(offset int64) {
	i := offset - s.base
	if i < 1 {
		return
	}
	snap, e := &s.log[i-1], &s.log[i]
	if snap.m != nil || snap.seg != e.seg {
		return
	}
	for _, r := range s.readers {
		if r.ra.kept && r.ra.keptSeg == e.seg-1 && r.next >= offset-1 && r.c.HasCredit() &&
			r.ra.keptStart <= e.pos {
			s.env.Crash(r.c)
		}
	}
}

// roll opens a new segment when the last one is full: at the next write,
// or when a consumer attaches (stream-retention-consume.txt: a consumer
// attaching 10 s after the first segment filled finds it deleted by a
// 3 s x-max-age, one that attached at once finds it kept). The new
// segment starts with a snapshot chunk of size bytes, which takes an
// offset of its own that no consumer is shown (osiris_log:
// open_new_segment/1; stream-segments.txt: the fourth message of 400-byte
// segments has offset 4). roll reports whether it opened a segment: the
// caller then evaluates retention, once the chunk that opened it is
// written (measured on 3.10.8, 4.0.5 and 4.3.6: a limit the segments
// exceed only with that chunk counted deletes the oldest at once).
func (s *stream[T]) roll(now, size int64) bool {
	if !s.retention.beforeAppend() {
		return false
	}
	ms := s.epoch.Add(time.Duration(now)).UnixMilli()
	snap := s.base + int64(len(s.log))
	s.count.mutate(now, s.retained())
	e := streamEntry{at: now, ms: ms, size: int32(size)}
	e.seg, e.pos = s.retention.appended(snap, ms, size)
	s.log = append(s.log, e)
	return true
}

// propsBlock is how many messages' properties a stream allocates at once.
const propsBlock = 256

// withStreamOffset returns p as the stream's readers get it back
// (Rules.storedHeader) with the x-stream-offset header set to the
// offset; p is not modified. A dead letter's x-death is its deaths, which
// 4.x stores as an annotation of their own and gives back (mc_amqp
// x-opt-deaths, mc_amqpl:convert_from/3). The copies are carved from
// blocks: the header map and the boxed offset are then the only
// allocations a message costs the stream, unless a header holds a binary
// inside an array or table, which 4.x gives back as longstr.
func (s *stream[T]) withStreamOffset(p *protocol.Properties, offset int64, dead bool) *protocol.Properties {
	if len(s.props) == 0 {
		s.props = make([]protocol.Properties, propsBlock)
	}
	c := &s.props[0]
	s.props = s.props[1:]
	if p != nil {
		*c = *p
	}
	h := make(protocol.Table, len(c.Headers)+1)
	_, xcc := c.Headers["x-cc"]
	for k0, v0 := range c.Headers {
		k, v, ok := s.opts.Rules.storedHeader(k0, v0)
		if dead && k0 == "x-death" && s.opts.Rules.StreamConvertsXContainers {
			k, v, ok = k0, v0, true
		}
		if !ok || k0 == "CC" && xcc && s.opts.Rules.StreamConvertsXContainers {
			// An x-cc header's CC wins over the CC header's (measured
			// once: the order of a table's fields decides).
			continue
		}
		h[k] = v
	}
	if p != nil {
		basicFromHeaders(c, p.Headers, h, s.opts.Rules.StreamConvertsXContainers)
	}
	h["x-stream-offset"] = offset
	c.Headers = h
	return c
}

// evaluate runs retention and forgets the messages of the segments it
// deleted; keep, when not nil, is handed them first, from offset base.
func (s *stream[T]) evaluate(now int64, keep func(deleted []streamEntry, base int64)) {
	first := s.retention.evaluate(s.epoch.Add(time.Duration(now)).UnixMilli(), s.base+int64(len(s.log)))
	// osiris_retention:schedule/3 evaluates again an hour later while a
	// max-age applies and more than one segment is left.
	if s.retention.maxAgeMs > 0 && len(s.retention.segments) > 1 {
		s.env.SetTimer(RetentionTimer, now+int64(retentionEvalInterval))
	} else {
		s.env.StopTimer(RetentionTimer)
	}
	if first <= s.base {
		return
	}
	s.count.mutate(now, s.retained())
	n := int(first - s.base)
	if keep != nil {
		keep(s.log[:n], s.base)
	}
	for i := 0; i < n; i++ {
		if m := s.log[i].m; m != nil {
			s.bodies -= int64(len(m.Body))
		}
	}
	clear(s.log[:n])
	s.log = s.log[n:]
	s.base = first
	if cap(s.log) > 64 && len(s.log) < cap(s.log)/4 {
		s.log = slices.Clip(append([]streamEntry(nil), s.log...))
	}
}

// Dispatch offers the log to every consumer that has credit, each from
// its own position, and returns how many deliveries it made. Consumers are
// offered new messages in the order RabbitMQ's channel folds its readers
// (rabbit_stream_queue:handle_event/2 on osiris_offset): channel by
// channel, and on one channel by consumer tag, highest first
// (stream-credit.txt: H, G, E take m4 in that order).
func (s *stream[T]) Dispatch() int {
	n := 0
	for _, r := range s.order {
		for r.c.HasCredit() {
			e := s.entry(r)
			if e == nil {
				break
			}
			if s.opts.Rules.StreamReadAheadCrash {
				r.ra.read(e, r.next, s.base+int64(len(s.log)))
			}
			if e.m == nil || r.next < r.from || (r.filter != nil && !r.filter.matches(e.filter, e.hasFilter)) {
				r.next++
				continue
			}
			if !s.env.CanSend(r.c) {
				break
			}
			r.next++
			s.rotation.Delivered(r.c)
			s.unacked++
			s.env.Deliver(r.c, e.m, false)
			n++
		}
	}
	return n
}

// entry returns the entry r reads next, nil at the end of the log. A
// reader whose next offset retention deleted goes on from the first
// offset left, unless it holds the deleted entries (pinned).
func (s *stream[T]) entry(r *reader[T]) *streamEntry {
	if r.next < s.base {
		if i := r.next - r.pinnedBase; i >= 0 && i < int64(len(r.pinned)) {
			return &r.pinned[i]
		}
		r.next = s.base
	}
	r.pinned = nil
	if i := r.next - s.base; i < int64(len(s.log)) {
		return &s.log[i]
	}
	return nil
}

// Settle gives credit back for acknowledged deliveries
// (rabbit_stream_queue:settle/4 with complete); nothing leaves the log.
// Before 4.0 CheckSettle refuses nack, reject and recover before they get
// here; from 4.0 they too only return credit.
func (s *stream[T]) Settle(ds []Settled[T], _ Settlement) {
	settled := s.settled[:0]
	for _, d := range ds {
		s.unacked--
		if d.Consumer != nil {
			settled = append(settled, d.Consumer)
		}
	}
	s.rotation.Credit(settled)
	scratch.Zero(settled)
	s.settled = settled[:0]
}

// Return forgets the unacked deliveries of a channel that closed: a
// stream has nothing to take back, and the consumers went with the
// channel.
func (s *stream[T]) Return(ms []*Message) { s.unacked -= len(ms) }

// Touch does nothing: a stream has no x-expires.
func (s *stream[T]) Touch() {}

// retentionEvalInterval is osiris's retention_eval_interval default
// (?DEFAULT_SHEDULED_EVAL_TIME, one hour).
const retentionEvalInterval = time.Hour

// TimerFired runs the scheduled retention evaluation.
func (s *stream[T]) TimerFired(t Timer) bool {
	if t == RetentionTimer {
		s.evaluate(s.env.Now(), nil)
	}
	return false
}

// ConsumerCount is what queue.declare-ok reports as consumer_count for a
// stream: always 0 (rabbit_stream_queue:stat/1 answers {ok, Messages, 0};
// stream-consume-checks.txt).
func (s *stream[T]) ConsumerCount() int { return 0 }

// HadConsumer reports whether the stream ever had a consumer.
func (s *stream[T]) HadConsumer() bool { return s.hadReader }

// Consumers returns the consumers in registration order.
func (s *stream[T]) Consumers() []*consumer.Consumer[T] {
	out := make([]*consumer.Consumer[T], len(s.readers))
	for i, r := range s.readers {
		out[i] = r.c
	}
	return out
}

// ActiveConsumer returns nil: a stream has no single active consumer.
func (s *stream[T]) ActiveConsumer() *consumer.Consumer[T] { return nil }

// AdmitConsumer admits every consumer: a stream ignores basic.consume's
// exclusive flag (stream-consume-checks.txt).
func (s *stream[T]) AdmitConsumer(bool) error { return nil }

// AddConsumer registers a consumer reading from the next offset;
// Consume says where a consumer starts.
func (s *stream[T]) AddConsumer(c *consumer.Consumer[T]) {
	s.attach(c, Offset{Kind: OffsetNext}, nil)
}

// attach registers a consumer that starts reading at from, with a 3.13
// filter when filter is not nil and the stream filters (Rules.StreamFiltering).
// A consumer attaching opens a new segment when the last one is full,
// with a snapshot chunk of its own (attachSnapshotChunk), and retention is
// evaluated. A 3.10 consumer finds its start in what the evaluation left;
// a 4.x one finds it before, and reads the segments deleted under it
// (Rules.StreamReadBeforeRetention).
func (s *stream[T]) attach(c *consumer.Consumer[T], from Offset, filter *Filter) {
	now := s.env.Now()
	rolled := s.roll(now, attachSnapshotChunk)
	r := &reader[T]{c: c}
	if rolled && !s.opts.Rules.StreamReadBeforeRetention {
		s.evaluate(now, nil)
	}
	s.position(r, from)
	if rolled && s.opts.Rules.StreamReadBeforeRetention {
		s.evaluate(now, func(deleted []streamEntry, base int64) {
			if r.next < base+int64(len(deleted)) {
				// osiris_log:init_offset_reader/2 opened the segment
				// before the retention process deleted it: the reader
				// holds the file, and reads it to its end.
				r.pinnedBase = max(r.next, base)
				r.pinned = slices.Clone(deleted[r.pinnedBase-base:])
			}
		})
	}
	if s.filtering && filter != nil {
		r.filter = filter
	}
	s.readers = append(s.readers, r)
	s.byC[c] = r
	s.hadReader = true
	s.rotation.Add(c)
	s.reorder()
}

// position sets where r starts reading: the offset from names in the log
// as it is now.
func (s *stream[T]) position(r *reader[T], from Offset) {
	end := s.base + int64(len(s.log))
	switch from.Kind {
	case OffsetFirst:
		r.next = s.base
	case OffsetLast:
		// The last chunk of messages, not a segment's snapshot.
		r.next = end
		for i := len(s.log) - 1; i >= 0; i-- {
			if s.log[i].m != nil {
				r.next = s.base + int64(i)
				break
			}
		}
	case OffsetNext:
		r.next = end
	case OffsetAt:
		// osiris starts a reader below the first offset at the first
		// chunk, and one beyond the end at the end (stream-offsets.txt:
		// -1 reads everything, 100 waits for offset 100).
		r.next = min(max(from.N, s.base), end)
		r.from = from.N
	case OffsetTime:
		// The first chunk stamped at or after the time
		// (osiris_log's timestamp lookup); none: the end.
		ms := from.Time.UnixMilli()
		i, _ := slices.BinarySearchFunc(s.log, ms, func(e streamEntry, t int64) int {
			if e.ms < t {
				return -1
			}
			return 1
		})
		r.next = s.base + int64(i)
	}
}

// RemoveConsumer forgets a consumer (basic.cancel, channel close). Its
// unacked deliveries stay with its channel until settled.
func (s *stream[T]) RemoveConsumer(c *consumer.Consumer[T]) {
	r, ok := s.byC[c]
	if !ok {
		return
	}
	delete(s.byC, c)
	s.readers = slices.DeleteFunc(s.readers, func(x *reader[T]) bool { return x == r })
	s.rotation.Remove(c)
	s.reorder()
}

// reorder sorts the readers the way new messages are offered to them:
// channels in the order their first consumer registered, and on one
// channel by tag, highest first.
func (s *stream[T]) reorder() {
	first := map[*consumer.Group[T]]int{}
	for i, r := range s.readers {
		if _, ok := first[r.c.Group()]; !ok {
			first[r.c.Group()] = i
		}
	}
	s.order = append(s.order[:0], s.readers...)
	slices.SortStableFunc(s.order, func(a, b *reader[T]) int {
		if ga, gb := first[a.c.Group()], first[b.c.Group()]; ga != gb {
			return ga - gb
		}
		return -strings.Compare(a.c.Tag, b.c.Tag)
	})
}

// Resume does nothing: a stream never asks the channel-wide limiter.
func (s *stream[T]) Resume(*consumer.Group[T]) {}

// StreamStats describe a stream's log.
type StreamStats struct {
	// FirstOffset is the offset of the oldest retained message and
	// NextOffset the offset the next publish gets; NextOffset −
	// FirstOffset messages are retained now (Ready lags behind it).
	FirstOffset, NextOffset int64
	// Segments counts the log's segment files, the open one included.
	Segments int
	// Bytes is the log's size as amqpsim estimates osiris's segment files.
	Bytes int64
	// Messages counts the retained messages (not the segments' snapshot
	// chunks, which take offsets of their own).
	Messages int
}
