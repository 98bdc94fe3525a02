package queue

import (
	"github.com/amqpsim/amqpsim/protocol"
)

// Retention of a stream, as osiris (RabbitMQ 3.10.8's log) applies it.
//
// The log is a series of segment files. A chunk is written to the open
// segment; when the segment has reached x-stream-max-segment-size-bytes
// (default 500 MB) after a write, it is closed (osiris_log:write_chunk/6),
// and a new one is opened at the next write or when a consumer attaches
// (measured: stream-retention-age.txt). Opening a segment evaluates
// retention (open_new_segment/1 → trigger_retention_eval/1), as does a
// policy change (update_retention/2) and, while an x-max-age applies and
// more than one segment is left, a timer an hour after each evaluation
// (osiris_retention:schedule/3). Evaluation deletes whole segments, oldest
// first, never the newest: x-max-length-bytes deletes while the segments
// total more bytes than the limit (eval_max_bytes/2), then x-max-age
// deletes while the oldest segment's first chunk is older than the age
// (eval_age/2). A message thus outlives its limits until its segment is
// the oldest and a later one is opened.
//
// What amqpsim models: segments, their rolling, and that evaluation, on the
// virtual clock, with the bytes of each chunk as RabbitMQ writes them
// (chunkSize, stream_chunk.go: osiris's chunk header and trailer around the
// message's AMQP 1.0 sections, in the release's Rules.StreamFormat),
// exact for every message property and header type amqp091-go can send, on
// 3.10.8, 4.0.5 and 4.3.6 (TestStreamChunkSizes), and for dead letters on
// 4.x (TestStreamDeadLetterChunkSizes). What is not exact:
// the trailer holds the publishing channel's pid as text, taken to have 10
// characters ("<0.1234.0>"), so a broker whose channel pids have 9 or 11
// writes each chunk a byte smaller or larger; RabbitMQ batches messages
// that arrive together into one chunk, amqpsim writes one each.
// So what consumers see matches RabbitMQ (stream-retention-*.txt,
// stream-chunk-sizes.txt) unless a segment ends within a few bytes of its
// limit.
//
// The snapshot chunk that starts each later segment is modelled (60 bytes,
// or 104 when a consumer's attach opened the segment; one offset), as
// measured with one publisher; osiris writes one entry per publishing
// channel, so with several its size differs. osiris 1.13.1 (4.3.6) also
// opens a segment when a consumer that has read to the end of a full one
// waits for more (its offset listener's registration makes the writer
// check: segment files show it); amqpsim opens it at the next write, with
// the smaller snapshot. A segment limit below one chunk makes RabbitMQ
// 3.10.8's reader crash (541 at basic.consume); that is not modelled.

// segmentHeader is the size of a new segment file (?LOG_HEADER: "OSIL" and
// a 32-bit version).
const segmentHeader = 8

// snapshotChunk is the size of the writer snapshot chunk osiris writes at
// the head of every segment but the first that a write opens (measured on
// RabbitMQ 3.10.8, 4.0.5 and 4.3.6 with one publishing channel: a new
// segment of 238 bytes held it and one 170-byte message).
const snapshotChunk = 60

// attachSnapshotChunk is the size of the chunk that starts a segment a
// consumer's attach opens: 104 bytes on 3.10.8, 105 on 4.0.5 and 4.3.6
// (measured with one publishing channel; the byte is likely the channel
// pid's length, as in a message chunk's trailer, and is not modelled).
const attachSnapshotChunk = 104

// segment is one segment file: the offset of its first chunk, the
// timestamp (wall-clock ms) of that chunk, and its size.
type segment struct {
	first   int64
	firstMs int64
	size    int64
	chunks  int
}

// retention is a stream's segments and limits.
type retention struct {
	segments []segment
	// opened counts the segments ever opened: the newest is number
	// opened-1 (a chunk's streamEntry.seg).
	opened int32
	// open is false once the newest segment reached the size limit: the
	// next write opens a new one.
	open bool

	maxSegment int64 // x-stream-max-segment-size-bytes
	maxBytes   int64 // x-max-length-bytes; -1: none
	maxAgeMs   int64 // x-max-age in ms; 0: none
}

// configure reads the limits from the arguments and, winning over them,
// a policy's definition (nil for none).
func (r *retention) configure(args, policy protocol.Table) {
	r.maxSegment, r.maxBytes, r.maxAgeMs = defaultSegmentSize, -1, 0
	for _, src := range []struct {
		t      protocol.Table
		prefix string
	}{{args, "x-"}, {policy, ""}} {
		if n, ok := protocol.Int(src.t[src.prefix+"stream-max-segment-size-bytes"]); ok {
			r.maxSegment = n
		}
		if n, ok := protocol.Int(src.t[src.prefix+"max-length-bytes"]); ok {
			r.maxBytes = n
		}
		if s, ok := src.t[src.prefix+"max-age"].(string); ok {
			if d, err := ParseMaxAge(s); err == nil {
				r.maxAgeMs = d.Milliseconds()
			}
		}
	}
}

// start opens the first segment, as a new stream's writer does.
func (r *retention) start() {
	r.segments = []segment{{size: segmentHeader}}
	r.open = true
	r.opened = 1
}

// beforeAppend opens a new segment when the last one is full, and reports
// whether it did: retention is then evaluated, once the chunk that opened
// it is written.
func (r *retention) beforeAppend() bool {
	if r.open {
		return false
	}
	r.segments = append(r.segments, segment{size: segmentHeader})
	r.open = true
	r.opened++
	return true
}

// appended records a chunk of size bytes at offset, stamped ms, in the
// open segment, and closes the segment when it has reached its limit. It
// returns where the chunk went: the segment's number and the chunk's
// position in the segment's file.
func (r *retention) appended(offset, ms, size int64) (seg int32, pos int64) {
	s := &r.segments[len(r.segments)-1]
	seg, pos = r.opened-1, s.size
	if s.chunks == 0 {
		s.first, s.firstMs = offset, ms
	}
	s.chunks++
	s.size += size
	if s.size >= r.maxSegment {
		r.open = false
	}
	return seg, pos
}

// total is the size of every segment.
func (r *retention) total() int64 {
	var n int64
	for _, s := range r.segments {
		n += s.size
	}
	return n
}

// evaluate deletes the segments the limits no longer allow at nowMs and
// returns the first offset left; next is the offset of the next write
// (the first offset when no chunk is left).
func (r *retention) evaluate(nowMs, next int64) int64 {
	drop := 0
	if r.maxBytes >= 0 {
		// eval_max_bytes/2: while more than one segment and the total
		// is over the limit, the oldest goes.
		total := r.total()
		for len(r.segments)-drop > 1 && total > r.maxBytes {
			total -= r.segments[drop].size
			drop++
		}
	}
	if r.maxAgeMs > 0 {
		// eval_age/2: while the oldest segment's first chunk is older
		// than the age and a segment follows it.
		for len(r.segments)-drop > 1 {
			s := r.segments[drop]
			if s.chunks == 0 || s.firstMs >= nowMs-r.maxAgeMs {
				break
			}
			drop++
		}
	}
	if drop > 0 {
		r.segments = append(r.segments[:0], r.segments[drop:]...)
	}
	for _, s := range r.segments {
		if s.chunks > 0 {
			return s.first
		}
	}
	return next
}

// lagCount is the message count RabbitMQ reports for a stream, which
// rabbit_osiris_metrics refreshes every streamTick: the count as it was at
// the last tick. A tick at time T sees the changes made before T. The
// count is taken lazily: the first change in a tick period records the
// count it replaces, which is what every tick up to that period's end saw.
type lagCount struct {
	period int64 // the tick period of the latest change
	count  int   // the count before the first change in period
}

// streamTick is rabbit_osiris_metrics's ?TICK_TIMEOUT, RabbitMQ's default
// stream_tick_interval (5000 ms).
const streamTick = 5_000_000_000

// mutate notes that the count, cur before the change, changes at now.
func (l *lagCount) mutate(now int64, cur int) {
	if p := now / streamTick; p > l.period {
		l.period, l.count = p, cur
	}
}

// at returns the count reported at now, cur being the count now.
func (l *lagCount) at(now int64, cur int) int {
	if now/streamTick > l.period {
		return cur // no change since the last tick
	}
	return l.count
}
