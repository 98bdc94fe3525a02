package definitions

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"

	"github.com/amqpsim/amqpsim/protocol"
)

// FieldTable converts a JSON object of a definitions file (a queue's,
// exchange's or binding's arguments, a policy's definition) to a field
// table as RabbitMQ's definitions import does: integers are longs
// (int64), other numbers doubles (float64), objects tables, lists arrays.
// It takes the json.Numbers Parse leaves as well as the float64s of a
// File built by hand. A nil object is a nil table; a number out of a
// double's range is an error naming its key.
func FieldTable(m map[string]any) (protocol.Table, error) {
	if m == nil {
		return nil, nil
	}
	out := protocol.Table{}
	for k, v := range m {
		c, err := fieldValue(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		out[k] = c
	}
	return out, nil
}

// fieldValue converts one decoded JSON value as FieldTable does.
func fieldValue(v any) (any, error) {
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
	case float64: // a File built without Parse
		if v == math.Trunc(v) && math.Abs(v) < 1<<53 {
			return int64(v), nil
		}
		return v, nil
	case int:
		return int64(v), nil
	case map[string]any:
		return FieldTable(v)
	case protocol.Table:
		return FieldTable(v)
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			c, err := fieldValue(e)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	}
	return v, nil
}

// OperatorPolicy is the value of a parameter of component
// "operator_policy": an operator policy, which a definitions file carries
// among its parameters rather than its policies.
type OperatorPolicy struct {
	Pattern  string
	ApplyTo  string
	Priority int
	// Definition is the policy's keys as field-table values (FieldTable's).
	Definition protocol.Table
}

// OperatorPolicy reads p's value as an operator policy. Its definition may
// be an object, or a list of [key, value] pairs, which is how RabbitMQ
// 3.10 exports it (and its own import then refuses); both read the same.
func (p Parameter) OperatorPolicy() (OperatorPolicy, error) {
	var raw struct {
		Pattern    string          `json:"pattern"`
		ApplyTo    string          `json:"apply-to"`
		Priority   json.Number     `json:"priority"`
		Definition json.RawMessage `json:"definition"`
	}
	dec := json.NewDecoder(bytes.NewReader(p.Value))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		return OperatorPolicy{}, fmt.Errorf("value: %v", err)
	}
	op := OperatorPolicy{Pattern: raw.Pattern, ApplyTo: raw.ApplyTo}
	if raw.Priority != "" {
		n, err := raw.Priority.Int64()
		if err != nil {
			return OperatorPolicy{}, fmt.Errorf("priority: %v", err)
		}
		op.Priority = int(n)
	}
	var def any
	dec = json.NewDecoder(bytes.NewReader(raw.Definition))
	dec.UseNumber()
	if err := dec.Decode(&def); err != nil {
		return OperatorPolicy{}, fmt.Errorf("definition: %v", err)
	}
	switch d := def.(type) {
	case map[string]any:
		t, err := FieldTable(d)
		if err != nil {
			return OperatorPolicy{}, fmt.Errorf("definition: %v", err)
		}
		op.Definition = t
	case []any:
		op.Definition = protocol.Table{}
		for _, pair := range d {
			kv, ok := pair.([]any)
			k, isString := "", false
			if ok && len(kv) == 2 {
				k, isString = kv[0].(string)
			}
			if !isString {
				return OperatorPolicy{}, fmt.Errorf("definition: %v is not a [key, value] pair", pair)
			}
			v, err := fieldValue(kv[1])
			if err != nil {
				return OperatorPolicy{}, fmt.Errorf("definition: %s: %v", k, err)
			}
			op.Definition[k] = v
		}
	default:
		return OperatorPolicy{}, fmt.Errorf("definition: not an object")
	}
	return op, nil
}
