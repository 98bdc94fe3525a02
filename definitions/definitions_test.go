package definitions_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/amqpsim/amqpsim/definitions"
	"github.com/amqpsim/amqpsim/protocol"
)

func TestTagsJSON(t *testing.T) {
	var u definitions.User
	if err := json.Unmarshal([]byte(`{"name":"a","tags":"administrator, monitoring"}`), &u); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(u.Tags, []string{"administrator", "monitoring"}) {
		t.Fatalf("comma-separated tags: %q", u.Tags)
	}
	out, _ := json.Marshal(definitions.User{Name: "a"})
	if !strings.Contains(string(out), `"tags":[]`) {
		t.Fatalf("no tags marshal as %s", out)
	}
}

// TestParse: integers stay exact, unknown keys are ignored, and what is
// not one JSON object is an error.
func TestParse(t *testing.T) {
	f, err := definitions.Parse([]byte(`{"bogus_top":[1],
		"queues":[{"name":"q1","vhost":"/","durable":true,"arguments":{"x-max-length-bytes":9007199254740993},"bogus_key":3}]}`))
	if err != nil {
		t.Fatal(err)
	}
	args, err := protocol.TableFromJSON(f.Queues[0].Arguments)
	if err != nil {
		t.Fatal(err)
	}
	if got := args["x-max-length-bytes"]; got != int64(9007199254740993) {
		t.Errorf("a large integer reads as %T %v", got, got)
	}
	for _, bad := range []string{`{"queues":[`, `{} {}`, `{"queues":5}`} {
		if _, err := definitions.Parse([]byte(bad)); err == nil {
			t.Errorf("Parse accepted %s", bad)
		}
	}
}

// TestArgumentsAsTable: protocol.TableFromJSON converts as RabbitMQ's import does, from Parse's
// json.Numbers and from the float64s of a File built by hand alike.
func TestArgumentsAsTable(t *testing.T) {
	f, err := definitions.Parse([]byte(`{"queues":[{"arguments":
		{"n":5,"f":1.5,"e":1.0,"s":"x","b":true,"o":{"k":[1,"two",{"d":2.5}]}}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	got, err := protocol.TableFromJSON(f.Queues[0].Arguments)
	if err != nil {
		t.Fatal(err)
	}
	want := protocol.Table{"n": int64(5), "f": 1.5, "e": 1.0, "s": "x", "b": true,
		"o": protocol.Table{"k": []any{int64(1), "two", protocol.Table{"d": 2.5}}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("parsed (-want +got):\n%s", diff)
	}
	byHand, err := protocol.TableFromJSON(map[string]any{"n": 5.0, "f": 1.5, "i": 7, "t": protocol.Table{"m": 2.0}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(protocol.Table{"n": int64(5), "f": 1.5, "i": int64(7), "t": protocol.Table{"m": int64(2)}}, byHand); diff != "" {
		t.Errorf("built by hand (-want +got):\n%s", diff)
	}
	if tab, err := protocol.TableFromJSON(nil); tab != nil || err != nil {
		t.Errorf("nil: %v, %v", tab, err)
	}
	if _, err := protocol.TableFromJSON(map[string]any{"big": json.Number("1e400")}); err == nil || err.Error() != "big: number 1e400 out of range" {
		t.Errorf("out of range: %v", err)
	}
}

// TestOperatorPolicy reads both forms of an operator policy's definition:
// RabbitMQ 3.10.8 exports [key, value] pairs, its import wants an object.
func TestOperatorPolicy(t *testing.T) {
	want := definitions.OperatorPolicy{Pattern: "^app", ApplyTo: "queues", Priority: 3,
		Definition: protocol.Table{"max-length": int64(1000), "message-ttl": int64(60000)}}
	for _, value := range []string{
		`{"pattern":"^app","apply-to":"queues","priority":3,"definition":{"max-length":1000,"message-ttl":60000}}`,
		`{"pattern":"^app","apply-to":"queues","priority":3,"definition":[["max-length",1000],["message-ttl",60000]]}`,
	} {
		got, err := definitions.Parameter{Component: "operator_policy", Name: "cap", Value: json.RawMessage(value)}.OperatorPolicy()
		if err != nil {
			t.Fatalf("%s: %v", value, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", value, diff)
		}
	}
	for value, wantErr := range map[string]string{
		`[]`:                                   "value: json: cannot unmarshal array",
		`{"priority":1.5,"definition":{}}`:     "priority: ",
		`{"definition":"max-length"}`:          "definition: not an object",
		`{"definition":[["max-length"]]}`:      "definition: [max-length] is not a [key, value] pair",
		`{"definition":[["a",1],["b",1e400]]}`: "definition: b: number 1e400 out of range",
	} {
		_, err := definitions.Parameter{Value: json.RawMessage(value)}.OperatorPolicy()
		if err == nil || !strings.HasPrefix(err.Error(), wantErr) {
			t.Errorf("%s: %v, want an error starting %q", value, err, wantErr)
		}
	}
}
