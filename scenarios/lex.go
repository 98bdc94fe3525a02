package scenarios

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/amqpsim/amqpsim/protocol"
)

// token is one word of a step line: a positional word, a quoted string, a
// bare flag, or a key=value option.
type token struct {
	col    int    // 1-based column of the token's first byte
	key    string // option key ("" for a positional word)
	val    string // the word, the unquoted string, or the option's value
	quoted bool   // val was written as a quoted string
	raw    string // the value as written (for typed values)
}

// lexError is a tokenizer error at a column.
type lexError struct {
	col int
	msg string
}

func (e *lexError) Error() string { return e.msg }

// tokenize splits a step line into tokens. Words are separated by spaces or
// tabs; a word that starts with a double quote is a Go string literal; a word
// key=value is an option whose value may itself be quoted.
func tokenize(line string) ([]token, error) {
	var toks []token
	i := 0
	for i < len(line) {
		c := line[i]
		if c == ' ' || c == '\t' {
			i++
			continue
		}
		start := i
		if c == '"' {
			s, n, err := quotedAt(line, i)
			if err != nil {
				return nil, err
			}
			toks = append(toks, token{col: start + 1, val: s, quoted: true, raw: line[i : i+n]})
			i += n
			continue
		}
		for i < len(line) && line[i] != ' ' && line[i] != '\t' && line[i] != '=' && line[i] != '"' {
			i++
		}
		word := line[start:i]
		if i < len(line) && line[i] == '"' {
			return nil, &lexError{col: i + 1, msg: "unexpected '\"' inside a word (quote the whole word)"}
		}
		if i < len(line) && line[i] == '=' {
			i++
			if word == "" {
				return nil, &lexError{col: start + 1, msg: "expected an option name before '='"}
			}
			t := token{col: start + 1, key: word}
			if i < len(line) && line[i] == '"' {
				s, n, err := quotedAt(line, i)
				if err != nil {
					return nil, err
				}
				t.val, t.quoted, t.raw = s, true, line[i:i+n]
				i += n
			} else {
				vs := i
				depth := 0
				for i < len(line) && (depth > 0 || (line[i] != ' ' && line[i] != '\t')) {
					switch line[i] {
					case '(':
						depth++
					case ')':
						depth--
					case '"':
						// a quoted string inside a typed value: str("a b")
						_, n, err := quotedAt(line, i)
						if err != nil {
							return nil, err
						}
						i += n - 1
					}
					i++
				}
				t.val = line[vs:i]
				t.raw = t.val
			}
			toks = append(toks, t)
			continue
		}
		toks = append(toks, token{col: start + 1, val: word, raw: word})
	}
	return toks, nil
}

// quotedAt reads the Go string literal starting at line[i] and returns its
// value and length in bytes.
func quotedAt(line string, i int) (string, int, error) {
	j := i + 1
	for j < len(line) {
		switch line[j] {
		case '\\':
			j += 2
			continue
		case '"':
			s, err := strconv.Unquote(line[i : j+1])
			if err != nil {
				return "", 0, &lexError{col: i + 1, msg: fmt.Sprintf("bad quoted string %s: %v", line[i:j+1], err)}
			}
			return s, j + 1 - i, nil
		}
		j++
	}
	return "", 0, &lexError{col: i + 1, msg: "unterminated quoted string (expected a closing '\"')"}
}

// isBare reports whether s can be written without quotes: non-empty, no
// spaces, quotes, '=', '(' or control characters, and not starting with '#'.
func isBare(s string) bool {
	if s == "" || s[0] == '#' {
		return false
	}
	for _, r := range s {
		if r <= ' ' || r == '"' || r == '=' || r == '(' || r == ')' || r == 0x7f || r > 0x7e {
			return false
		}
	}
	return true
}

// flagWords are the bare words some step reads as a flag; a name or body
// spelled like one is quoted so that it stays positional.
var flagWords = map[string]bool{"passive": true, "durable": true, "exclusive": true, "auto-delete": true,
	"internal": true, "if-unused": true, "if-empty": true, "global": true, "no-ack": true,
	"mandatory": true, "persistent": true, "multiple": true, "requeue": true}

// word renders a name or body: bare when possible, quoted otherwise.
func word(s string) string {
	if isBare(s) && !flagWords[s] {
		return s
	}
	return strconv.Quote(s)
}

// optWord renders an option's string value: bare unless it is empty or has
// blanks, quotes or control characters.
func optWord(s string) string {
	if s == "" || strings.ContainsAny(s, " \t\"") || !isBare(strings.NewReplacer("#", "a", "=", "a").Replace(s)) {
		return strconv.Quote(s)
	}
	return s
}

// parseValue reads a typed field value (queue and consumer arguments,
// message headers). See the package documentation for the forms.
func parseValue(raw string, quoted bool, val string) (any, error) {
	if quoted {
		return val, nil
	}
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
	case "str":
		v = s
	case "bool":
		v, err = strconv.ParseBool(s)
	case "timestamp":
		// Seconds since the Unix epoch, AMQP's timestamp (x-stream-offset).
		var n int64
		n, err = intOf(64)
		v = time.Unix(n, 0).UTC()
	default:
		return nil, fmt.Errorf("unknown value type %q (expected byte, ubyte, short, ushort, int, uint, long, float, double, str, bool or timestamp)", typ)
	}
	if err != nil {
		return nil, fmt.Errorf("bad %s value %q", typ, s)
	}
	return v, nil
}

// formatValue is parseValue's inverse: the canonical text of a field value.
func formatValue(v any) string {
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
	case time.Time:
		return fmt.Sprintf("timestamp(%d)", x.Unix())
	case string:
		if isBare(x) && !looksNumeric(x) && x != "true" && x != "false" && x != "void" {
			return x
		}
		return strconv.Quote(x)
	}
	return fmt.Sprintf("%q", fmt.Sprint(v))
}

// formatTable renders a table's entries as sorted key=value options, each key
// prefixed with prefix.
func formatTable(prefix string, t protocol.Table) []string {
	keys := make([]string, 0, len(t))
	for k := range t {
		keys = append(keys, k)
	}
	sortStrings(keys)
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		out = append(out, prefix+k+"="+formatValue(t[k]))
	}
	return out
}

// formatArgs renders an argument table as sorted options: x- keys as they
// are, any other key as arg.KEY.
func formatArgs(t protocol.Table) []string {
	out := formatTable("", t)
	for i, o := range out {
		if !strings.HasPrefix(o, "x-") {
			out[i] = "arg." + o
		}
	}
	return out
}
