package sim

import (
	"encoding/json"
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
	Limits   map[string]any `json:"limits,omitempty"`
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
	Limits   []any          `json:"limits,omitempty"`
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
}

// DefinedExchange is an entry of "exchanges".
type DefinedExchange struct {
	Name       string         `json:"name"`
	Vhost      string         `json:"vhost"`
	Type       string         `json:"type"`
	Durable    bool           `json:"durable"`
	AutoDelete bool           `json:"auto_delete"`
	Internal   bool           `json:"internal"`
	Arguments  map[string]any `json:"arguments"`
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

// ParseDefinitions decodes a definitions file, keeping integers exact.
func ParseDefinitions(data []byte) (*Definitions, error) {
	return nil, nil
}

// ImportDefinitions applies defs, as rabbitmqctl import_definitions does:
// users, vhosts, permissions, topic permissions, parameters, policies,
// queues, exchanges, then bindings. It is atomic: every entry is checked
// first, and a bad one fails the whole import, changing nothing, with an
// error naming it (`queues[3] "q": ...`). Existing objects are kept;
// entries for them replace users, permissions and policies, and are
// checked for equivalence for queues and exchanges, as RabbitMQ does.
func (b *Broker) ImportDefinitions(defs *Definitions) error {
	return nil
}

// ExportDefinitions returns the broker's definitions, as rabbitmqctl
// export_definitions does: durable queues and exchanges only, no
// predeclared (amq.*, default) exchanges, users with their hashes.
func (b *Broker) ExportDefinitions() *Definitions {
	return &Definitions{}
}
