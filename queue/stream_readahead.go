package queue

// readAhead is a 4.3 stream reader's read-ahead buffer, as osiris 1.13.1
// fills it (osiris_log's read_header_with_ra, iter_read_ahead and
// ra_fill, decompiled from RabbitMQ 4.3.6): the bytes of one segment file
// from start up to start plus its size (64 bytes for a new reader's first
// fill, 4096 once a header was parsed) or the end of the file, read when
// the file held the chunks below offset written. A chunk's 48-byte header and
// its data are each read from the buffer when they lie in it, and fill it
// from their own position otherwise; a new segment file starts empty.
// What the simulator needs of it is where the buffer began when the reader
// last read a chunk of messages (keptStart, in segment keptSeg): the
// buffer rabbit_stream_queue keeps with that chunk's iterator
// (stream.staleReadAhead).
type readAhead struct {
	seg          int32
	start, limit int64
	written      int64
	grown        bool

	kept      bool
	keptSeg   int32
	keptStart int64
}

// chunkHeader is the size of an osiris chunk header (?HEADER_SIZE_B).
const chunkHeader = 48

// raSize is the read-ahead size once a header was parsed (ra_update_size).
const raSize = 4096

// raFirstSize is a new reader's first read (the #ra record's default:
// a header and 16 bytes).
const raFirstSize = chunkHeader + 16

// read follows the buffer as the reader reads e, the chunk at offset,
// when the chunks below written are in the log.
func (ra *readAhead) read(e *streamEntry, offset, written int64) {
	if e.seg != ra.seg {
		ra.seg, ra.start, ra.limit = e.seg, 0, 0
	}
	if !ra.holds(offset, e.pos, e.pos+chunkHeader) {
		ra.fill(e.pos, written)
	}
	ra.grown = true
	if e.m == nil {
		return // a snapshot chunk: its header read, its data skipped
	}
	if !ra.holds(offset, e.pos+chunkHeader, e.pos+int64(e.size)) {
		ra.fill(e.pos+chunkHeader, written)
	}
	ra.kept, ra.keptSeg, ra.keptStart = true, e.seg, ra.start
}

// holds reports whether the buffer has the bytes [from, to) of the chunk
// at offset: it was written when the buffer was filled, and lies in it.
func (ra *readAhead) holds(offset, from, to int64) bool {
	return offset < ra.written && from >= ra.start && to <= ra.limit
}

// fill reads the buffer from position at, when the chunks below written
// are in the file.
func (ra *readAhead) fill(at, written int64) {
	size := int64(raFirstSize)
	if ra.grown {
		size = raSize
	}
	ra.start, ra.limit, ra.written = at, at+size, written
}
