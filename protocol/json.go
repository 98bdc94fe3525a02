package protocol

import (
	"encoding/json"
	"fmt"
	"math"
)

// Field tables in JSON. RabbitMQ's definitions files and its management
// HTTP API write arguments, policy definitions and headers as JSON
// objects; these convert between the two as RabbitMQ does.

// TableFromJSON converts a decoded JSON object (a queue's, exchange's or
// binding's arguments, a policy's definition) to a field table as
// RabbitMQ's definitions import and management API do: integers are longs
// (int64), other numbers doubles (float64), objects tables, lists arrays.
// It takes the json.Numbers of a decoder that UseNumber, as well as the
// float64s (and ints) of a value built by hand. A nil object is a nil
// table; a number out of a double's range is an error naming its key.
func TableFromJSON(m map[string]any) (Table, error) {
	if m == nil {
		return nil, nil
	}
	out := Table{}
	for k, v := range m {
		c, err := ValueFromJSON(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		out[k] = c
	}
	return out, nil
}

// ValueFromJSON converts one decoded JSON value as TableFromJSON does.
func ValueFromJSON(v any) (any, error) {
	switch v := v.(type) {
	case json.Number:
		if n, err := v.Int64(); err == nil {
			return n, nil
		}
		f, err := v.Float64()
		if err != nil {
			return nil, fmt.Errorf("number %s out of range", v)
		}
		return f, nil
	case float64: // a value built without a decoder's UseNumber
		if v == math.Trunc(v) && math.Abs(v) < 1<<53 {
			return int64(v), nil
		}
		return v, nil
	case int:
		return int64(v), nil
	case map[string]any:
		return TableFromJSON(v)
	case Table:
		return TableFromJSON(v)
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			c, err := ValueFromJSON(e)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	}
	return v, nil
}

// TableToJSON converts a field table to the JSON object RabbitMQ's
// management API shows for it (ValueToJSON).
func TableToJSON(t Table) map[string]any {
	out := map[string]any{}
	for k, v := range t {
		out[k] = ValueToJSON(v)
	}
	return out
}

// ValueToJSON converts a field value to what encoding/json writes as
// RabbitMQ's management API shows it: tables as objects, byte arrays as
// strings, a value that describes itself (a time, a decimal) as its
// String.
func ValueToJSON(v any) any {
	switch x := v.(type) {
	case Table:
		return TableToJSON(x)
	case map[string]any:
		return TableToJSON(Table(x))
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = ValueToJSON(e)
		}
		return out
	case []byte:
		return string(x)
	case fmt.Stringer:
		return x.String()
	}
	return v
}
