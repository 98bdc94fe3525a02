package scenarios

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/amqpsim/amqpsim/protocol"
)

// Field values (queue and consumer arguments, message headers) are written
// as results print them, so that a header a result shows can be published
// again by a step:
//
//	x-death=[{count=long(1) exchange="" queue=work reason=expired routing-keys=[work] time=timestamp(1700000000)}]
//
// A table is {KEY=VALUE ...} (a key quoted when it is not a bare word), an
// array [VALUE ...], and a scalar a bare word (a string, a 32-bit integer, a
// double with a point or an exponent, true, false, void), a quoted string,
// or TYPE(TEXT) for every other AMQP type: byte, ubyte, short, ushort, int,
// uint, long, float, double, decimal, str, bool, binary and timestamp.
// formatValue writes every value parseValue reads back to an equal value
// (TestValueRoundTrip).

// compositeAt returns the length of the table or array that opens at
// line[i], up to its matching close, skipping over quoted strings.
func compositeAt(line string, i int) (int, error) {
	var closers []byte
	for j := i; j < len(line); j++ {
		switch c := line[j]; c {
		case '"':
			_, n, err := quotedAt(line, j)
			if err != nil {
				return 0, err
			}
			j += n - 1
		case '[':
			closers = append(closers, ']')
		case '{':
			closers = append(closers, '}')
		case ']', '}':
			if len(closers) == 0 || closers[len(closers)-1] != c {
				return 0, &lexError{col: j + 1, msg: fmt.Sprintf("unexpected '%c' (no table or array to close)", c)}
			}
			closers = closers[:len(closers)-1]
			if len(closers) == 0 {
				if j+1 < len(line) && line[j+1] != ' ' && line[j+1] != '\t' {
					return 0, &lexError{col: j + 2, msg: fmt.Sprintf("expected a blank after '%c'", c)}
				}
				return j + 1 - i, nil
			}
		}
	}
	return 0, &lexError{col: i + 1, msg: fmt.Sprintf("unclosed '%c' (expected a '%c')", line[i], closers[len(closers)-1])}
}

// parseValue reads a field value: raw as written, or, when quoted, the
// string val.
func parseValue(raw string, quoted bool, val string) (any, error) {
	if quoted {
		return val, nil
	}
	if raw == "" || (raw[0] != '[' && raw[0] != '{') {
		return scalarValue(raw)
	}
	r := &valueReader{s: raw}
	v, err := r.value()
	if err != nil {
		return nil, err
	}
	if r.i != len(raw) {
		return nil, fmt.Errorf("unexpected %q after the value %s", raw[r.i:], raw[:r.i])
	}
	return v, nil
}

// valueReader reads a value that may hold tables and arrays.
type valueReader struct {
	s string
	i int
}

func (r *valueReader) skipBlanks() {
	for r.i < len(r.s) && (r.s[r.i] == ' ' || r.s[r.i] == '\t') {
		r.i++
	}
}

func (r *valueReader) value() (any, error) {
	if r.i >= len(r.s) {
		return nil, fmt.Errorf("expected a value at the end of %s", r.s)
	}
	switch r.s[r.i] {
	case '"':
		return r.quoted()
	case '[':
		return r.array()
	case '{':
		return r.table()
	}
	start, depth := r.i, 0
	for r.i < len(r.s) {
		c := r.s[r.i]
		if depth == 0 && (c == ' ' || c == '\t' || c == ']' || c == '}') {
			break
		}
		switch c {
		case '(':
			depth++
		case ')':
			depth--
		case '"':
			if _, n, err := quotedAt(r.s, r.i); err == nil {
				r.i += n - 1
			}
		}
		r.i++
	}
	if r.i == start {
		return nil, fmt.Errorf("expected a value at %q in %s", r.s[r.i:], r.s)
	}
	return scalarValue(r.s[start:r.i])
}

func (r *valueReader) quoted() (string, error) {
	s, n, err := quotedAt(r.s, r.i)
	if err != nil {
		return "", err
	}
	r.i += n
	return s, nil
}

func (r *valueReader) array() (any, error) {
	r.i++ // '['
	out := []any{}
	for {
		r.skipBlanks()
		if r.i < len(r.s) && r.s[r.i] == ']' {
			r.i++
			return out, nil
		}
		v, err := r.value()
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
}

func (r *valueReader) table() (any, error) {
	r.i++ // '{'
	out := protocol.Table{}
	for {
		r.skipBlanks()
		if r.i < len(r.s) && r.s[r.i] == '}' {
			r.i++
			return out, nil
		}
		key, err := r.key()
		if err != nil {
			return nil, err
		}
		if _, dup := out[key]; dup {
			return nil, fmt.Errorf("key %q given twice in %s", key, r.s)
		}
		if out[key], err = r.value(); err != nil {
			return nil, err
		}
	}
}

// key reads a table key and its '='.
func (r *valueReader) key() (string, error) {
	var key string
	if r.i < len(r.s) && r.s[r.i] == '"' {
		var err error
		if key, err = r.quoted(); err != nil {
			return "", err
		}
	} else {
		start := r.i
		for r.i < len(r.s) && !strings.ContainsRune(" \t=[]{}\"", rune(r.s[r.i])) {
			r.i++
		}
		key = r.s[start:r.i]
	}
	if r.i >= len(r.s) || r.s[r.i] != '=' {
		return "", fmt.Errorf("expected KEY=VALUE in the table %s", r.s)
	}
	r.i++
	return key, nil
}

// scalarValue reads a value that is not a table, an array or a quoted
// string.
func scalarValue(raw string) (any, error) {
	if open := strings.IndexByte(raw, '('); open > 0 && strings.HasSuffix(raw, ")") {
		typ, inner := raw[:open], raw[open+1:len(raw)-1]
		if len(inner) > 0 && inner[0] == '"' {
			s, n, err := quotedAt(inner, 0)
			if err != nil || n != len(inner) {
				return nil, fmt.Errorf("bad quoted string in %s", raw)
			}
			inner = s
		}
		return typedValue(typ, inner)
	}
	switch raw {
	case "true":
		return true, nil
	case "false":
		return false, nil
	case "void":
		return nil, nil
	}
	if n, err := strconv.ParseInt(raw, 10, 32); err == nil {
		return int32(n), nil
	}
	if looksNumeric(raw) {
		if strings.ContainsAny(raw, ".eE") {
			if f, err := strconv.ParseFloat(raw, 64); err == nil {
				return f, nil
			}
		}
		if n, err := strconv.ParseInt(raw, 10, 64); err == nil {
			return n, nil
		}
		return nil, fmt.Errorf("bad number %q", raw)
	}
	return raw, nil
}

func looksNumeric(s string) bool {
	if s == "" {
		return false
	}
	if s[0] == '-' || s[0] == '+' {
		s = s[1:]
	}
	return s != "" && s[0] >= '0' && s[0] <= '9'
}

// typedValue converts the inside of TYPE(...) to a value of that AMQP type.
func typedValue(typ, s string) (any, error) {
	intOf := func(bits int) (int64, error) { return strconv.ParseInt(s, 10, bits) }
	uintOf := func(bits int) (uint64, error) { return strconv.ParseUint(s, 10, bits) }
	var err error
	var v any
	switch typ {
	case "byte":
		var n int64
		n, err = intOf(8)
		v = int8(n)
	case "ubyte":
		var n uint64
		n, err = uintOf(8)
		v = uint8(n)
	case "short":
		var n int64
		n, err = intOf(16)
		v = int16(n)
	case "ushort":
		var n uint64
		n, err = uintOf(16)
		v = uint16(n)
	case "int":
		var n int64
		n, err = intOf(32)
		v = int32(n)
	case "uint":
		var n uint64
		n, err = uintOf(32)
		v = uint32(n)
	case "long":
		v, err = intOf(64)
	case "float":
		var f float64
		f, err = strconv.ParseFloat(s, 32)
		v = float32(f)
	case "double":
		v, err = strconv.ParseFloat(s, 64)
	case "decimal":
		v, err = parseDecimal(s)
	case "str":
		v = s
	case "binary":
		v = []byte(s)
	case "bool":
		v, err = strconv.ParseBool(s)
	case "timestamp":
		// Seconds since the Unix epoch, AMQP's timestamp (x-stream-offset).
		var n int64
		n, err = intOf(64)
		v = time.Unix(n, 0).UTC()
	default:
		return nil, fmt.Errorf("unknown value type %q (expected byte, ubyte, short, ushort, int, uint, long, float, double, decimal, str, binary, bool or timestamp)", typ)
	}
	if err != nil {
		return nil, fmt.Errorf("bad %s value %q", typ, s)
	}
	return v, nil
}

// parseDecimal reads an AMQP decimal written with as many digits after the
// point as its scale: "-1.50" is Value -150, Scale 2.
func parseDecimal(s string) (protocol.Decimal, error) {
	whole, frac, _ := strings.Cut(s, ".")
	if len(frac) > math.MaxUint8 || strings.ContainsAny(frac, "+-") {
		return protocol.Decimal{}, fmt.Errorf("bad decimal %q", s)
	}
	n, err := strconv.ParseInt(whole+frac, 10, 32)
	if err != nil {
		return protocol.Decimal{}, err
	}
	return protocol.Decimal{Scale: uint8(len(frac)), Value: int32(n)}, nil
}

// decimalText is parseDecimal's inverse.
func decimalText(d protocol.Decimal) string {
	digits := strconv.FormatInt(int64(d.Value), 10)
	sign := ""
	if digits[0] == '-' {
		sign, digits = "-", digits[1:]
	}
	if d.Scale == 0 {
		return sign + digits
	}
	if pad := int(d.Scale) + 1 - len(digits); pad > 0 {
		digits = strings.Repeat("0", pad) + digits
	}
	cut := len(digits) - int(d.Scale)
	return sign + digits[:cut] + "." + digits[cut:]
}

// formatValue is parseValue's inverse: the canonical text of a field value.
func formatValue(v any) string { return valueText(v, false) }

// valueText writes a field value; resultStamps writes every timestamp as
// timestamp(*), as results do (x-death's time comes from the broker's own
// clock).
func valueText(v any, resultStamps bool) string {
	switch x := v.(type) {
	case nil:
		return "void"
	case bool:
		return strconv.FormatBool(x)
	case int8:
		return fmt.Sprintf("byte(%d)", x)
	case uint8:
		return fmt.Sprintf("ubyte(%d)", x)
	case int16:
		return fmt.Sprintf("short(%d)", x)
	case uint16:
		return fmt.Sprintf("ushort(%d)", x)
	case int32:
		return strconv.FormatInt(int64(x), 10)
	case int:
		return strconv.Itoa(x)
	case uint32:
		return fmt.Sprintf("uint(%d)", x)
	case int64:
		if x >= math.MinInt32 && x <= math.MaxInt32 {
			return fmt.Sprintf("long(%d)", x)
		}
		return strconv.FormatInt(x, 10)
	case float32:
		return fmt.Sprintf("float(%s)", strconv.FormatFloat(float64(x), 'g', -1, 32))
	case float64:
		s := strconv.FormatFloat(x, 'g', -1, 64)
		if !strings.ContainsAny(s, ".eE") {
			return "double(" + s + ")"
		}
		return s
	case protocol.Decimal:
		return "decimal(" + decimalText(x) + ")"
	case time.Time:
		if resultStamps {
			return "timestamp(*)"
		}
		return fmt.Sprintf("timestamp(%d)", x.Unix())
	case string:
		if bareValue(x) && !looksNumeric(x) && x != "true" && x != "false" && x != "void" {
			return x
		}
		return strconv.Quote(x)
	case []byte:
		return "binary(" + strconv.Quote(string(x)) + ")"
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = valueText(e, resultStamps)
		}
		return "[" + strings.Join(parts, " ") + "]"
	case protocol.Table:
		parts := make([]string, 0, len(x))
		for _, k := range slices.Sorted(maps.Keys(x)) {
			key := k
			if !bareValue(k) {
				key = strconv.Quote(k)
			}
			parts = append(parts, key+"="+valueText(x[k], resultStamps))
		}
		return "{" + strings.Join(parts, " ") + "}"
	}
	return fmt.Sprintf("%q", fmt.Sprint(v))
}

// bareValue reports whether a string can stand unquoted in a value: a bare
// word without the brackets of tables and arrays.
func bareValue(s string) bool {
	return isBare(s) && !strings.ContainsAny(s, "[]{}")
}
