package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/amqpsim/amqpsim/protocol"
)

// TestFieldGolden pins the encoding of every tag RabbitMQ writes, as a
// one-entry table {"k": value}, and decodes it back.
func TestFieldGolden(t *testing.T) {
	ts := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		v    any
		want []byte // tag and value
		back any    // decoded value, if not v
	}{
		{true, []byte{'t', 1}, nil},
		{false, []byte{'t', 0}, nil},
		{int8(-2), []byte{'b', 0xFE}, nil},
		{uint8(254), []byte{'B', 0xFE}, nil},
		{int16(-2), []byte{'s', 0xFF, 0xFE}, nil},
		{uint16(0xFFFE), []byte{'u', 0xFF, 0xFE}, nil},
		{int32(-2), []byte{'I', 0xFF, 0xFF, 0xFF, 0xFE}, nil},
		{-2, []byte{'I', 0xFF, 0xFF, 0xFF, 0xFE}, int32(-2)},
		{uint32(0xFFFFFFFE), []byte{'i', 0xFF, 0xFF, 0xFF, 0xFE}, nil},
		{int64(-2), []byte{'l', 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFE}, nil},
		{float32(1), []byte{'f', 0x3F, 0x80, 0, 0}, nil},
		{float64(1), []byte{'d', 0x3F, 0xF0, 0, 0, 0, 0, 0, 0}, nil},
		{protocol.Decimal{Scale: 3, Value: -1}, []byte{'D', 3, 0xFF, 0xFF, 0xFF, 0xFF}, nil},
		{"ab", []byte{'S', 0, 0, 0, 2, 'a', 'b'}, nil},
		{[]byte("ab"), []byte{'x', 0, 0, 0, 2, 'a', 'b'}, nil},
		{ts, []byte{'T', 0, 0, 0, 0, 0x65, 0x93, 0x7D, 0x25}, nil},
		{ts.In(time.FixedZone("X", 3600)).Add(999 * time.Millisecond), []byte{'T', 0, 0, 0, 0, 0x65, 0x93, 0x7D, 0x25}, ts},
		{nil, []byte{'V'}, nil},
		{[]any{int8(1), nil}, []byte{'A', 0, 0, 0, 3, 'b', 1, 'V'}, nil},
		{[]any{}, []byte{'A', 0, 0, 0, 0}, nil},
		{protocol.Table{"b": int8(1), "a": nil}, []byte{'F', 0, 0, 0, 7, 1, 'a', 'V', 1, 'b', 'b', 1}, nil},
		{protocol.Table(nil), []byte{'F', 0, 0, 0, 0}, protocol.Table{}},
	} {
		want := append([]byte{0, 0, 0, byte(2 + len(tc.want)), 1, 'k'}, tc.want...)
		got, err := AppendTable(nil, protocol.Table{"k": tc.v})
		if err != nil {
			t.Errorf("%#v: %v", tc.v, err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%#v:\n got % x\nwant % x", tc.v, got, want)
		}
		back := tc.back
		if back == nil {
			back = tc.v
		}
		dec, err := DecodeTable(got)
		if err != nil {
			t.Errorf("%#v: decode: %v", tc.v, err)
			continue
		}
		if diff := cmp.Diff(protocol.Table{"k": back}, dec); diff != "" {
			t.Errorf("%#v: decode (-want +got):\n%s", tc.v, diff)
		}
	}
}

func TestTableRoundTrip(t *testing.T) {
	want := everyTypeTable()
	b, err := AppendTable(nil, want)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeTable(b)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if ts := got["time"].(time.Time); ts.Location() != time.UTC {
		t.Errorf("timestamp in %v, want UTC", ts.Location())
	}
	// Decoded byte arrays must not alias the input.
	x := got["bytes"].([]byte)
	for i := range b {
		b[i] = 0
	}
	if x[2] != 0xCE {
		t.Error("decoded []byte aliases the input")
	}
}

// TestTableSortedKeys: the encoding does not depend on map order.
func TestTableSortedKeys(t *testing.T) {
	first, _ := AppendTable(nil, everyTypeTable())
	for range 20 {
		again, _ := AppendTable(nil, everyTypeTable())
		if !bytes.Equal(first, again) {
			t.Fatal("table encoding is not deterministic")
		}
	}
	b, _ := AppendTable(nil, protocol.Table{"c": nil, "a": nil, "b": nil, "aa": nil})
	if want := "\x01aV\x02aaV\x01bV\x01cV"; string(b[4:]) != want {
		t.Errorf("got %q, want %q", b[4:], want)
	}
}

func TestDecodeTableL(t *testing.T) {
	// RabbitMQ reads 'L' (0-9-1's signed 64-bit) though it writes 'l'.
	got, err := DecodeTable([]byte{0, 0, 0, 11, 1, 'k', 'L', 0x80, 0, 0, 0, 0, 0, 0, 1})
	if err != nil || got["k"] != int64(math.MinInt64+1) {
		t.Errorf("got %v, %v", got, err)
	}
}

// nestedArrays returns a table {k: [[...[void]...]]} of levels arrays,
// written outside in.
func nestedArrays(levels int) []byte {
	size := 5*levels + 1 // 'A' and its length per level, then 'V'
	b := binary.BigEndian.AppendUint32(nil, uint32(2+size))
	b = append(b, 1, 'k')
	for i := range levels {
		b = append(b, 'A')
		b = binary.BigEndian.AppendUint32(b, uint32(size-5*(i+1)))
	}
	return append(b, 'V')
}

func TestDecodeTableErrors(t *testing.T) {
	deepTable := nestedArrays(maxDepth + 2)

	for _, tc := range []struct {
		name   string
		in     []byte
		target error
	}{
		{"no length", []byte{0, 0}, ErrTruncated},
		{"length past end", []byte{0, 0, 0, 9, 1, 'k', 'V'}, ErrTruncated},
		{"trailing", []byte{0, 0, 0, 3, 1, 'k', 'V', 0}, ErrTrailingBytes},
		{"key past end", []byte{0, 0, 0, 2, 5, 'k'}, ErrMalformedTable},
		{"no value", []byte{0, 0, 0, 2, 1, 'k'}, ErrMalformedTable},
		{"unknown tag", []byte{0, 0, 0, 3, 1, 'k', 'Q'}, ErrMalformedTable},
		{"0-9-1 shortstr tag is not RabbitMQ's", []byte{0, 0, 0, 4, 1, 'k', 's', 1}, ErrMalformedTable},
		{"longstr past table", []byte{0, 0, 0, 8, 1, 'k', 'S', 0, 0, 0, 9, 'a'}, ErrMalformedTable},
		{"array past table", []byte{0, 0, 0, 7, 1, 'k', 'A', 0, 0, 0, 1}, ErrMalformedTable},
		{"array element past array", []byte{0, 0, 0, 9, 1, 'k', 'A', 0, 0, 0, 1, 'I', 0}, ErrMalformedTable},
		{"bytes past table", []byte{0, 0, 0, 7, 1, 'k', 'x', 0xFF, 0xFF, 0xFF, 0xFF}, ErrMalformedTable},
		{"too deep", deepTable, ErrMalformedTable},
	} {
		got, err := DecodeTable(tc.in)
		if got != nil || !errors.Is(err, tc.target) {
			t.Errorf("%s: DecodeTable = %v, %v; want %v", tc.name, got, err, tc.target)
		}
	}
}

func TestAppendTableErrors(t *testing.T) {
	for _, tc := range []struct {
		v      any
		target error
		text   string
	}{
		{uint64(1), ErrFieldType, `table key "k": wire: value of type uint64`},
		{uint(1), ErrFieldType, "uint"},
		{map[string]any{}, ErrFieldType, "map[string]interface {}"},
		{struct{}{}, ErrFieldType, "struct {}"},
		{math.MaxInt32 + 1, ErrRange, "2147483648"},
		{[]any{1, complex(1, 1)}, ErrFieldType, `"k": array element 1: `},
		{protocol.Table{"inner": []string{}}, ErrFieldType, `table key "k": table key "inner"`},
		{protocol.Table{strings.Repeat("x", 256): 1}, ErrTooLong, "256"},
	} {
		got, err := AppendTable([]byte("keep"), protocol.Table{"k": tc.v})
		if !errors.Is(err, tc.target) || string(got) != "keep" || !strings.Contains(err.Error(), tc.text) {
			t.Errorf("%#v: %q, %v; want %v mentioning %q", tc.v, got, err, tc.target, tc.text)
		}
	}
	if b, err := AppendTable(nil, protocol.Table{"min": math.MinInt32, "max": math.MaxInt32}); err != nil || len(b) != 4+2*(1+3+5) {
		t.Errorf("int32 limits: % x, %v", b, err)
	}
}

func TestTableDepthLimit(t *testing.T) {
	nest := func(levels int) protocol.Table {
		var v any = "leaf"
		for i := 1; i < levels; i++ {
			if i%2 == 0 {
				v = protocol.Table{"t": v}
			} else {
				v = []any{v}
			}
		}
		return protocol.Table{"k": v}
	}
	for _, tc := range []struct {
		levels int
		ok     bool
	}{{maxDepth + 1, true}, {maxDepth + 2, false}} {
		b, err := AppendTable(nil, nest(tc.levels))
		if err != nil {
			t.Fatal(err)
		}
		_, err = DecodeTable(b)
		if (err == nil) != tc.ok || (err != nil && !strings.Contains(err.Error(), "nest deeper")) {
			t.Errorf("%d levels: %v", tc.levels, err)
		}
	}
}

// A table nested as deep as a frame of RabbitMQ's frame_max (131,072
// bytes) can hold decodes: RabbitMQ has no bound but the frame's size
// and returns a table 15,000 levels deep as it came (measured on 3.10.8,
// 4.0.5 and 4.3.6 with a raw socket, in a 105,018-byte content header;
// TestServerReturnsDeepTables); amqpsim refused 65 levels.
func TestDecodeTableAsDeepAsAFrame(t *testing.T) {
	const levels = (131072 - 8 - 6) / 5
	b := nestedArrays(levels)
	got, err := DecodeTable(b)
	if err != nil {
		t.Fatalf("%d levels in %d bytes: %v", levels, len(b), err)
	}
	depth := 0
	for v := got["k"]; ; depth++ {
		a, ok := v.([]any)
		if !ok {
			break
		}
		v = a[0]
	}
	if depth != levels {
		t.Errorf("decoded %d levels, want %d", depth, levels)
	}
}

// Decoding a table takes a few allocations however many entries it has:
// its strings are cut from one copy of its bytes, and its map is made at
// its size. A table of 14,000 booleans (the most a 131,072-byte content
// header holds) took 14,096 allocations and 1.7 MB; now about 50 and
// 1.1 MB. What the map keeps (about 57 bytes an entry, Go's map) is
// measured in docs/benchmarks.md.
func TestDecodeLargeTableAllocations(t *testing.T) {
	in := protocol.Table{}
	for i := range 14000 {
		in[fmt.Sprintf("k%05d", i)] = true
	}
	b, err := AppendTable(nil, in)
	if err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(5, func() {
		if _, err := DecodeTable(b); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 100 {
		t.Errorf("decoding a table of 14,000 entries: %.0f allocations, want at most 100", allocs)
	}
}
