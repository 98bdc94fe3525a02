package wire

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/amqpsim/amqpsim/protocol"
)

func TestReadProtocolHeader(t *testing.T) {
	for _, tc := range []struct {
		in     string
		target error
	}{
		{"AMQP\x00\x00\x09\x01", nil},
		{"AMQP\x00\x00\x09\x01\x01", nil}, // the rest is for ReadFrame
		{"AMQP\x01\x01\x00\x09", ErrProtocolHeader},
		{"GET / HTTP/1.1\r\n", ErrProtocolHeader},
		{"AMQP", io.ErrUnexpectedEOF},
		{"", io.EOF},
	} {
		if err := NewFrameReader(strings.NewReader(tc.in)).ReadProtocolHeader(); !errors.Is(err, tc.target) {
			t.Errorf("%q: %v, want %v", tc.in, err, tc.target)
		}
	}
}

// stream writes frames with a FrameWriter and returns the bytes.
func stream(t *testing.T, frameMax uint32, write func(fw *FrameWriter) error) []byte {
	t.Helper()
	var buf bytes.Buffer
	fw := NewFrameWriter(&buf)
	fw.SetFrameMax(frameMax)
	if err := write(fw); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// readAll reads frames from b until ReadFrame fails. Each frame takes at
// least FrameOverhead bytes, so more frames than that allows fail the
// test (a reader that returns frames without consuming them would loop).
func readAll(t *testing.T, b []byte, frameMax uint32) ([]Frame, error) {
	t.Helper()
	fr := NewFrameReader(bytes.NewReader(b))
	fr.SetFrameMax(frameMax)
	var fs []Frame
	for range len(b)/FrameOverhead + 1 {
		f, err := fr.ReadFrame()
		if err != nil {
			return fs, err
		}
		f.Payload = append([]byte{}, f.Payload...) // valid only until the next ReadFrame
		fs = append(fs, f)
	}
	t.Fatalf("read %d frames from %d bytes", len(fs), len(b))
	return nil, nil
}

func TestFrameWriterReader(t *testing.T) {
	body := bytes.Repeat([]byte{0xCE}, 5000)
	props := allProperties()
	deliver := &BasicDeliver{ConsumerTag: "ctag", DeliveryTag: 1, Exchange: "ex", RoutingKey: "rk"}
	b := stream(t, 4096, func(fw *FrameWriter) error {
		return errors.Join(
			fw.WriteMethod(3, &ChannelOpenOk{}),
			fw.WriteContent(3, deliver, &props, body),
			fw.WriteContent(4, &BasicGetOk{DeliveryTag: 2}, nil, nil),
			fw.WriteHeartbeat(),
		)
	})
	fs, err := readAll(t, b, 4096)
	if err != io.EOF {
		t.Fatalf("ReadFrame error %v, want io.EOF", err)
	}
	var types []FrameType
	for _, f := range fs {
		types = append(types, f.Type)
	}
	want := []FrameType{FrameMethod, FrameMethod, FrameHeader, FrameBody, FrameBody, FrameMethod, FrameHeader, FrameHeartbeat}
	if !cmp.Equal(types, want) {
		t.Fatalf("frame types %v, want %v", types, want)
	}
	if m, err := DecodeMethod(fs[1].Payload); err != nil || !cmp.Equal(m, Method(deliver)) || fs[1].Channel != 3 {
		t.Errorf("deliver: %v %v", m, err)
	}
	if h, err := DecodeHeader(fs[2].Payload); err != nil || h.BodySize != 5000 || !cmp.Equal(h.Properties, props) {
		t.Errorf("header: %+v %v", h, err)
	}
	if len(fs[3].Payload) != 4088 || !bytes.Equal(append(fs[3].Payload, fs[4].Payload...), body) {
		t.Errorf("body frames of %d and %d bytes", len(fs[3].Payload), len(fs[4].Payload))
	}
	if h, err := DecodeHeader(fs[6].Payload); err != nil || h.BodySize != 0 || fs[6].Channel != 4 {
		t.Errorf("empty content header: %+v %v", h, err)
	}
	if hb := b[len(b)-8:]; !bytes.Equal(hb, []byte{8, 0, 0, 0, 0, 0, 0, 0xCE}) {
		t.Errorf("heartbeat % x", hb)
	}
	// Cut anywhere inside a frame, the stream ends with io.ErrUnexpectedEOF;
	// at a frame boundary, with io.EOF.
	boundaries := map[int]bool{0: true}
	n := 0
	for _, f := range fs {
		n += len(f.Payload) + FrameOverhead
		boundaries[n] = true
	}
	for i := range len(b) {
		_, err := readAll(t, b[:i], 4096)
		if want := map[bool]error{true: io.EOF, false: io.ErrUnexpectedEOF}[boundaries[i]]; err != want {
			t.Fatalf("stream cut at %d: %v, want %v", i, err, want)
		}
	}
}

// countingWriter counts Write calls.
type countingWriter struct {
	bytes.Buffer
	writes int
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.writes++
	return w.Buffer.Write(p)
}

func TestFrameWriterOneWritePerCall(t *testing.T) {
	var w countingWriter
	fw := NewFrameWriter(&w)
	if err := fw.WriteContent(1, &BasicPublish{}, nil, make([]byte, 20000)); err != nil {
		t.Fatal(err)
	}
	if w.writes != 1 {
		t.Errorf("%d writes, want 1", w.writes)
	}
}

func TestFrameWriterErrors(t *testing.T) {
	var w countingWriter
	fw := NewFrameWriter(&w)
	big := strings.Repeat("x", 255)
	for _, tc := range []struct {
		name   string
		err    error
		target error
	}{
		{"method over frame-max", fw.WriteMethod(1, &ConnectionStart{Mechanisms: strings.Repeat("x", 4096-8-17)}), ErrFrameTooLarge},
		{"header over frame-max", fw.WriteContent(1, &BasicPublish{}, &protocol.Properties{Headers: protocol.Table{"h": strings.Repeat("x", 5000)}}, nil), ErrFrameTooLarge},
		{"frame over frame-max", fw.WriteFrame(Frame{Type: FrameBody, Payload: make([]byte, 4089)}), ErrFrameTooLarge},
		{"content with a method without", fw.WriteContent(1, &BasicAck{}, nil, nil), ErrNoContent},
		{"nil method", fw.WriteMethod(1, nil), ErrNilMethod},
		{"shortstr", fw.WriteContent(1, &BasicPublish{Exchange: big + "x"}, nil, nil), ErrTooLong},
		{"property shortstr", fw.WriteContent(1, &BasicPublish{}, &protocol.Properties{AppID: big + "x"}, nil), ErrTooLong},
	} {
		if !errors.Is(tc.err, tc.target) {
			t.Errorf("%s: %v, want %v", tc.name, tc.err, tc.target)
		}
	}
	if w.writes != 0 {
		t.Errorf("failed writes wrote %d times", w.writes)
	}
	// Exactly frame-max is fine.
	if err := fw.WriteMethod(1, &ConnectionStart{Mechanisms: strings.Repeat("x", 4096-8-18)}); err != nil {
		t.Error(err)
	}
	if err := fw.WriteFrame(Frame{Type: FrameBody, Payload: make([]byte, 4088)}); err != nil {
		t.Error(err)
	}
	if err := fw.WriteProtocolHeader(); err != nil || !strings.HasSuffix(w.String(), "AMQP\x00\x00\x09\x01") {
		t.Errorf("protocol header: %v", err)
	}
}

func TestReadFrameErrors(t *testing.T) {
	for _, tc := range []struct {
		name     string
		in       []byte
		frameMax uint32
		target   error
	}{
		{"over frame-max", []byte{1, 0, 1, 0, 0, 0x0F, 0xF9}, 4096, ErrFrameTooLarge},
		{"forged size", []byte{3, 0, 1, 0xFF, 0xFF, 0xFF, 0xFF}, 131072, ErrFrameTooLarge},
		{"bad frame-end", []byte{8, 0, 0, 0, 0, 0, 0, 0x00}, 4096, ErrFrameEnd},
		{"type 4", []byte{4, 0, 0, 0, 0, 0, 0, 0xCE}, 4096, ErrFrameType},
		{"type 0", []byte{0, 0, 0, 0, 0, 0, 0, 0xCE}, 0, ErrFrameType},
		{"forged size, no limit", []byte{3, 0, 1, 0xFF, 0xFF, 0xFF, 0xFF, 1, 2, 3}, 0, io.ErrUnexpectedEOF},
	} {
		fr := NewFrameReader(bytes.NewReader(tc.in))
		fr.SetFrameMax(tc.frameMax)
		_, err := fr.ReadFrame()
		if !errors.Is(err, tc.target) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.target)
			continue
		}
		var e *Error
		if tc.target != io.ErrUnexpectedEOF && (!errors.As(err, &e) || e.Code != protocol.FrameError || e.AMQP().Code != 501) {
			t.Errorf("%s: %#v, want a FRAME_ERROR *Error", tc.name, err)
		}
	}
	// Exactly frame-max is fine; default is FrameMinSize.
	b := AppendFrame(nil, Frame{Type: FrameBody, Channel: 9, Payload: make([]byte, FrameMinSize-FrameOverhead)})
	if f, err := NewFrameReader(bytes.NewReader(b)).ReadFrame(); err != nil || len(f.Payload) != 4088 || f.Channel != 9 {
		t.Errorf("frame of exactly frame-max: %v", err)
	}
	// No limit: a 3 MiB frame.
	b = AppendFrame(nil, Frame{Type: FrameBody, Payload: bytes.Repeat([]byte{7}, 3<<20)})
	fr := NewFrameReader(bytes.NewReader(b))
	fr.SetFrameMax(0)
	if f, err := fr.ReadFrame(); err != nil || len(f.Payload) != 3<<20 || f.Payload[3<<20-1] != 7 {
		t.Errorf("3 MiB frame without limit: %v", err)
	}
}

func TestFrameTypeString(t *testing.T) {
	for typ, want := range map[FrameType]string{FrameMethod: "method", FrameHeader: "header", FrameBody: "body",
		FrameHeartbeat: "heartbeat", 4: "frame type 4"} {
		if typ.String() != want {
			t.Errorf("%d: %q", typ, typ.String())
		}
	}
}
