package scenarios

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"pgregory.net/rapid"

	"github.com/amqpsim/amqpsim/protocol"
)

// genText draws a string: readable words, words with the characters the
// syntax uses, and arbitrary bytes.
func genText(t *rapid.T, label string) string {
	switch rapid.IntRange(0, 2).Draw(t, label+"-kind") {
	case 0:
		return rapid.SampledFrom([]string{"", "work", "a b", "[x]", "{", "}", "k=v", "\"", "#1", "5", "-3", "1.5",
			"true", "void", "long(1)", "a(b", "x-death", "é", "amq.gen-x"}).Draw(t, label)
	case 1:
		return rapid.String().Draw(t, label)
	}
	return string(rapid.SliceOf(rapid.Byte()).Draw(t, label))
}

// genValue draws a field value of any AMQP type, tables and arrays nested
// up to depth.
func genValue(t *rapid.T, depth int) any {
	kinds := 17
	if depth > 0 {
		kinds = 19
	}
	switch rapid.IntRange(0, kinds-1).Draw(t, "type") {
	case 0:
		return rapid.Bool().Draw(t, "bool")
	case 1:
		return rapid.Int8().Draw(t, "byte")
	case 2:
		return rapid.Uint8().Draw(t, "ubyte")
	case 3:
		return rapid.Int16().Draw(t, "short")
	case 4:
		return rapid.Uint16().Draw(t, "ushort")
	case 5:
		return rapid.Int32().Draw(t, "int")
	case 6:
		return rapid.Uint32().Draw(t, "uint")
	case 7:
		return rapid.Int64().Draw(t, "long")
	case 8:
		return rapid.SampledFrom([]int64{0, 1, -1, math.MaxInt32, math.MinInt32, math.MaxInt32 + 1, math.MinInt64}).Draw(t, "long-edge")
	case 9:
		return rapid.Float32().Draw(t, "float")
	case 10:
		return rapid.Float64().Draw(t, "double")
	case 11:
		return rapid.SampledFrom([]float64{0, math.Copysign(0, -1), 2, 1e21, math.Inf(1), math.Inf(-1), math.NaN()}).Draw(t, "double-edge")
	case 12:
		return protocol.Decimal{Scale: rapid.Uint8().Draw(t, "scale"), Value: rapid.Int32().Draw(t, "value")}
	case 13:
		return genText(t, "str")
	case 14:
		return []byte(genText(t, "binary"))
	case 15:
		return time.Unix(rapid.Int64Range(-1<<40, 1<<40).Draw(t, "unix"), 0).UTC()
	case 16:
		return nil
	case 17:
		n := rapid.IntRange(0, 3).Draw(t, "len")
		out := make([]any, n)
		for i := range out {
			out[i] = genValue(t, depth-1)
		}
		return out
	}
	out := protocol.Table{}
	for range rapid.IntRange(0, 3).Draw(t, "entries") {
		out[genText(t, "key")] = genValue(t, depth-1)
	}
	return out
}

var equalValues = cmp.Options{cmpopts.EquateNaNs()}

// Every value formatValue writes, parseValue reads back to an equal value
// of the same AMQP type, at the top level of a step's option and nested in
// tables and arrays.
func TestValueRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		v := genValue(t, 3)
		text := formatValue(v)
		toks, err := tokenize("publish ch1 q m header.h=" + text)
		if err != nil {
			t.Fatalf("tokenize %s: %v", text, err)
		}
		if len(toks) != 5 || toks[4].key != "header.h" {
			t.Fatalf("%s splits into %d words: %+v", text, len(toks), toks)
		}
		back, err := parseValue(toks[4].raw, toks[4].quoted, toks[4].val)
		if err != nil {
			t.Fatalf("parseValue(%s): %v", text, err)
		}
		if d := cmp.Diff(v, back, equalValues); d != "" {
			t.Fatalf("%s read back differently (-wrote +read):\n%s", text, d)
		}
		if again := formatValue(back); again != text {
			t.Fatalf("%s is written again as %s", text, again)
		}
	})
}

// A header a result line prints is a step's value: the x-death of a
// dead-lettered message, with a timestamp in place of timestamp(*).
func TestXDeathHeaderInAStep(t *testing.T) {
	line := `publish ch1 work m1 header.x-death=[{count=long(1) exchange="" queue=work reason=expired routing-keys=[work] time=timestamp(1700000000)}] header.x-first-death-queue=work`
	op, err := parseOp(line)
	if err != nil {
		t.Fatal(err)
	}
	want := protocol.Table{
		"x-death": []any{protocol.Table{"count": int64(1), "exchange": "", "queue": "work", "reason": "expired",
			"routing-keys": []any{"work"}, "time": time.Unix(1700000000, 0).UTC()}},
		"x-first-death-queue": "work",
	}
	if d := cmp.Diff(want, op.(Publish).Props.Headers); d != "" {
		t.Fatalf("headers (-want +got):\n%s", d)
	}
	if op.String() != line {
		t.Errorf("String() = %s\nwant        %s", op.String(), line)
	}
	result := headerLines(want)[0]
	if stepText := "x-death=" + formatValue(want["x-death"]); strings.Replace(stepText, "timestamp(1700000000)", "timestamp(*)", 1) != result {
		t.Errorf("result %s and step %s differ beyond the timestamp", result, stepText)
	}
}

func TestValueErrors(t *testing.T) {
	for _, c := range []struct{ line, want string }{
		{`publish ch1 q m header.h=[a b`, "unclosed '['"},
		{`publish ch1 q m header.h={a=[1}`, "unexpected '}'"},
		{`publish ch1 q m header.h=[a]b`, "expected a blank after ']'"},
		{`publish ch1 q m header.h={a}`, "expected KEY=VALUE"},
		{`publish ch1 q m header.h={a=1 a=2}`, `key "a" given twice`},
		{`publish ch1 q m header.h=[long(x)]`, `bad long value "x"`},
		{`publish ch1 q m header.h=[list(1)]`, `unknown value type "list"`},
		{`publish ch1 q m header.h=decimal(1.-5)`, `bad decimal value`},
		{`publish ch1 q m header.h={a=}`, `expected a value`},
	} {
		_, err := parseOp(c.line)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.line, err, c.want)
		}
	}
}

func TestDecimalText(t *testing.T) {
	for _, c := range []struct {
		d    protocol.Decimal
		text string
	}{
		{protocol.Decimal{Scale: 2, Value: 150}, "1.50"},
		{protocol.Decimal{Scale: 3, Value: -5}, "-0.005"},
		{protocol.Decimal{Scale: 0, Value: 7}, "7"},
		{protocol.Decimal{Scale: 1, Value: math.MinInt32}, "-214748364.8"},
	} {
		if got := decimalText(c.d); got != c.text {
			t.Errorf("decimalText(%+v) = %s, want %s", c.d, got, c.text)
		}
		if back, err := parseDecimal(c.text); err != nil || back != c.d {
			t.Errorf("parseDecimal(%s) = %+v, %v; want %+v", c.text, back, err, c.d)
		}
	}
}
