package wire

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/amqpsim/amqpsim/protocol"
)

// maxDepth bounds how deeply field tables and arrays may nest when decoding,
// so hostile input cannot exhaust the stack. RabbitMQ has no bound but the
// frame's size, and returns a table nested 15,000 deep as it came
// (measured on 3.10.8, 4.0.5 and 4.3.6 with a raw socket); a level takes
// at least 5 bytes, so 65,536 levels need a frame_max over 320 KiB, well
// above RabbitMQ's 128 KiB.
const maxDepth = 1 << 16

// writer appends AMQP-encoded values to buf. The first error sticks in err and
// later writes still append (their output is discarded by the callers).
type writer struct {
	buf []byte
	err error
}

func (w *writer) fail(err error) {
	if w.err == nil {
		w.err = err
	}
}

func (w *writer) octet(v uint8)  { w.buf = append(w.buf, v) }
func (w *writer) short(v uint16) { w.buf = binary.BigEndian.AppendUint16(w.buf, v) }
func (w *writer) long(v uint32)  { w.buf = binary.BigEndian.AppendUint32(w.buf, v) }

func (w *writer) longlong(v uint64) { w.buf = binary.BigEndian.AppendUint64(w.buf, v) }

func (w *writer) shortstr(s string) {
	if len(s) > math.MaxUint8 {
		w.fail(fmt.Errorf("wire: shortstr of %d bytes is longer than 255: %w", len(s), ErrTooLong))
		s = s[:math.MaxUint8]
	}
	w.buf = append(w.buf, byte(len(s)))
	w.buf = append(w.buf, s...)
}

func (w *writer) longstr(s string) {
	if uint64(len(s)) > math.MaxUint32 {
		w.fail(fmt.Errorf("wire: longstr of %d bytes is longer than 4 GiB: %w", len(s), ErrTooLong))
		s = ""
	}
	w.long(uint32(len(s)))
	w.buf = append(w.buf, s...)
}

// bytes writes a 32-bit length and b.
func (w *writer) bytes(b []byte) {
	if uint64(len(b)) > math.MaxUint32 {
		w.fail(fmt.Errorf("wire: byte array of %d bytes is longer than 4 GiB: %w", len(b), ErrTooLong))
		b = nil
	}
	w.long(uint32(len(b)))
	w.buf = append(w.buf, b...)
}

// timestamp writes seconds since the Unix epoch; fractions of a second are
// dropped, as in amqp091-go.
func (w *writer) timestamp(t time.Time) { w.longlong(uint64(t.Unix())) }

// reserveLen appends a 32-bit length placeholder and returns its offset for
// patchLen.
func (w *writer) reserveLen() int {
	w.buf = append(w.buf, 0, 0, 0, 0)
	return len(w.buf)
}

// patchLen writes the number of bytes appended since reserveLen returned at.
func (w *writer) patchLen(at int) {
	n := len(w.buf) - at
	if uint64(n) > math.MaxUint32 {
		w.fail(fmt.Errorf("wire: table or array of %d bytes is longer than 4 GiB: %w", n, ErrTooLong))
	}
	binary.BigEndian.PutUint32(w.buf[at-4:at], uint32(n))
}

// reader consumes AMQP-encoded values from buf. The first error sticks in err;
// after it every read returns a zero value.
type reader struct {
	buf []byte
	err *Error
	// text is, in a field table or array, a copy of the outermost one's
	// bytes, which its strings are cut from (so that a table of many
	// short strings costs one allocation, not one each); off is where buf
	// starts in it.
	text string
	off  int
	// inTable makes running out of bytes a malformed table (502) rather
	// than a truncated payload (501): the reader is then confined to one
	// table's or array's declared length.
	inTable bool
}

func (r *reader) fail(code int, err error, format string, args ...any) {
	if r.err == nil {
		r.err = newError(code, err, format, args...)
	}
	r.buf = nil
}

// take returns the next n bytes, or nil and a sticky error when fewer remain.
func (r *reader) take(n uint64, what string) []byte {
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.buf)) {
		if r.inTable {
			r.fail(protocol.SyntaxError, ErrMalformedTable, "%s of %d bytes runs past the end of its table or array", what, n)
		} else {
			r.fail(protocol.FrameError, ErrTruncated, "%s needs %d bytes, %d left", what, n, len(r.buf))
		}
		return nil
	}
	b := r.buf[:n:n]
	r.buf = r.buf[n:]
	r.off += int(n)
	return b
}

// str reads n bytes as a string, cut from text in a table.
func (r *reader) str(n uint64, what string) string {
	start := r.off
	b := r.take(n, what)
	if r.text != "" && b != nil {
		return r.text[start:r.off]
	}
	return string(b)
}

func (r *reader) octet() uint8 {
	if b := r.take(1, "octet"); b != nil {
		return b[0]
	}
	return 0
}

func (r *reader) short() uint16 {
	if b := r.take(2, "short"); b != nil {
		return binary.BigEndian.Uint16(b)
	}
	return 0
}

func (r *reader) long() uint32 {
	if b := r.take(4, "long"); b != nil {
		return binary.BigEndian.Uint32(b)
	}
	return 0
}

func (r *reader) longlong() uint64 {
	if b := r.take(8, "longlong"); b != nil {
		return binary.BigEndian.Uint64(b)
	}
	return 0
}

func (r *reader) shortstr() string {
	n := r.octet()
	return r.str(uint64(n), "shortstr")
}

func (r *reader) longstr() string {
	n := r.long()
	return r.str(uint64(n), "longstr")
}

// bytes reads a 32-bit length and that many bytes, copied.
func (r *reader) bytes() []byte {
	n := r.long()
	b := r.take(uint64(n), "byte array")
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

// timestamp reads seconds since the Unix epoch as a UTC time.
func (r *reader) timestamp() time.Time {
	s := r.longlong()
	if r.err != nil {
		return time.Time{}
	}
	return time.Unix(int64(s), 0).UTC()
}

// sub returns a reader confined to the next n bytes, which it consumes from
// r, for a table or array of that declared length.
func (r *reader) sub(n uint32, what string) reader {
	start := r.off
	b := r.take(uint64(n), what)
	if r.err != nil {
		return reader{err: r.err}
	}
	if r.text == "" {
		return reader{buf: b, inTable: true, text: string(b)}
	}
	return reader{buf: b, inTable: true, text: r.text, off: start}
}

// end fails with ErrTrailingBytes unless all of the payload was consumed.
func (r *reader) end() {
	if r.err == nil && len(r.buf) > 0 {
		r.fail(protocol.FrameError, ErrTrailingBytes, "%d bytes left over", len(r.buf))
	}
}
