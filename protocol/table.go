package protocol

import (
	"fmt"
	"time"
)

// Decimal is the AMQP decimal field value: Value × 10^-Scale.
type Decimal struct {
	Scale uint8
	Value int32
}

// Table is an AMQP field table. Values keep their AMQP type through their Go
// type, as the amqp091-go client does:
//
//	bool 't'   int8 'b'    uint8 'B'   int16 's'   uint16 'u'
//	int32 'I'  uint32 'i'  int64 'l'   float32 'f' float64 'd'
//	Decimal 'D'  string 'S'  []byte 'x'  []any 'A'  time.Time 'T'
//	Table 'F'  nil 'V'
//
// A Go int is an int32 'I' (signedint), as amqp091-go encodes it.
type Table map[string]any

// TypeName returns RabbitMQ's name for the AMQP type of a field value, as it
// appears in error texts ("signedint", "longstr", ...), or "" when the value has
// no AMQP type.
func TypeName(v any) string {
	switch v.(type) {
	case bool:
		return "bool"
	case int8:
		return "byte"
	case uint8:
		return "unsignedbyte"
	case int16:
		return "short"
	case uint16:
		return "unsignedshort"
	case int32, int:
		return "signedint"
	case uint32:
		return "unsignedint"
	case int64:
		return "long"
	case float32:
		return "float"
	case float64:
		return "double"
	case Decimal:
		return "decimal"
	case string:
		return "longstr"
	case []byte:
		return "binary"
	case []any:
		return "array"
	case time.Time:
		return "timestamp"
	case Table:
		return "table"
	case nil:
		return "void"
	}
	return ""
}

// Validate reports the first value, at any depth, whose Go type has no AMQP
// field type.
func (t Table) Validate() error {
	for k, v := range t {
		if err := validateValue(v); err != nil {
			return fmt.Errorf("table field %q: %w", k, err)
		}
	}
	return nil
}

func validateValue(v any) error {
	switch x := v.(type) {
	case Table:
		return x.Validate()
	case []any:
		for i, e := range x {
			if err := validateValue(e); err != nil {
				return fmt.Errorf("array element %d: %w", i, err)
			}
		}
		return nil
	}
	if TypeName(v) == "" {
		return fmt.Errorf("value of type %T has no AMQP field type", v)
	}
	return nil
}

// Int returns an integer field value as int64, and whether the value has one of
// RabbitMQ's integer types (byte, short, signedint, long and their unsigned
// forms).
func Int(v any) (int64, bool) {
	switch x := v.(type) {
	case int8:
		return int64(x), true
	case uint8:
		return int64(x), true
	case int16:
		return int64(x), true
	case uint16:
		return int64(x), true
	case int32:
		return int64(x), true
	case int:
		return int64(x), true
	case uint32:
		return int64(x), true
	case int64:
		return x, true
	}
	return 0, false
}

// Properties are the 14 basic content properties. Empty strings and zero
// numbers are absent properties.
//
// The names follow Go's initialisms, where amqp091-go's Publishing and
// Delivery do not: CorrelationID, MessageID, UserID and AppID here are
// CorrelationId, MessageId, UserId and AppId there. A test that builds a
// sim.Message next to an amqp.Publishing spells each its own way.
type Properties struct {
	ContentType     string
	ContentEncoding string
	Headers         Table
	DeliveryMode    uint8 // 1 transient, 2 persistent
	Priority        uint8
	CorrelationID   string
	ReplyTo         string
	Expiration      string // per-message TTL in milliseconds, as a decimal string
	MessageID       string
	Timestamp       time.Time
	Type            string
	UserID          string
	AppID           string
	ClusterID       string // reserved
}
