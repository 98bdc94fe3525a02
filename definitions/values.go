package definitions

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/amqpsim/amqpsim/protocol"
)

// OperatorPolicy is the value of a parameter of component
// "operator_policy": an operator policy, which a definitions file carries
// among its parameters rather than its policies.
type OperatorPolicy struct {
	Pattern  string
	ApplyTo  string
	Priority int
	// Definition is the policy's keys as field-table values
	// (protocol.TableFromJSON's).
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
		t, err := protocol.TableFromJSON(d)
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
			v, err := protocol.ValueFromJSON(kv[1])
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
