package wire

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/amqpsim/amqpsim/protocol"
)

// Fuzz targets: decoding never panics, fails only with an *Error carrying a
// connection-closing reply code, and whatever decodes re-encodes and decodes
// to the same value (and the same bytes the second time).

var equateNaNs = cmpopts.EquateNaNs()

func checkDecodeError(t *testing.T, err error) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not a *wire.Error", err, err)
	}
	switch e.Code {
	case protocol.FrameError, protocol.SyntaxError, protocol.CommandInvalid, protocol.UnexpectedFrame:
	default:
		t.Fatalf("error %v has code %d", err, e.Code)
	}
	if a := e.AMQP(); !a.Hard || len(a.Text) > 255 {
		t.Fatalf("AMQP() = %+v", a)
	}
}

// roundTrip re-encodes v1 (decoded from some input), decodes that, and
// checks both values and both encodings agree.
func roundTrip[T any](t *testing.T, v1 T, encode func(T) ([]byte, error), decode func([]byte) (T, error)) {
	t.Helper()
	b1, err := encode(v1)
	if err != nil {
		t.Fatalf("re-encoding %#v: %v", v1, err)
	}
	v2, err := decode(b1)
	if err != nil {
		t.Fatalf("decoding the re-encoding % x: %v", b1, err)
	}
	if diff := cmp.Diff(v1, v2, equateNaNs); diff != "" {
		t.Fatalf("round trip (-first +second):\n%s", diff)
	}
	b2, err := encode(v2)
	if err != nil || !bytes.Equal(b1, b2) {
		t.Fatalf("encodings differ (%v):\n% x\n% x", err, b1, b2)
	}
}

func encodeMethod(m Method) ([]byte, error)        { return AppendMethod(nil, m) }
func encodeHeader(h Header) ([]byte, error)        { return AppendHeader(nil, &h) }
func encodeTable(t protocol.Table) ([]byte, error) { return AppendTable(nil, t) }

func FuzzDecodeMethod(f *testing.F) {
	for _, id := range methodIDs {
		b, _ := AppendMethod(nil, fill(newMethod(id.Class, id.ID), false))
		f.Add(b)
	}
	f.Add([]byte{0, 60, 0, 80, 0, 0, 0, 0, 0, 0, 0, 1, 0xFF}) // basic.ack with undefined bits set
	f.Add([]byte{0, 60, 0, 200})
	var scratch methodScratch
	f.Fuzz(func(t *testing.T, payload []byte) {
		m, err := DecodeMethod(payload)
		// The server's allocation-free decoder of the per-message methods
		// gives the same method or the same error.
		sm, serr := scratch.decode(payload)
		if !reflect.DeepEqual(m, sm) || fmt.Sprint(err) != fmt.Sprint(serr) {
			t.Fatalf("scratch decode differs:\n%#v %v\n%#v %v", m, err, sm, serr)
		}
		if err != nil {
			checkDecodeError(t, err)
			return
		}
		roundTrip(t, m, encodeMethod, DecodeMethod)
	})
}

func FuzzTable(f *testing.F) {
	b, _ := AppendTable(nil, everyTypeTable())
	f.Add(b)
	f.Add([]byte{0, 0, 0, 11, 1, 'k', 'L', 0x80, 0, 0, 0, 0, 0, 0, 1})
	f.Add([]byte{0, 0, 0, 12, 1, 'k', 'd', 0x7F, 0xF8, 0, 0, 0, 0, 0, 1}) // NaN
	f.Add([]byte{0, 0, 0, 6, 1, 'k', 't', 2, 1, 'k'})                     // duplicate key
	f.Fuzz(func(t *testing.T, b []byte) {
		tab, err := DecodeTable(b)
		if err != nil {
			checkDecodeError(t, err)
			return
		}
		roundTrip(t, tab, encodeTable, DecodeTable)
	})
}

func FuzzDecodeHeader(f *testing.F) {
	b, _ := AppendHeader(nil, &Header{BodySize: 10, Properties: allProperties()})
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := DecodeHeader(b)
		if err != nil {
			checkDecodeError(t, err)
			return
		}
		roundTrip(t, h, encodeHeader, DecodeHeader)
	})
}

func FuzzReadFrame(f *testing.F) {
	props := allProperties()
	var buf bytes.Buffer
	fw := NewFrameWriter(&buf)
	_ = fw.WriteMethod(0, &ConnectionTune{ChannelMax: 1, FrameMax: 2, Heartbeat: 3})
	_ = fw.WriteContent(1, &BasicPublish{Exchange: "ex"}, &props, bytes.Repeat([]byte{0xCE}, 100))
	_ = fw.WriteHeartbeat()
	f.Add(buf.Bytes())
	f.Add([]byte{8, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{3, 0, 1, 0xFF, 0xFF, 0xFF, 0xFF, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		fr := NewFrameReader(bytes.NewReader(data))
		fr.SetFrameMax(1 << 16)
		consumed := 0
		for {
			fm, err := fr.ReadFrame()
			if err != nil {
				var e *Error
				if errors.As(err, &e) {
					checkDecodeError(t, err)
				}
				return
			}
			// Frames are canonical: re-encoding gives back the input bytes.
			raw := AppendFrame(nil, fm)
			if consumed+len(raw) > len(data) {
				t.Fatalf("frame %+v read past the %d input bytes", fm, len(data))
			}
			if !bytes.Equal(raw, data[consumed:consumed+len(raw)]) {
				t.Fatalf("frame re-encodes to % x, read from % x", raw, data[consumed:consumed+len(raw)])
			}
			consumed += len(raw)
			switch fm.Type {
			case FrameMethod:
				if m, err := DecodeMethod(fm.Payload); err != nil {
					checkDecodeError(t, err)
				} else {
					roundTrip(t, m, encodeMethod, DecodeMethod)
				}
			case FrameHeader:
				if h, err := DecodeHeader(fm.Payload); err != nil {
					checkDecodeError(t, err)
				} else {
					roundTrip(t, h, encodeHeader, DecodeHeader)
				}
			}
		}
	})
}
