package definitions

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// File is RabbitMQ's definitions file (rabbitmqctl export_definitions, GET
// /api/definitions, load_definitions): its JSON encoding is that format,
// key for key, so a file exported from RabbitMQ 3.10 unmarshals into it
// and sim.Broker.ExportDefinitions marshals back to one RabbitMQ imports.
// Decode with Parse, which keeps large integers exact, or encoding/json.
type File struct {
	RabbitVersion    string            `json:"rabbit_version,omitempty"`
	RabbitMQVersion  string            `json:"rabbitmq_version,omitempty"`
	Users            []User            `json:"users"`
	Vhosts           []Vhost           `json:"vhosts"`
	Permissions      []Permission      `json:"permissions"`
	TopicPermissions []TopicPermission `json:"topic_permissions"`
	Parameters       []Parameter       `json:"parameters"`
	GlobalParameters []GlobalParameter `json:"global_parameters"`
	Policies         []Policy          `json:"policies"`
	Queues           []Queue           `json:"queues"`
	Exchanges        []Exchange        `json:"exchanges"`
	Bindings         []Binding         `json:"bindings"`
}

// User is an entry of a definitions file's "users".
type User struct {
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

// Vhost is an entry of "vhosts".
type Vhost struct {
	Name     string         `json:"name"`
	Limits   []any          `json:"limits"`
	Metadata *VhostMetadata `json:"metadata,omitempty"`
}

// VhostMetadata is a vhost's description and tags.
type VhostMetadata struct {
	Description string `json:"description"`
	Tags        Tags   `json:"tags"`
}

// Permission is an entry of "permissions".
type Permission struct {
	User      string `json:"user"`
	Vhost     string `json:"vhost"`
	Configure string `json:"configure"`
	Write     string `json:"write"`
	Read      string `json:"read"`
}

// TopicPermission is an entry of "topic_permissions".
type TopicPermission struct {
	User     string `json:"user"`
	Vhost    string `json:"vhost"`
	Exchange string `json:"exchange"`
	Write    string `json:"write"`
	Read     string `json:"read"`
}

// Parameter is an entry of "parameters": a vhost's runtime parameter.
// amqpsim knows the component "operator_policy", whose value is an
// operator policy (see OperatorPolicy).
type Parameter struct {
	Vhost     string          `json:"vhost"`
	Component string          `json:"component"`
	Name      string          `json:"name"`
	Value     json.RawMessage `json:"value"`
}

// GlobalParameter is an entry of "global_parameters", such as
// cluster_name.
type GlobalParameter struct {
	Name  string          `json:"name"`
	Value json.RawMessage `json:"value"`
}

// Policy is an entry of "policies".
type Policy struct {
	Vhost      string         `json:"vhost"`
	Name       string         `json:"name"`
	Pattern    string         `json:"pattern"`
	ApplyTo    string         `json:"apply-to"`
	Definition map[string]any `json:"definition"`
	Priority   int            `json:"priority"`
}

// Queue is an entry of "queues".
type Queue struct {
	Name       string         `json:"name"`
	Vhost      string         `json:"vhost"`
	Durable    bool           `json:"durable"`
	AutoDelete bool           `json:"auto_delete"`
	Arguments  map[string]any `json:"arguments"`
	// Type is the queue type, "classic" or "quorum", which 3.10 writes
	// beside x-queue-type.
	Type string `json:"type,omitempty"`
}

// Exchange is an entry of "exchanges".
type Exchange struct {
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

// Binding is an entry of "bindings".
type Binding struct {
	Source          string         `json:"source"`
	Vhost           string         `json:"vhost"`
	Destination     string         `json:"destination"`
	DestinationType string         `json:"destination_type"` // "queue" or "exchange"
	RoutingKey      string         `json:"routing_key"`
	Arguments       map[string]any `json:"arguments"`
}

// Parse decodes a definitions file. Integers stay exact (encoding/json
// alone would make them float64), and keys amqpsim does not know are
// ignored, as RabbitMQ 3.10.8 ignores them (measured: an unknown top-level
// key and an unknown key in a queue entry import without a word). A file
// that is not JSON is an error.
func Parse(data []byte) (*File, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var f File
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("definitions: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("definitions: data after the JSON object")
	}
	return &f, nil
}
