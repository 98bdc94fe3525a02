package wire

import (
	"io"
	"testing"
	"time"

	"github.com/amqpsim/amqpsim/protocol"
)

var (
	benchBody    = make([]byte, 128)
	benchDeliver = &BasicDeliver{ConsumerTag: "amq.ctag-0123456789", DeliveryTag: 123456, Exchange: "orders", RoutingKey: "order.created"}
	benchProps   = protocol.Properties{ContentType: "application/json", DeliveryMode: 2,
		MessageID: "msg-0001", Timestamp: time.Unix(1700000000, 0)}
)

// BenchmarkWriteDeliver encodes basic.deliver, its content header and a
// 128-byte body through a FrameWriter (one Write per message).
func BenchmarkWriteDeliver(b *testing.B) {
	fw := NewFrameWriter(io.Discard)
	fw.SetFrameMax(131072)
	b.ReportAllocs()
	for b.Loop() {
		if err := fw.WriteContent(1, benchDeliver, &benchProps, benchBody); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWriteDeliverHeaders is BenchmarkWriteDeliver with two headers.
func BenchmarkWriteDeliverHeaders(b *testing.B) {
	fw := NewFrameWriter(io.Discard)
	fw.SetFrameMax(131072)
	props := benchProps
	props.Headers = protocol.Table{"x-first-death-queue": "q", "x-retries": int32(3)}
	b.ReportAllocs()
	for b.Loop() {
		if err := fw.WriteContent(1, benchDeliver, &props, benchBody); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendDeliver builds the same frames with the Append functions
// into a reused buffer.
func BenchmarkAppendDeliver(b *testing.B) {
	buf := make([]byte, 0, 1024)
	h := Header{BodySize: uint64(len(benchBody)), Properties: benchProps}
	b.ReportAllocs()
	for b.Loop() {
		var err error
		buf, err = AppendMethodFrame(buf[:0], 1, benchDeliver)
		if err != nil {
			b.Fatal(err)
		}
		if buf, err = AppendHeaderFrame(buf, 1, &h); err != nil {
			b.Fatal(err)
		}
		buf = AppendBodyFrames(buf, 1, benchBody, 131072)
	}
}

// BenchmarkDecodeAck decodes a basic.ack method frame payload.
func BenchmarkDecodeAck(b *testing.B) {
	payload, _ := AppendMethod(nil, &BasicAck{DeliveryTag: 987654, Multiple: true})
	b.ReportAllocs()
	for b.Loop() {
		m, err := DecodeMethod(payload)
		if err != nil || m.(*BasicAck).DeliveryTag != 987654 {
			b.Fatal(err)
		}
	}
}

// loopReader returns data over and over.
type loopReader struct {
	data []byte
	off  int
}

func (r *loopReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], r.data[r.off:])
		n += c
		r.off = (r.off + c) % len(r.data)
	}
	return n, nil
}

// BenchmarkReadAck reads a basic.ack frame from a stream and decodes it.
func BenchmarkReadAck(b *testing.B) {
	frame, _ := AppendMethodFrame(nil, 1, &BasicAck{DeliveryTag: 987654})
	fr := NewFrameReader(&loopReader{data: frame})
	b.ReportAllocs()
	for b.Loop() {
		f, err := fr.ReadFrame()
		if err != nil {
			b.Fatal(err)
		}
		if _, err := DecodeMethod(f.Payload); err != nil {
			b.Fatal(err)
		}
	}
}
