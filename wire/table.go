package wire

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/amqpsim/amqpsim/protocol"
)

// AppendTable appends t to dst as an AMQP field table: a 32-bit byte length,
// then each entry (shortstr key, type tag, value) in sorted key order, so the
// encoding is deterministic. Values use RabbitMQ's tags for the Go types
// documented on [protocol.Table]; a Go int is encoded as 'I' (int32) as
// amqp091-go does, and is an error outside the int32 range. Any other Go type
// is an error wrapping [ErrFieldType]. A nil table encodes as an empty one.
func AppendTable(dst []byte, t protocol.Table) ([]byte, error) {
	w := writer{buf: dst}
	w.table(t)
	if w.err != nil {
		return dst, w.err
	}
	return w.buf, nil
}

// DecodeTable decodes a field table (32-bit byte length and entries) that
// fills b exactly. Each type tag decodes to the Go type documented on
// [protocol.Table], 'T' as a UTC time; RabbitMQ's 'L' (int64, which RabbitMQ
// reads but never writes) decodes as int64 too. An empty table decodes as an
// empty, non-nil Table. Errors are [*Error]s.
func DecodeTable(b []byte) (protocol.Table, error) {
	r := reader{buf: b}
	t := r.table()
	r.end()
	if r.err != nil {
		return nil, r.err
	}
	return t, nil
}

// table reads a field table.
func (r *reader) table() protocol.Table { return r.tableAt(0) }

func (r *reader) tableAt(depth int) protocol.Table {
	n := r.long()
	sr := r.sub(n, "field table")
	if r.err != nil {
		return nil
	}
	if depth > maxDepth {
		r.fail(protocol.SyntaxError, ErrMalformedTable, "tables and arrays nest deeper than %d levels", maxDepth)
		return nil
	}
	t := make(protocol.Table, countEntries(sr.buf))
	for len(sr.buf) > 0 {
		k := sr.shortstr()
		v := sr.field(depth)
		if sr.err != nil {
			r.err = sr.err
			return nil
		}
		t[k] = v
	}
	return t
}

// countEntries counts the entries of a field table's bytes, so that its
// map is made at its size: grown entry by entry, a large one ended up to
// twice as big (a table of 14,000 booleans kept 7.4 times its wire size,
// 5.3 times made at its size). It stops at the first entry it cannot
// size; decoding then fails there.
func countEntries(b []byte) int {
	n := 0
	for len(b) > 0 {
		k := int(b[0]) + 1
		if k >= len(b) {
			break
		}
		size := fieldSize(b[k], b[k+1:])
		if size < 0 || k+1+size > len(b) {
			break
		}
		b = b[k+1+size:]
		n++
	}
	return n
}

// fieldSize is the size of the value of a field with type tag tag that
// starts b, -1 if it cannot be told.
func fieldSize(tag byte, b []byte) int {
	switch tag {
	case 'V':
		return 0
	case 't', 'b', 'B':
		return 1
	case 's', 'u':
		return 2
	case 'I', 'i', 'f':
		return 4
	case 'D':
		return 5
	case 'l', 'L', 'd', 'T':
		return 8
	case 'S', 'x', 'A', 'F':
		if len(b) < 4 {
			return -1
		}
		return 4 + int(binary.BigEndian.Uint32(b))
	}
	return -1
}

func (r *reader) arrayAt(depth int) []any {
	n := r.long()
	sr := r.sub(n, "field array")
	if r.err != nil {
		return nil
	}
	if depth > maxDepth {
		r.fail(protocol.SyntaxError, ErrMalformedTable, "tables and arrays nest deeper than %d levels", maxDepth)
		return nil
	}
	a := []any{}
	for len(sr.buf) > 0 {
		v := sr.field(depth)
		if sr.err != nil {
			r.err = sr.err
			return nil
		}
		a = append(a, v)
	}
	return a
}

// field reads a type tag and the value it announces; depth is the nesting
// level of the enclosing table or array.
func (r *reader) field(depth int) any {
	tag := r.octet()
	if r.err != nil {
		return nil
	}
	var v any
	switch tag {
	case 't':
		v = r.octet() != 0
	case 'b':
		v = int8(r.octet())
	case 'B':
		v = r.octet()
	case 's':
		v = int16(r.short())
	case 'u':
		v = r.short()
	case 'I':
		v = int32(r.long())
	case 'i':
		v = r.long()
	case 'l', 'L':
		v = int64(r.longlong())
	case 'f':
		v = math.Float32frombits(r.long())
	case 'd':
		v = math.Float64frombits(r.longlong())
	case 'D':
		scale := r.octet()
		v = protocol.Decimal{Scale: scale, Value: int32(r.long())}
	case 'S':
		v = r.longstr()
	case 'x':
		v = r.bytes()
	case 'T':
		v = r.timestamp()
	case 'A':
		v = r.arrayAt(depth + 1)
	case 'F':
		v = r.tableAt(depth + 1)
	case 'V':
		return nil
	default:
		r.fail(protocol.SyntaxError, ErrMalformedTable, "unknown field type tag %q", tag)
		return nil
	}
	if r.err != nil {
		return nil
	}
	return v
}

// table writes t as a field table, keys in sorted order.
func (w *writer) table(t protocol.Table) {
	at := w.reserveLen()
	var stack [16]string
	keys := stack[:0]
	for k := range t {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		ok := w.err == nil
		w.shortstr(k)
		w.field(t[k])
		if ok && w.err != nil {
			w.err = fmt.Errorf("table key %q: %w", k, w.err)
		}
	}
	w.patchLen(at)
}

// field writes a type tag and value.
func (w *writer) field(v any) {
	switch v := v.(type) {
	case bool:
		w.octet('t')
		if v {
			w.octet(1)
		} else {
			w.octet(0)
		}
	case int8:
		w.octet('b')
		w.octet(uint8(v))
	case uint8:
		w.octet('B')
		w.octet(v)
	case int16:
		w.octet('s')
		w.short(uint16(v))
	case uint16:
		w.octet('u')
		w.short(v)
	case int32:
		w.octet('I')
		w.long(uint32(v))
	case int:
		if v < math.MinInt32 || v > math.MaxInt32 {
			w.fail(fmt.Errorf("wire: int %d does not fit the int32 field type: %w", v, ErrRange))
		}
		w.octet('I')
		w.long(uint32(int32(v)))
	case uint32:
		w.octet('i')
		w.long(v)
	case int64:
		w.octet('l')
		w.longlong(uint64(v))
	case float32:
		w.octet('f')
		w.long(math.Float32bits(v))
	case float64:
		w.octet('d')
		w.longlong(math.Float64bits(v))
	case protocol.Decimal:
		w.octet('D')
		w.octet(v.Scale)
		w.long(uint32(v.Value))
	case string:
		w.octet('S')
		w.longstr(v)
	case []byte:
		w.octet('x')
		w.bytes(v)
	case time.Time:
		w.octet('T')
		w.timestamp(v)
	case []any:
		w.octet('A')
		at := w.reserveLen()
		for i, e := range v {
			ok := w.err == nil
			w.field(e)
			if ok && w.err != nil {
				w.err = fmt.Errorf("array element %d: %w", i, w.err)
			}
		}
		w.patchLen(at)
	case protocol.Table:
		w.octet('F')
		w.table(v)
	case nil:
		w.octet('V')
	default:
		w.fail(fmt.Errorf("wire: value of type %T: %w", v, ErrFieldType))
	}
}
