package protocol_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/amqpsim/amqpsim/protocol"
)

// TestJSON: a table the management API shows comes back, through JSON,
// as the table RabbitMQ's import and API read: longs stay longs, doubles
// doubles, nested tables and arrays keep their shape; a byte array or a
// timestamp shows as text.
func TestJSON(t *testing.T) {
	in := protocol.Table{"n": int64(5), "f": 1.5, "s": "x", "b": true, "none": nil,
		"o": protocol.Table{"k": []any{int64(1), "two", map[string]any{"d": 2.5}}}}
	raw, err := json.Marshal(protocol.TableToJSON(in))
	if err != nil {
		t.Fatal(err)
	}
	var decoded map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&decoded); err != nil {
		t.Fatal(err)
	}
	back, err := protocol.TableFromJSON(decoded)
	if err != nil {
		t.Fatal(err)
	}
	want := protocol.Table{"n": int64(5), "f": 1.5, "s": "x", "b": true, "none": nil,
		"o": protocol.Table{"k": []any{int64(1), "two", protocol.Table{"d": 2.5}}}}
	if diff := cmp.Diff(want, back); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	shown := protocol.TableToJSON(protocol.Table{"bin": []byte("ab"), "at": at})
	if shown["bin"] != "ab" || shown["at"] != at.String() {
		t.Errorf("bytes and a timestamp show as %v", shown)
	}
	for _, tc := range []struct {
		in   any
		want any
		err  string
	}{
		{json.Number("9007199254740993"), int64(9007199254740993), ""},
		{json.Number("2.5"), 2.5, ""},
		{json.Number("1e400"), nil, "number 1e400 out of range"},
		{3.0, int64(3), ""},
		{7, int64(7), ""},
		{[]any{json.Number("1e400")}, nil, "number 1e400 out of range"},
	} {
		got, err := protocol.ValueFromJSON(tc.in)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("ValueFromJSON(%v): %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ValueFromJSON(%v) = %T %v, %v; want %T %v", tc.in, got, got, err, tc.want, tc.want)
		}
	}
}
