package wire

import (
	"math"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/amqpsim/amqpsim/protocol"
)

// headerFixed is a content header's class id, weight and body size, before
// the property flags.
const headerFixed = 2 + 2 + 8

// genShortstr draws a string AMQP can carry as a shortstr, "" often.
func genShortstr(t *rapid.T, label string) string {
	if rapid.IntRange(0, 2).Draw(t, label+"-absent") == 0 {
		return ""
	}
	return rapid.StringOfN(rapid.Rune(), 0, 255, 255).Draw(t, label)
}

// genField draws a field value of every Go type protocol.Table documents,
// tables and arrays nested up to depth.
func genField(t *rapid.T, depth int) any {
	kinds := 17
	if depth > 0 {
		kinds = 19
	}
	switch rapid.IntRange(0, kinds-1).Draw(t, "type") {
	case 0:
		return rapid.Bool().Draw(t, "bool")
	case 1:
		return rapid.Int8().Draw(t, "byte")
	case 2:
		return rapid.Uint8().Draw(t, "ubyte")
	case 3:
		return rapid.Int16().Draw(t, "short")
	case 4:
		return rapid.Uint16().Draw(t, "ushort")
	case 5:
		return rapid.Int32().Draw(t, "int")
	case 6:
		return rapid.IntRange(math.MinInt32, math.MaxInt32).Draw(t, "go-int")
	case 7:
		return rapid.Uint32().Draw(t, "uint")
	case 8:
		return rapid.Int64().Draw(t, "long")
	case 9:
		return rapid.Float32().Draw(t, "float")
	case 10:
		return rapid.Float64().Draw(t, "double")
	case 11:
		return protocol.Decimal{Scale: rapid.Uint8().Draw(t, "scale"), Value: rapid.Int32().Draw(t, "value")}
	case 12:
		return rapid.String().Draw(t, "str")
	case 13:
		return rapid.SliceOf(rapid.Byte()).Draw(t, "binary")
	case 14:
		return time.Unix(rapid.Int64Range(-1<<40, 1<<40).Draw(t, "unix"), 0).UTC()
	case 15, 16:
		return nil
	case 17:
		out := make([]any, rapid.IntRange(0, 4).Draw(t, "len"))
		for i := range out {
			out[i] = genField(t, depth-1)
		}
		return out
	}
	return genTable(t, depth-1)
}

// genTable draws a table of up to four entries, values nested up to depth.
func genTable(t *rapid.T, depth int) protocol.Table {
	out := protocol.Table{}
	for range rapid.IntRange(0, 4).Draw(t, "entries") {
		out[rapid.StringOfN(rapid.Rune(), 0, 255, 255).Draw(t, "key")] = genField(t, depth)
	}
	return out
}

// Properties.EncodedSize is the length of what AppendHeader writes after
// the body size, for any properties: every property present or absent,
// headers of every field type nested in tables and arrays, an empty table
// and none.
func TestPropertiesEncodedSizeIsTheEncoding(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := protocol.Properties{
			ContentType: genShortstr(t, "content-type"), ContentEncoding: genShortstr(t, "content-encoding"),
			DeliveryMode: rapid.Uint8().Draw(t, "delivery-mode"), Priority: rapid.Uint8().Draw(t, "priority"),
			CorrelationID: genShortstr(t, "correlation-id"), ReplyTo: genShortstr(t, "reply-to"),
			Expiration: genShortstr(t, "expiration"), MessageID: genShortstr(t, "message-id"),
			Type: genShortstr(t, "type"), UserID: genShortstr(t, "user-id"), AppID: genShortstr(t, "app-id"),
			ClusterID: genShortstr(t, "cluster-id"),
		}
		if rapid.Bool().Draw(t, "timestamp") {
			p.Timestamp = time.Unix(rapid.Int64Range(-1<<40, 1<<40).Draw(t, "unix"), 0).UTC()
		}
		if rapid.Bool().Draw(t, "headers") {
			p.Headers = genTable(t, 3)
		}
		b, err := AppendHeader(nil, &Header{BodySize: rapid.Uint64().Draw(t, "body-size"), Properties: p})
		if err != nil {
			t.Fatalf("AppendHeader: %v", err)
		}
		if got, want := p.EncodedSize(), len(b)-headerFixed; got != want {
			t.Fatalf("EncodedSize() = %d, AppendHeader wrote %d bytes of properties", got, want)
		}
	})
	var none *protocol.Properties
	if got := none.EncodedSize(); got != 2 {
		t.Errorf("nil properties: EncodedSize() = %d, want the 2 bytes of flags", got)
	}
}
