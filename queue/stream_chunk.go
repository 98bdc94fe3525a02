package queue

import (
	"time"

	"github.com/amqpsim/amqpsim/protocol"
)

// The bytes a stream writes for a message, exactly as RabbitMQ does.
//
// A publish to a stream is one chunk in its segment file (osiris_log: "Chunk
// format"): a 48-byte header, the filter's bloom bytes when the message has an
// x-stream-filter-value (4.x), one simple entry (a 4-byte length and the
// message) and a trailer with the publishing channel's writer id and sequence
// (osiris_tracking parse_trailer/3: a type byte, a length byte, the id, 8
// bytes). The writer id is the channel's pid as text, "_" and a 23-character
// guid (rabbit_stream_queue:init/1), 34 bytes with a pid of 10 characters
// ("<0.4321.0>"), so the trailer is 44 bytes. The message is AMQP 1.0
// sections, each a described type (00 53 code) whose value is a list, a map
// or the body's binary, encoded by amqp10_binary_generator: strings and
// binaries of up to 254 bytes (3.10; 255 on 4.x) in str8/vbin8 (2 bytes
// before them), longer ones in str32 (5); lists and maps of fewer than 255
// elements whose elements take fewer than 255 bytes in list8/map8 (3 bytes),
// others in list32/map32 (9); integers in their smallest encoding.
//
// Which sections a message has, and what goes where, is the release's
// StreamFormat (see its values). What is not modelled: a channel pid of other
// than 10 characters (a broker that has run a while has "<0.12345.0>", and its
// chunks are a byte larger each; one just started has "<0.999.0>"); several
// messages that osiris batches into one chunk when they arrive together (the
// simulator writes a chunk per message); a message-id or correlation-id of the
// "urn:uuid:" form whose 36 characters are not a UUID's hex groups (4.x
// crashes converting it, or stores it in another size); a message
// dead-lettered a second time after it expired (4.x keeps its expiration
// in every death, amqpsim in the first); and a decimal header, which
// crashes the conversion on every release (stream-decimal-header*.txt).
// A dead letter (4.x; 3.10 drops those to a stream) is sized from the
// x-death header amqpsim keeps, as the x-opt-deaths annotation RabbitMQ
// stores instead (TestStreamDeadLetterChunkSizes).

// StreamFormat is how a release turns an AMQP 0-9-1 message into the AMQP
// 1.0 sections a stream stores, which sets the size of its chunk.
type StreamFormat uint8

const (
	// StreamRecord310 is RabbitMQ 3.10's rabbit_msg_record:from_amqp091/2
	// with the exchange and routing key added by
	// rabbit_stream_queue:msg_to_iodata/1. Message annotations: x-exchange,
	// x-routing-key and, when set, x-basic-expiration (a string),
	// x-basic-delivery-mode and x-basic-priority (ubytes). Properties, all
	// 13 fields with their nulls, when one of message-id, user-id,
	// reply-to, correlation-id, content-type, content-encoding or
	// timestamp (creation-time) is set. Application properties: the
	// headers (array and table headers dropped) and x-basic-type and
	// x-basic-app-id. Then the body. No header section.
	StreamRecord310 StreamFormat = iota
	// StreamMC40 is RabbitMQ 4.0's mc_amqpl:convert_to(mc_amqp, ...) and
	// mc_amqp:protocol_state/2 (3.13's message containers, unmeasured). A
	// header section always (durable from delivery-mode 2, priority, ttl
	// from expiration as a uint, first-acquirer, delivery-count: the failed
	// deliveries, 0 unless a dead letter's).
	// Message annotations: the x- headers of any type (tables as maps,
	// arrays as lists), a CC array as x-cc, x-basic-type, and x-exchange
	// and x-routing-key, which replace headers of those names.
	// Properties, 13 fields, when one is set: as 3.10's, with app-id as
	// group-id and a message-id or correlation-id "urn:uuid:..." stored as
	// a 16-byte uuid. Application properties: the other headers but arrays
	// and tables. Then the body.
	StreamMC40
	// StreamMC42 is 4.2's and 4.3's: as StreamMC40, but the header and
	// properties lists omit their trailing nulls
	// (amqp10_framing:encode_described/3) and reply-to becomes the address
	// "/queues/" + the name percent-encoded (mc_amqpl:convert_to/3, which
	// quotes every byte but letters, digits and "-._~").
	StreamMC42
)

// chunkFixed is a one-message chunk's size beyond its message: the chunk
// header (48 bytes), the entry's length (4) and the trailer (44, with a
// 10-character pid).
const chunkFixed = 48 + 4 + trailer

// recorderPrefix calibrates chunk sizes on the library's recordings: the
// recorder declares each queue and exchange with an 8-character prefix
// ("s", six hex digits, "."), which a publish repeats in its exchange name
// or, through the default exchange, in its routing key and CC keys, while the
// simulator replays on the names as written. With it the replayed segments
// hold the recorded bytes; a stream's chunks are then 8 bytes too large
// (more for CC keys) for the names as given.
const recorderPrefix = 8

// defaultFilterSize is the size of a chunk's bloom filter when the stream's
// x-stream-filter-size-bytes does not set it (osiris_bloom's default, 16;
// measured on 4.0.5 and 4.3.6).
const defaultFilterSize = 16

// chunkSize is the size of the chunk a stream writes for m alone, in format
// f, with the names the recorder would have given it (recorderPrefix). The
// bloom filter's bytes are the caller's.
func chunkSize(m *Message, f StreamFormat) int64 {
	n := int64(chunkFixed + messageSize(m, f, recorderPrefix))
	if m.Dead {
		n -= trailer
	}
	return n
}

// trailer is the size of a chunk's trailer with a 10-character pid. A
// dead letter's chunk has none: the dead-lettering queue writes it with
// no writer id (measured on 4.0.5 and 4.3.6).
const trailer = 44

// messageSize is the size of m's AMQP 1.0 sections in format f, with prefix
// added to the name the recorder prefixes: the exchange, or through the
// default exchange the routing key and CC keys.
func messageSize(m *Message, f StreamFormat, prefix int) int {
	ex, rk, cc := len(m.Exchange), len(m.RoutingKey), 0
	if ex > 0 {
		ex += prefix
	} else {
		rk += prefix
		cc = prefix
	}
	p := m.Properties
	if p == nil {
		p = &noProperties
	}
	if f == StreamRecord310 {
		return recordSize(p, len(m.Body), ex, rk)
	}
	return mcSize(m, p, f, ex, rk, cc)
}

// noProperties stands for a message published without properties.
var noProperties protocol.Properties

// AMQP 1.0 encoding sizes (amqp10_binary_generator:generate/1).
const (
	section   = 3   // a section's descriptor: 00 53 code
	short310  = 254 // 3.10's longest str8 and vbin8 ("< ?VAR_1_LIMIT")
	short4    = 255 // 4.x's ("=< ?VAR_1_LIMIT"), and every symbol
	nullField = 1   // a null: 40
	timestamp = 9   // 83 and 8 bytes
	uuidSize  = 17  // 98 and 16 bytes
)

// vsize is the size of a string, symbol or binary of n bytes whose
// 8-bit-length form holds up to short bytes.
func vsize(n, short int) int {
	if n <= short {
		return 2 + n
	}
	return 5 + n
}

// compound is the size of a list, map or array of count elements (a map
// counts keys and values) encoded in s bytes (an array's with its
// constructor).
func compound(count, s int) int {
	if count >= 255 || s+1 >= 256 {
		return 9 + s
	}
	return 3 + s
}

// uintSize is the size of a uint: uint0, smalluint, uint.
func uintSize(v uint64) int {
	switch {
	case v == 0:
		return 1
	case v < 256:
		return 2
	}
	return 5
}

// small reports whether v fits smallint and smalllong (-128..127).
func small(v int64) bool { return v >= -128 && v <= 127 }

// valueSize is the size of a 0-9-1 field value converted to AMQP 1.0
// (from_091/2 of rabbit_msg_record and mc_amqpl): strings as utf8, tables
// as maps with symbol keys, arrays as lists. A decimal has no conversion
// (RabbitMQ crashes); it counts nothing.
func valueSize(v any, short int) int {
	switch x := v.(type) {
	case string:
		return vsize(len(x), short)
	case []byte:
		return vsize(len(x), short)
	case int8, uint8, bool:
		return 2
	case int16, uint16:
		return 3
	case int32:
		if small(int64(x)) {
			return 2
		}
		return 5
	case int:
		if small(int64(x)) {
			return 2
		}
		return 5
	case uint32:
		return uintSize(uint64(x))
	case int64:
		if small(x) {
			return 2
		}
		return 9
	case float32:
		return 5
	case float64, time.Time:
		return 9
	case nil:
		return nullField
	case protocol.Table:
		s := 0
		for k, e := range x {
			s += vsize(len(k), short4) + valueSize(e, short)
		}
		return compound(2*len(x), s)
	case []any:
		if len(x) == 0 {
			return 1 // list0: 45
		}
		s := 0
		for _, e := range x {
			s += valueSize(e, short)
		}
		return compound(len(x), s)
	}
	return 0
}

// recordSize is the size of 3.10's sections (StreamRecord310).
func recordSize(p *protocol.Properties, body, ex, rk int) int {
	// Message annotations, symbol keys.
	ma := 2 + len("x-exchange") + vsize(ex, short310) + 2 + len("x-routing-key") + vsize(rk, short310)
	n := 2
	if p.Expiration != "" {
		ma += 2 + len("x-basic-expiration") + vsize(len(p.Expiration), short310)
		n++
	}
	if p.DeliveryMode != 0 {
		ma += 2 + len("x-basic-delivery-mode") + 2
		n++
	}
	if p.Priority != 0 {
		ma += 2 + len("x-basic-priority") + 2
		n++
	}
	size := section + compound(2*n, ma)

	// Properties: the 13 fields, each null unless set.
	if p.MessageID != "" || p.UserID != "" || p.ReplyTo != "" || p.CorrelationID != "" ||
		p.ContentType != "" || p.ContentEncoding != "" || !p.Timestamp.IsZero() {
		s := 13 * nullField
		s += optional(p.MessageID, short310) + optional(p.UserID, short310) +
			optional(p.ReplyTo, short310) + optional(p.CorrelationID, short310) +
			optional(p.ContentType, short4) + optional(p.ContentEncoding, short4)
		if !p.Timestamp.IsZero() {
			s += timestamp - nullField
		}
		size += section + compound(13, s)
	}

	// Application properties, utf8 keys: headers but arrays and tables.
	ap, n := 0, 0
	for k, v := range p.Headers {
		switch v.(type) {
		case protocol.Table, []any:
			continue
		}
		ap += vsize(len(k), short310) + valueSize(v, short310)
		n++
	}
	if p.Type != "" {
		ap += 2 + len("x-basic-type") + vsize(len(p.Type), short310)
		n++
	}
	if p.AppID != "" {
		ap += 2 + len("x-basic-app-id") + vsize(len(p.AppID), short310)
		n++
	}
	if n > 0 {
		size += section + compound(2*n, ap)
	}
	return size + section + vsize(body, short310)
}

// optional is what a property field of value s adds to a list of nulls.
func optional(s string, short int) int {
	if s == "" {
		return 0
	}
	return vsize(len(s), short) - nullField
}

// mcSize is the size of 4.x's sections (StreamMC40, StreamMC42); cc is the
// recorder's prefix of each CC key and of the queue names of a dead
// letter's deaths.
func mcSize(m *Message, p *protocol.Properties, f StreamFormat, ex, rk, cc int) int {
	// A dead letter keeps its expiration, which amqpsim keeps in its
	// x-death header, and its deaths are an annotation
	// (mc_amqp:protocol_state_message_annotations/2), not that header.
	ttl := p.Expiration
	var deaths []any
	if m.Dead {
		deaths, _ = p.Headers["x-death"].([]any)
		if ttl == "" {
			ttl = originalExpiration(deaths)
		}
	}
	// Header: durable, priority, ttl, first-acquirer, delivery-count
	// (the failed deliveries); the last two always set, so no trailing
	// null to omit.
	h := 4*nullField + uintSize(uint64(m.Failures))
	if p.Priority != 0 {
		h += 2 - nullField
	}
	if ttl != "" {
		h += uintSize(expiration(ttl)) - nullField
	}
	size := section + compound(5, h)

	// Message annotations, symbol keys.
	ma := vsize(len("x-exchange"), short4) + vsize(ex, short4) +
		vsize(len("x-routing-key"), short4) + vsize(rk, short4)
	n := 2
	for k, v := range p.Headers {
		if k == "CC" {
			if keys, ok := v.([]any); ok {
				ma += vsize(len("x-cc"), short4) + ccSize(keys, cc)
				n++
			}
			continue
		}
		if len(k) < 2 || k[:2] != "x-" || k == "x-exchange" || k == "x-routing-key" {
			continue
		}
		if m.Dead && k == "x-death" {
			continue
		}
		ma += vsize(len(k), short4) + valueSize(v, short4)
		if m.Dead && (k == "x-first-death-queue" || k == "x-last-death-queue") {
			ma += prefixed(v, cc)
		}
		n++
	}
	if len(deaths) > 0 {
		ma += vsize(len("x-opt-deaths"), short4) + deathsSize(deaths, cc)
		n++
	}
	if p.Type != "" {
		ma += vsize(len("x-basic-type"), short4) + vsize(len(p.Type), short4)
		n++
	}
	size += section + compound(2*n, ma)

	// Properties: the fields up to the last set one (StreamMC42) or all 13.
	if last := lastProperty(p); last > 0 {
		count := 13
		if f == StreamMC42 {
			count = last
		}
		s := count * nullField
		s += idSize(p.MessageID) + optional(p.UserID, short4) +
			idSize(p.CorrelationID) + optional(p.ContentType, short4) +
			optional(p.ContentEncoding, short4) + optional(p.AppID, short4)
		if p.ReplyTo != "" {
			n := len(p.ReplyTo)
			if f == StreamMC42 {
				n = len("/queues/") + quotedLen(p.ReplyTo)
			}
			s += vsize(n, short4) - nullField
		}
		if !p.Timestamp.IsZero() {
			s += timestamp - nullField
		}
		size += section + compound(count, s)
	}

	// Application properties, utf8 keys: the other headers but arrays
	// and tables.
	ap, n := 0, 0
	for k, v := range p.Headers {
		switch v.(type) {
		case protocol.Table, []any:
			continue
		}
		if len(k) >= 2 && k[:2] == "x-" {
			continue
		}
		ap += vsize(len(k), short4) + valueSize(v, short4)
		n++
	}
	if n > 0 {
		size += section + compound(2*n, ap)
	}
	return size + section + vsize(len(m.Body), short4)
}

// lastProperty is the position (1 to 13) of the last properties field set
// on 4.x, 0 when none is: message-id 1, user-id 2, reply-to 5,
// correlation-id 6, content-type 7, content-encoding 8, creation-time 10,
// group-id (app-id) 11.
func lastProperty(p *protocol.Properties) int {
	switch {
	case p.AppID != "":
		return 11
	case !p.Timestamp.IsZero():
		return 10
	case p.ContentEncoding != "":
		return 8
	case p.ContentType != "":
		return 7
	case p.CorrelationID != "":
		return 6
	case p.ReplyTo != "":
		return 5
	case p.UserID != "":
		return 2
	case p.MessageID != "":
		return 1
	}
	return 0
}

// idSize is what a message-id or correlation-id adds to a null on 4.x: a
// uuid for "urn:uuid:" and a UUID's 36 characters
// (mc_util:urn_string_to_uuid/1), else a string.
func idSize(s string) int {
	if isURNUUID(s) {
		return uuidSize - nullField
	}
	return optional(s, short4)
}

// isURNUUID reports whether s is "urn:uuid:" and the hex groups of a UUID
// (8-4-4-4-12).
func isURNUUID(s string) bool {
	const prefix = "urn:uuid:"
	if len(s) != len(prefix)+36 || s[:len(prefix)] != prefix {
		return false
	}
	for i, c := range s[len(prefix):] {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return false
			}
		}
	}
	return true
}

// ccSize is the size of a CC header's list, each string key longer by
// prefix.
func ccSize(keys []any, prefix int) int {
	if len(keys) == 0 {
		return 1
	}
	s := 0
	for _, k := range keys {
		if str, ok := k.(string); ok {
			s += vsize(len(str)+prefix, short4)
			continue
		}
		s += valueSize(k, short4)
	}
	return compound(len(keys), s)
}

// originalExpiration is the expiration a dead letter was published with,
// which its x-death header keeps.
func originalExpiration(deaths []any) string {
	for _, d := range deaths {
		if t, ok := d.(protocol.Table); ok {
			if s, ok := t["original-expiration"].(string); ok {
				return s
			}
		}
	}
	return ""
}

// prefixed is what the recorder's prefix adds to v, a queue name.
func prefixed(v any, prefix int) int {
	s, ok := v.(string)
	if !ok || prefix == 0 {
		return 0
	}
	return vsize(len(s)+prefix, short4) - vsize(len(s), short4)
}

// deathsSize is the size of the x-opt-deaths annotation for the entries
// of an x-death header: an array of maps (mc_amqp:encode_deaths/1), each
// element framed as a map32 (8 bytes and its content), with symbol keys:
// ttl (a uint, when the message had an expiration), queue, reason (a
// symbol), count (a ulong), first-time and last-time (timestamps),
// exchange, routing-keys (an array of utf8: a constructor, then each key
// with a 4-byte length). prefix is the recorder's: queue names and
// non-empty exchange names get it, and so do routing keys through the
// default exchange.
func deathsSize(deaths []any, prefix int) int {
	s := 1 // the elements' constructor: map32
	for _, d := range deaths {
		t, _ := d.(protocol.Table)
		queue, _ := t["queue"].(string)
		reason, _ := t["reason"].(string)
		exchange, _ := t["exchange"].(string)
		count, _ := protocol.Int(t["count"])
		e := 0
		if x, ok := t["original-expiration"].(string); ok {
			e += vsize(len("ttl"), short4) + uintSize(expiration(x))
		}
		e += vsize(len("queue"), short4) + vsize(len(queue)+prefix, short4)
		e += vsize(len("reason"), short4) + vsize(len(reason), short4)
		e += vsize(len("count"), short4) + ulongSize(uint64(count))
		e += vsize(len("first-time"), short4) + timestamp + vsize(len("last-time"), short4) + timestamp
		xp := 0
		if exchange != "" {
			xp = prefix
		}
		e += vsize(len("exchange"), short4) + vsize(len(exchange)+xp, short4)
		keys, _ := t["routing-keys"].([]any)
		ks := 1 // constructor: str32
		for _, k := range keys {
			str, _ := k.(string)
			ks += 4 + len(str)
			if exchange == "" {
				ks += prefix
			}
		}
		e += vsize(len("routing-keys"), short4) + compound(len(keys), ks)
		s += 8 + e
	}
	return compound(len(deaths), s) // an array's header is a list's
}

// ulongSize is the size of a ulong: ulong0, smallulong, ulong.
func ulongSize(v uint64) int {
	switch {
	case v == 0:
		return 1
	case v < 256:
		return 2
	}
	return 9
}

// expiration reads an expiration the channel has checked (digits), as
// binary_to_integer/1 does.
func expiration(s string) uint64 {
	var v uint64
	for i := 0; i < len(s); i++ {
		v = v*10 + uint64(s[i]-'0')
	}
	return v
}

// quotedLen is the length of s percent-encoded by uri_string:quote/1: every
// byte but the unreserved ones (letters, digits, "-", ".", "_", "~") takes
// three.
func quotedLen(s string) int {
	n := len(s)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			c == '-' || c == '.' || c == '_' || c == '~') {
			n += 2
		}
	}
	return n
}
