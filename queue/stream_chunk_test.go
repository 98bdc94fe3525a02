package queue

import (
	"strings"
	"testing"
	"time"

	"github.com/amqpsim/amqpsim/protocol"
)

// chunkCase is one message published alone to a new stream, and the size of
// the chunk each release wrote for it.
type chunkCase struct {
	name string
	// exchange is "" for the default exchange, with the stream's name (11
	// characters) as routing key; else a fanout exchange bound to the
	// stream, named with 11 characters and exchange, and key the routing
	// key.
	exchange string
	key      string
	body     int // bytes
	props    protocol.Properties
	// sizes are the chunk's bytes on 3.10.8, 4.0.5 and 4.3.6: the growth
	// of the segment file, less the trailer's bytes beyond those of a
	// 10-character channel pid (44).
	sizes [3]int64
}

// TestStreamChunkSizes checks chunkSize against the chunks RabbitMQ wrote:
// each case was published with amqp091-go to a stream of its own
// (default x-stream-filter-size-bytes) and the chunk read from the segment
// file, on 3.10.8, 4.0.5 and 4.3.6 on 2026-12-06. The numbers are for a
// channel pid of 10 characters ("<0.1234.0>"): the trailer holds it as
// text (chunkFixed), and the brokers' pids had 10 or 11 when measured, so
// each chunk's trailer was read from its header and the size taken with a
// trailer of 44 bytes.
func TestStreamChunkSizes(t *testing.T) {
	formats := [3]StreamFormat{StreamRecord310, StreamMC40, StreamMC42}
	for _, c := range chunkCases {
		m := &Message{RoutingKey: strings.Repeat("q", 11), Body: make([]byte, c.body)}
		if c.exchange != "" {
			m.Exchange, m.RoutingKey = strings.Repeat("x", 11)+c.exchange, c.key
		}
		if p := c.props; p.Headers != nil || p.ContentType != "" || p.ContentEncoding != "" || p.DeliveryMode != 0 ||
			p.Priority != 0 || p.CorrelationID != "" || p.ReplyTo != "" || p.Expiration != "" || p.MessageID != "" ||
			!p.Timestamp.IsZero() || p.Type != "" || p.UserID != "" || p.AppID != "" {
			m.Properties = &p
		}
		for i, f := range formats {
			got := chunkFixed + int64(messageSize(m, f, 0))
			if _, ok := c.props.Headers["x-stream-filter-value"].(string); ok && f != StreamRecord310 {
				got += defaultFilterSize
			}
			if got != c.sizes[i] {
				t.Errorf("%s, format %d: %d bytes, measured %d", c.name, f, got, c.sizes[i])
			}
		}
	}
}

var (
	// Values of the measured messages.
	s200 = strings.Repeat("a", 200)
	s254 = strings.Repeat("a", 254)
	s255 = strings.Repeat("a", 255)
	ts   = time.Unix(1700000000, 0)
	uuid = "urn:uuid:6e8bc430-9c3a-11d9-9669-0800200c9a66"
)

// hdr is properties with one header.
func hdr(k string, v any) protocol.Properties {
	return protocol.Properties{Headers: protocol.Table{k: v}}
}

// chunkCases were measured on RabbitMQ 3.10.8, 4.0.5 and 4.3.6 on
// 2026-12-06 (see TestStreamChunkSizes).
var chunkCases = []chunkCase{
	{name: "plain", body: 2, sizes: [3]int64{151, 162, 162}},
	{name: "empty body", body: 0, sizes: [3]int64{149, 160, 160}},
	{name: "body 253", body: 253, sizes: [3]int64{402, 413, 413}},
	{name: "body 254", body: 254, sizes: [3]int64{403, 414, 414}},
	{name: "body 255", body: 255, sizes: [3]int64{407, 415, 415}},
	{name: "body 256", body: 256, sizes: [3]int64{408, 419, 419}},
	{name: "body 1000", body: 1000, sizes: [3]int64{1152, 1163, 1163}},
	{name: "content-type", body: 2, props: protocol.Properties{ContentType: "t"}, sizes: [3]int64{172, 183, 177}},
	{name: "content-type 255", body: 2, props: protocol.Properties{ContentType: s255}, sizes: [3]int64{432, 443, 437}},
	{name: "content-encoding", body: 2, props: protocol.Properties{ContentEncoding: "gzip"}, sizes: [3]int64{175, 186, 181}},
	{name: "content-encoding 255", body: 2, props: protocol.Properties{ContentEncoding: s255}, sizes: [3]int64{432, 443, 438}},
	{name: "delivery-mode 1", body: 2, props: protocol.Properties{DeliveryMode: 1}, sizes: [3]int64{176, 162, 162}},
	{name: "delivery-mode 2", body: 2, props: protocol.Properties{DeliveryMode: 2}, sizes: [3]int64{176, 162, 162}},
	{name: "priority 5", body: 2, props: protocol.Properties{Priority: 5}, sizes: [3]int64{171, 163, 163}},
	{name: "priority 255", body: 2, props: protocol.Properties{Priority: 255}, sizes: [3]int64{171, 163, 163}},
	{name: "correlation-id", body: 2, props: protocol.Properties{CorrelationID: "corr"}, sizes: [3]int64{175, 186, 179}},
	{name: "correlation-id 254", body: 2, props: protocol.Properties{CorrelationID: s254}, sizes: [3]int64{431, 442, 435}},
	{name: "correlation-id 255", body: 2, props: protocol.Properties{CorrelationID: s255}, sizes: [3]int64{435, 443, 436}},
	{name: "correlation-id uuid", body: 2, props: protocol.Properties{CorrelationID: uuid}, sizes: [3]int64{216, 197, 190}},
	{name: "reply-to", body: 2, props: protocol.Properties{ReplyTo: "rt"}, sizes: [3]int64{173, 184, 184}},
	{name: "reply-to escaped", body: 2, props: protocol.Properties{ReplyTo: "a/b c~d%"}, sizes: [3]int64{179, 190, 196}},
	{name: "reply-to 255", body: 2, props: protocol.Properties{ReplyTo: s255}, sizes: [3]int64{435, 443, 446}},
	{name: "reply-to 250", body: 2, props: protocol.Properties{ReplyTo: s255[:250]}, sizes: [3]int64{427, 438, 441}},
	{name: "expiration 0", body: 2, props: protocol.Properties{Expiration: "0"}, sizes: [3]int64{174, 162, 162}},
	{name: "expiration 255", body: 2, props: protocol.Properties{Expiration: "255"}, sizes: [3]int64{176, 163, 163}},
	{name: "expiration 256", body: 2, props: protocol.Properties{Expiration: "256"}, sizes: [3]int64{176, 166, 166}},
	{name: "expiration 6000", body: 2, props: protocol.Properties{Expiration: "6000"}, sizes: [3]int64{177, 166, 166}},
	{name: "message-id", body: 2, props: protocol.Properties{MessageID: "id1"}, sizes: [3]int64{174, 185, 173}},
	{name: "message-id 255", body: 2, props: protocol.Properties{MessageID: s255}, sizes: [3]int64{435, 443, 431}},
	{name: "message-id uuid", body: 2, props: protocol.Properties{MessageID: uuid}, sizes: [3]int64{216, 197, 185}},
	{name: "timestamp", body: 2, props: protocol.Properties{Timestamp: ts}, sizes: [3]int64{178, 189, 186}},
	{name: "type", body: 2, props: protocol.Properties{Type: "ty"}, sizes: [3]int64{175, 180, 180}},
	{name: "type 255", body: 2, props: protocol.Properties{Type: s255}, sizes: [3]int64{437, 439, 439}},
	{name: "user-id", body: 2, props: protocol.Properties{UserID: "guest"}, sizes: [3]int64{176, 187, 176}},
	{name: "app-id", body: 2, props: protocol.Properties{AppID: "app"}, sizes: [3]int64{178, 185, 183}},
	{name: "app-id 255", body: 2, props: protocol.Properties{AppID: s255}, sizes: [3]int64{439, 443, 441}},
	{name: "header string", body: 2, props: hdr("h", "v"), sizes: [3]int64{163, 174, 174}},
	{name: "header string 254", body: 2, props: hdr("h", s254), sizes: [3]int64{422, 433, 433}},
	{name: "header string 255", body: 2, props: hdr("h", s255), sizes: [3]int64{426, 434, 434}},
	{name: "header string 300", body: 2, props: hdr("h", strings.Repeat("b", 300)), sizes: [3]int64{471, 482, 482}},
	{name: "header key 255", body: 2, props: hdr(s255, "v"), sizes: [3]int64{426, 434, 434}},
	{name: "header int8", body: 2, props: hdr("h", int8(-3)), sizes: [3]int64{162, 173, 173}},
	{name: "header uint8", body: 2, props: hdr("h", uint8(200)), sizes: [3]int64{162, 173, 173}},
	{name: "header int16", body: 2, props: hdr("h", int16(-300)), sizes: [3]int64{163, 174, 174}},
	{name: "header uint16", body: 2, props: hdr("h", uint16(60000)), sizes: [3]int64{163, 174, 174}},
	{name: "header int32 small", body: 2, props: hdr("h", int32(5)), sizes: [3]int64{162, 173, 173}},
	{name: "header int32 big", body: 2, props: hdr("h", int32(100000)), sizes: [3]int64{165, 176, 176}},
	{name: "header int32 -128", body: 2, props: hdr("h", int32(-128)), sizes: [3]int64{162, 173, 173}},
	{name: "header int32 128", body: 2, props: hdr("h", int32(128)), sizes: [3]int64{165, 176, 176}},
	{name: "header int64 small", body: 2, props: hdr("h", int64(-5)), sizes: [3]int64{162, 173, 173}},
	{name: "header int64 big", body: 2, props: hdr("h", int64(1)<<40), sizes: [3]int64{169, 180, 180}},
	{name: "header uint32 0", body: 2, props: hdr("h", uint32(0)), sizes: [3]int64{161, 172, 172}},
	{name: "header uint32 200", body: 2, props: hdr("h", uint32(200)), sizes: [3]int64{162, 173, 173}},
	{name: "header uint32 big", body: 2, props: hdr("h", uint32(100000)), sizes: [3]int64{165, 176, 176}},
	{name: "header float", body: 2, props: hdr("h", float32(1.5)), sizes: [3]int64{165, 176, 176}},
	{name: "header double", body: 2, props: hdr("h", 2.5), sizes: [3]int64{169, 180, 180}},
	{name: "header bool", body: 2, props: hdr("h", true), sizes: [3]int64{162, 173, 173}},
	{name: "header timestamp", body: 2, props: hdr("h", ts), sizes: [3]int64{169, 180, 180}},
	{name: "header bytes", body: 2, props: hdr("h", []byte("xyz")), sizes: [3]int64{165, 176, 176}},
	{name: "header bytes 300", body: 2, props: hdr("h", make([]byte, 300)), sizes: [3]int64{471, 482, 482}},
	{name: "header void", body: 2, props: hdr("h", nil), sizes: [3]int64{161, 172, 172}},
	{name: "header table", body: 2, props: hdr("h", protocol.Table{"a": int32(1)}), sizes: [3]int64{151, 162, 162}},
	{name: "header array", body: 2, props: hdr("h", []any{"x"}), sizes: [3]int64{151, 162, 162}},
	{name: "header x-string", body: 2, props: hdr("x-h", "v"), sizes: [3]int64{165, 170, 170}},
	{name: "header x-int64 big", body: 2, props: hdr("x-h", int64(1)<<40), sizes: [3]int64{171, 176, 176}},
	{name: "header x-void", body: 2, props: hdr("x-h", nil), sizes: [3]int64{163, 168, 168}},
	{name: "header x-table", body: 2, props: hdr("x-h", protocol.Table{"a": int32(1), "bb": "s"}), sizes: [3]int64{151, 182, 182}},
	{name: "header x-empty-table", body: 2, props: hdr("x-h", protocol.Table{}), sizes: [3]int64{151, 170, 170}},
	{name: "header x-array", body: 2, props: hdr("x-h", []any{"x", int32(7), true}), sizes: [3]int64{151, 177, 177}},
	{name: "header x-empty-array", body: 2, props: hdr("x-h", []any{}), sizes: [3]int64{151, 168, 168}},
	{name: "header x-nested", body: 2, props: hdr("x-h", []any{protocol.Table{"k": []any{int64(1)}}, []any{}}), sizes: [3]int64{151, 182, 182}},
	{name: "header x-array 300", body: 2, props: hdr("x-h", []any{strings.Repeat("c", 300)}), sizes: [3]int64{151, 487, 487}},
	{name: "header CC", body: 2, props: hdr("CC", []any{"other-queue"}), sizes: [3]int64{151, 184, 184}},
	{name: "header CC two", body: 2, props: hdr("CC", []any{"other-queue", "q2"}), sizes: [3]int64{151, 188, 188}},
	{name: "header BCC", body: 2, props: hdr("BCC", []any{"other-queue"}), sizes: [3]int64{151, 162, 162}},
	{name: "header x-exchange", body: 2, props: hdr("x-exchange", "abc"), sizes: [3]int64{174, 162, 162}},
	{name: "header x-routing-key", body: 2, props: hdr("x-routing-key", "abc"), sizes: [3]int64{177, 162, 162}},
	{name: "header x-basic-type", body: 2, props: hdr("x-basic-type", "abc"), sizes: [3]int64{176, 181, 181}},
	{name: "header x-stream-filter-value", body: 2, props: hdr("x-stream-filter-value", "f"), sizes: [3]int64{183, 204, 204}},
	{name: "headers map32", body: 2, props: protocol.Properties{Headers: protocol.Table{"h1": s200, "h2": "vv"}}, sizes: [3]int64{371, 382, 382}},
	{name: "headers x map32", body: 2, props: protocol.Properties{Headers: protocol.Table{"x-h1": s200, "x-h2": "vv"}}, sizes: [3]int64{375, 386, 386}},
	{name: "properties list32", body: 2, props: protocol.Properties{ContentType: s200, MessageID: "0123456789012345678901234567890123456789012345678901234567"}, sizes: [3]int64{436, 447, 441}},
	{name: "properties 254", body: 2, props: protocol.Properties{ContentType: s200, MessageID: "01234567890123456789012345678901234567890123456"}, sizes: [3]int64{425, 436, 430}},
	{name: "named exchange", exchange: "ex", key: "k", body: 2, sizes: [3]int64{154, 165, 165}},
	{name: "exchange 255", exchange: s255[:244], key: "k", body: 2, sizes: [3]int64{405, 413, 413}},
	{name: "exchange 254", exchange: s255[:243], key: "k", body: 2, sizes: [3]int64{401, 412, 412}},
	{name: "routing key 200", exchange: "ex", key: s200, body: 2, sizes: [3]int64{353, 364, 364}},
	{name: "routing key 255", exchange: "ex", key: s255, body: 2, sizes: [3]int64{417, 425, 425}},
	{name: "annotations map32", exchange: "ex", key: s200, body: 2, props: protocol.Properties{Headers: protocol.Table{"x-h": s200}}, sizes: [3]int64{566, 577, 577}},
	{name: "all", body: 2, props: protocol.Properties{ContentType: "ct", ContentEncoding: "ce", DeliveryMode: 2, Priority: 3, CorrelationID: "ci", ReplyTo: "rt", Expiration: "6000", MessageID: "mi", Timestamp: ts, Type: "ty", UserID: "guest", AppID: "ai", Headers: protocol.Table{"h": "v", "x-h": int32(1)}}, sizes: [3]int64{327, 255, 261}},
	{name: "seed m1", body: 2, props: protocol.Properties{Priority: 5}, sizes: [3]int64{171, 163, 163}},
	{name: "seed m3", body: 2, props: protocol.Properties{DeliveryMode: 2}, sizes: [3]int64{176, 162, 162}},
	{name: "seed m4", body: 2, props: protocol.Properties{DeliveryMode: 2, Priority: 7, Expiration: "6000", Headers: protocol.Table{"CC": []any{"s123456.q1"}}}, sizes: [3]int64{222, 188, 188}},
	{name: "seed m7", body: 2, props: protocol.Properties{DeliveryMode: 2, ContentType: "application/json", CorrelationID: "corr", MessageID: "id1"}, sizes: [3]int64{221, 207, 201}},
}

// TestStreamDeadLetterChunkSizes checks the chunks of dead letters, as
// amqpsim's dead-lettering makes them, against those RabbitMQ wrote: a
// message "m1" published to a classic queue (11 characters, dead-letter
// exchange "" and routing key the stream's, 11 characters too), then
// rejected with basic.reject, or published with expiration 10 and
// expired; measured on 4.0.5 and 4.3.6 on 2026-12-06 (3.10 drops dead
// letters to a stream). The chunk has no trailer; 4.3 counts the reject
// as a failed delivery in the header.
func TestStreamDeadLetterChunkSizes(t *testing.T) {
	q, s := strings.Repeat("c", 11), strings.Repeat("s", 11)
	for _, c := range []struct {
		name     string
		f        StreamFormat
		reason   string
		failures int64
		want     int64
	}{
		{"4.0 rejected", StreamMC40, "rejected", 0, 464},
		{"4.0 expired", StreamMC40, "expired", 0, 469},
		{"4.3 rejected", StreamMC42, "rejected", 1, 465},
		{"4.3 expired", StreamMC42, "expired", 0, 469},
	} {
		death := protocol.Table{"count": int64(1), "exchange": "", "queue": q, "reason": c.reason,
			"routing-keys": []any{q}, "time": ts}
		if c.reason == "expired" {
			death["original-expiration"] = "10"
		}
		m := &Message{RoutingKey: s, Body: []byte("m1"), Dead: true, Failures: c.failures,
			Properties: &protocol.Properties{Headers: protocol.Table{"x-death": []any{death},
				"x-first-death-exchange": "", "x-first-death-queue": q, "x-first-death-reason": c.reason,
				"x-last-death-exchange": "", "x-last-death-queue": q, "x-last-death-reason": c.reason}}}
		if got := chunkFixed - trailer + int64(messageSize(m, c.f, 0)); got != c.want {
			t.Errorf("%s: %d bytes, measured %d", c.name, got, c.want)
		}
	}
}

// chunkSize runs at every stream publish: it allocates nothing, whatever
// the message holds.
func TestStreamChunkSizeAllocatesNothing(t *testing.T) {
	m := &Message{RoutingKey: "q", Body: []byte("m1"), Properties: &protocol.Properties{
		ContentType: "t", ReplyTo: "a/b", Expiration: "6000", MessageID: uuid, Timestamp: ts, AppID: "a",
		Headers: protocol.Table{"s": "v", "i": int32(1), "x-t": protocol.Table{"a": []any{int64(1)}}, "CC": []any{"q"}}}}
	for _, f := range []StreamFormat{StreamRecord310, StreamMC40, StreamMC42} {
		if n := testing.AllocsPerRun(100, func() { chunkSize(m, f) }); n != 0 {
			t.Errorf("format %d: %v allocations", f, n)
		}
	}
}
