package scenarios

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/wire"
)

// frame builds one AMQP frame.
func frame(typ uint8, ch uint16, payload []byte) []byte {
	b := []byte{typ, 0, 0, 0, 0, 0, 0}
	binary.BigEndian.PutUint16(b[1:], ch)
	binary.BigEndian.PutUint32(b[3:], uint32(len(payload)))
	return append(append(b, payload...), 0xCE)
}

type fields []byte

func (f fields) u8(v uint8) fields   { return append(f, v) }
func (f fields) u16(v uint16) fields { return binary.BigEndian.AppendUint16(f, v) }
func (f fields) u64(v uint64) fields { return binary.BigEndian.AppendUint64(f, v) }
func (f fields) str(s string) fields { return append(append(f, byte(len(s))), s...) }

func method(ch, class, id uint16, args fields) []byte {
	return frame(1, ch, append(fields(nil).u16(class).u16(id), args...))
}

func header(ch uint16, size uint64) []byte {
	return frame(2, ch, fields(nil).u16(60).u16(0).u64(size).u16(0))
}

// The tap decodes what a broker sends, however the bytes are split into
// reads, a delivery's headers included.
func TestTapDecodesFrames(t *testing.T) {
	var stream []byte
	add := func(b ...[]byte) {
		for _, x := range b {
			stream = append(stream, x...)
		}
	}
	add(method(2, 20, 11, fields(nil).u8(0).u8(0).u8(0).u8(0))) // channel.open-ok
	add(frame(8, 0, nil))                                       // heartbeat
	death := protocol.Table{"x-death": []any{protocol.Table{"count": int64(1), "reason": "expired", "time": time.Unix(1700000000, 0).UTC()}}}
	withHeaders, err := wire.AppendHeader(nil, &wire.Header{BodySize: 11, Properties: protocol.Properties{Headers: death}})
	if err != nil {
		t.Fatal(err)
	}
	add(method(1, 60, 60, fields(nil).str("A").u64(7).u8(1).str("").str("q")), frame(2, 1, withHeaders),
		frame(3, 1, []byte("hello")), frame(3, 1, []byte(" world")))
	add(method(1, 60, 71, fields(nil).u64(8).u8(0).str("").str("q").u16(0).u16(0)), header(1, 2), frame(3, 1, []byte("g1")))
	add(method(1, 60, 50, fields(nil).u16(312).str("NO_ROUTE").str("x").str("k")), header(1, 0))
	add(method(1, 60, 80, fields(nil).u64(3).u8(1)))
	add(method(1, 60, 120, fields(nil).u64(4).u8(2)))
	add(method(1, 60, 30, fields(nil).str("B").u8(1)))
	add(method(1, 20, 40, fields(nil).u16(406).str("PRECONDITION_FAILED - unknown delivery tag 9").u16(60).u16(80)))
	add(method(0, 10, 50, fields(nil).u16(530).str("NOT_ALLOWED - x").u16(60).u16(20)))
	want := []event{
		{kind: evDeliver, ch: "1", conn: "c", ctag: "A", tag: 7, redelivered: true, key: "q", body: "hello world", headers: death},
		{kind: evReturn, ch: "1", conn: "c", code: 312, text: "NO_ROUTE", exchange: "x", key: "k"},
		{kind: evConfirm, ch: "1", conn: "c", tag: 3, multiple: true},
		{kind: evConfirm, ch: "1", conn: "c", tag: 4, nack: true},
		{kind: evCancel, ch: "1", conn: "c", ctag: "B"},
		{kind: evChannelClose, ch: "1", conn: "c", code: 406, text: "PRECONDITION_FAILED - unknown delivery tag 9", method: "basic.ack"},
		{kind: evConnClose, ch: "0", conn: "c", code: 530, text: "NOT_ALLOWED - x", method: "basic.consume"},
	}
	rapid.Check(t, func(rt *rapid.T) {
		var got []event
		activity := 0
		tp := newTap("c", func(e event, ch uint16) {
			e.ch = string(rune('0' + ch))
			got = append(got, e)
		}, func(time.Time) { activity++ })
		rest := stream
		for len(rest) > 0 {
			n := rapid.IntRange(1, len(rest)).Draw(rt, "n")
			tp.feed(rest[:n])
			rest = rest[n:]
		}
		if d := cmp.Diff(want, got, cmp.AllowUnexported(event{})); d != "" {
			rt.Fatalf("events (-want +got):\n%s", d)
		}
		if tp.opened() != 2 || activity != 15 {
			rt.Fatalf("opened %d, activity %d", tp.opened(), activity)
		}
	})
}

// Queue arguments name the dead-letter exchange, and through the default
// exchange a queue: they get the run's prefix as steps' names do.
func TestQueueArgsPrefixDeadLetterNames(t *testing.T) {
	d := &amqpDriver{prefix: "s1."}
	for _, c := range []struct{ in, want protocol.Table }{
		{protocol.Table{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": "dlq"},
			protocol.Table{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": "s1.dlq"}},
		{protocol.Table{"x-dead-letter-exchange": "dlx", "x-dead-letter-routing-key": "k"},
			protocol.Table{"x-dead-letter-exchange": "s1.dlx", "x-dead-letter-routing-key": "k"}},
		{protocol.Table{"x-dead-letter-exchange": "amq.fanout", "x-max-length": int32(1)},
			protocol.Table{"x-dead-letter-exchange": "amq.fanout", "x-max-length": int32(1)}},
		{protocol.Table{"x-dead-letter-routing-key": "dlq"}, protocol.Table{"x-dead-letter-routing-key": "dlq"}},
	} {
		if got := protocol.Table(d.queueArgs(c.in)); !cmp.Equal(got, c.want) {
			t.Errorf("queueArgs(%v) = %v, want %v", c.in, got, c.want)
		}
	}
	in := protocol.Table{"x-death": []any{protocol.Table{"queue": "s1.work", "routing-keys": []any{"s1.work"}}}}
	want := protocol.Table{"x-death": []any{protocol.Table{"queue": "work", "routing-keys": []any{"work"}}}}
	if got := d.headers(in); !cmp.Equal(got, want) {
		t.Errorf("headers(%v) = %v, want %v", in, got, want)
	}
}
