package protocol

import "time"

// EncodedSize returns the bytes p takes in a content header after the body
// size: the 2 bytes of property flags, then each present property as AMQP
// 0-9-1 encodes it (wire.AppendHeader writes the same bytes). A property is
// present when it is not its zero value, Headers when it is not nil; a nil
// p has none, 2 bytes. RabbitMQ 4.3's quorum queues count this with the
// body against x-max-length-bytes (mc_amqpl:size/1's meta size, the
// stored properties_bin).
func (p *Properties) EncodedSize() int {
	if p == nil {
		return 2
	}
	n := 2
	for _, s := range [...]string{p.ContentType, p.ContentEncoding, p.CorrelationID, p.ReplyTo, p.Expiration,
		p.MessageID, p.Type, p.UserID, p.AppID, p.ClusterID} {
		if s != "" {
			n += 1 + len(s) // shortstr
		}
	}
	if p.Headers != nil {
		n += p.Headers.EncodedSize()
	}
	if p.DeliveryMode != 0 {
		n++
	}
	if p.Priority != 0 {
		n++
	}
	if !p.Timestamp.IsZero() {
		n += 8
	}
	return n
}

// EncodedSize returns the bytes t takes as an AMQP field table: a 4-byte
// length, then each entry's key (a shortstr), type tag and value. It is
// exact for a table Validate accepts; a value with no AMQP type counts 0.
func (t Table) EncodedSize() int {
	n := 4
	for k, v := range t {
		n += 1 + len(k) + fieldSize(v)
	}
	return n
}

// fieldSize is the bytes of a field value with its type tag.
func fieldSize(v any) int {
	switch x := v.(type) {
	case nil:
		return 1
	case bool, int8, uint8:
		return 2
	case int16, uint16:
		return 3
	case int32, int, uint32, float32:
		return 5
	case int64, float64, time.Time:
		return 9
	case Decimal:
		return 6
	case string:
		return 5 + len(x)
	case []byte:
		return 5 + len(x)
	case []any:
		n := 5
		for _, e := range x {
			n += fieldSize(e)
		}
		return n
	case Table:
		return 1 + x.EncodedSize()
	}
	return 0
}
