package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
)

// Definitions is RabbitMQ's definitions file (rabbitmqctl
// export_definitions, GET /api/definitions, load_definitions): its JSON
// encoding is that format, key for key, so a file exported from RabbitMQ
// 3.10 unmarshals into it and Broker.ExportDefinitions marshals back to
// one RabbitMQ imports. Decode with encoding/json (ParseDefinitions keeps
// large integers exact).
type Definitions struct {
	RabbitVersion    string                   `json:"rabbit_version,omitempty"`
	RabbitMQVersion  string                   `json:"rabbitmq_version,omitempty"`
	Users            []DefinedUser            `json:"users"`
	Vhosts           []DefinedVhost           `json:"vhosts"`
	Permissions      []DefinedPermission      `json:"permissions"`
	TopicPermissions []DefinedTopicPermission `json:"topic_permissions"`
	Parameters       []DefinedParameter       `json:"parameters"`
	GlobalParameters []DefinedGlobalParameter `json:"global_parameters"`
	Policies         []DefinedPolicy          `json:"policies"`
	Queues           []DefinedQueue           `json:"queues"`
	Exchanges        []DefinedExchange        `json:"exchanges"`
	Bindings         []DefinedBinding         `json:"bindings"`
}

// DefinedUser is an entry of a definitions file's "users".
type DefinedUser struct {
	Name             string `json:"name"`
	PasswordHash     string `json:"password_hash"`
	HashingAlgorithm string `json:"hashing_algorithm,omitempty"`
	// Password is accepted on import, as the management API's PUT
	// /api/users does, and never exported.
	Password string         `json:"password,omitempty"`
	Tags     Tags           `json:"tags"`
	Limits   map[string]any `json:"limits"`
}

// Tags are a user's or vhost's tags: a JSON list, or, as files from
// RabbitMQ before 3.9 carry them, one comma-separated string.
type Tags []string

// UnmarshalJSON accepts a list of strings or a comma-separated string.
func (t *Tags) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err == nil {
		*t = nil
		for _, tag := range strings.Split(s, ",") {
			if tag = strings.TrimSpace(tag); tag != "" {
				*t = append(*t, tag)
			}
		}
		return nil
	}
	var l []string
	if err := json.Unmarshal(data, &l); err != nil {
		return err
	}
	*t = l
	return nil
}

// MarshalJSON writes a list, [] for none.
func (t Tags) MarshalJSON() ([]byte, error) {
	if t == nil {
		return []byte("[]"), nil
	}
	return json.Marshal([]string(t))
}

// DefinedVhost is an entry of "vhosts".
type DefinedVhost struct {
	Name     string         `json:"name"`
	Limits   []any          `json:"limits"`
	Metadata *VhostMetadata `json:"metadata,omitempty"`
}

// VhostMetadata is a vhost's description and tags.
type VhostMetadata struct {
	Description string `json:"description"`
	Tags        Tags   `json:"tags"`
}

// DefinedPermission is an entry of "permissions".
type DefinedPermission struct {
	User      string `json:"user"`
	Vhost     string `json:"vhost"`
	Configure string `json:"configure"`
	Write     string `json:"write"`
	Read      string `json:"read"`
}

// DefinedTopicPermission is an entry of "topic_permissions".
type DefinedTopicPermission struct {
	User     string `json:"user"`
	Vhost    string `json:"vhost"`
	Exchange string `json:"exchange"`
	Write    string `json:"write"`
	Read     string `json:"read"`
}

// DefinedParameter is an entry of "parameters": a vhost's runtime
// parameter. amqpsim knows the component "operator_policy", whose value
// is an operator policy (pattern, definition, priority, apply-to).
type DefinedParameter struct {
	Vhost     string          `json:"vhost"`
	Component string          `json:"component"`
	Name      string          `json:"name"`
	Value     json.RawMessage `json:"value"`
}

// DefinedGlobalParameter is an entry of "global_parameters", such as
// cluster_name.
type DefinedGlobalParameter struct {
	Name  string          `json:"name"`
	Value json.RawMessage `json:"value"`
}

// DefinedPolicy is an entry of "policies".
type DefinedPolicy struct {
	Vhost      string         `json:"vhost"`
	Name       string         `json:"name"`
	Pattern    string         `json:"pattern"`
	ApplyTo    string         `json:"apply-to"`
	Definition map[string]any `json:"definition"`
	Priority   int            `json:"priority"`
}

// DefinedQueue is an entry of "queues".
type DefinedQueue struct {
	Name       string         `json:"name"`
	Vhost      string         `json:"vhost"`
	Durable    bool           `json:"durable"`
	AutoDelete bool           `json:"auto_delete"`
	Arguments  map[string]any `json:"arguments"`
	// Type is the queue type, "classic" or "quorum", which 3.10 writes
	// beside x-queue-type.
	Type string `json:"type,omitempty"`
}

// DefinedExchange is an entry of "exchanges".
type DefinedExchange struct {
	Name       string `json:"name"`
	Vhost      string `json:"vhost"`
	Type       string `json:"type"`
	Durable    bool   `json:"durable"`
	AutoDelete bool   `json:"auto_delete"`
	// Internal is read on import; RabbitMQ 3.10.8 exports no internal
	// exchange, so an export never sets it.
	Internal  bool           `json:"internal,omitempty"`
	Arguments map[string]any `json:"arguments"`
}

// DefinedBinding is an entry of "bindings".
type DefinedBinding struct {
	Source          string         `json:"source"`
	Vhost           string         `json:"vhost"`
	Destination     string         `json:"destination"`
	DestinationType string         `json:"destination_type"` // "queue" or "exchange"
	RoutingKey      string         `json:"routing_key"`
	Arguments       map[string]any `json:"arguments"`
}

// ParseDefinitions decodes a definitions file. Integers stay exact
// (encoding/json alone would make them float64), and keys amqpsim does not
// know are ignored, as RabbitMQ 3.10.8 ignores them (measured: an unknown
// top-level key and an unknown key in a queue entry import without a
// word). A file that is not JSON is an error.
func ParseDefinitions(data []byte) (*Definitions, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var d Definitions
	if err := dec.Decode(&d); err != nil {
		return nil, fmt.Errorf("sim: definitions: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("sim: definitions: data after the JSON object")
	}
	return &d, nil
}

// jsonValue converts a decoded JSON value to a field-table value as
// RabbitMQ's definitions import does: integers are longs, other numbers
// doubles, objects tables, lists arrays.
func jsonValue(v any) (any, error) {
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
	case float64: // a Definitions built without ParseDefinitions
		if v == math.Trunc(v) && math.Abs(v) < 1<<53 {
			return int64(v), nil
		}
		return v, nil
	case int:
		return int64(v), nil
	case map[string]any:
		return jsonTable(v)
	case Table:
		return jsonTable(v)
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			c, err := jsonValue(e)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	}
	return v, nil
}

func jsonTable(m map[string]any) (Table, error) {
	if m == nil {
		return nil, nil
	}
	out := Table{}
	for k, v := range m {
		c, err := jsonValue(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		out[k] = c
	}
	return out, nil
}
