package wire

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/amqpsim/amqpsim/protocol"
)

func allProperties() protocol.Properties {
	return protocol.Properties{
		ContentType:     "application/json",
		ContentEncoding: "gzip",
		Headers:         everyTypeTable(),
		DeliveryMode:    2,
		Priority:        9,
		CorrelationID:   "corr",
		ReplyTo:         "amq.rabbitmq.reply-to",
		Expiration:      "60000",
		MessageID:       "msg-1",
		Timestamp:       time.Unix(1700000001, 0).UTC(),
		Type:            "order.created",
		UserID:          "guest",
		AppID:           "app",
		ClusterID:       "cluster",
	}
}

func TestHeaderRoundTrip(t *testing.T) {
	for _, h := range []Header{
		{BodySize: 1 << 40, Properties: allProperties()},
		{Weight: 3, BodySize: 0},
		{BodySize: 5, Properties: protocol.Properties{Headers: protocol.Table{}}},
		{BodySize: 5, Properties: protocol.Properties{Timestamp: time.Unix(0, 0).UTC()}},
		{BodySize: 5, Properties: protocol.Properties{ClusterID: "c", DeliveryMode: 1}},
	} {
		b, err := AppendHeader(nil, &h)
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeHeader(b)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(h, got); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
		for n := range len(b) {
			if _, err := DecodeHeader(b[:n]); !errors.Is(err, ErrTruncated) {
				t.Fatalf("first %d of %d bytes: %v, want ErrTruncated", n, len(b), err)
			}
		}
		if _, err := DecodeHeader(append(b, 0)); !errors.Is(err, ErrTrailingBytes) {
			t.Errorf("trailing byte: %v", err)
		}
	}
}

func TestHeaderGolden(t *testing.T) {
	h := Header{BodySize: 0x0102, Properties: protocol.Properties{
		ContentType: "t", DeliveryMode: 2, Timestamp: time.Unix(5, 0), ClusterID: "c",
	}}
	got, err := AppendHeader(nil, &h)
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{0, 60, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2,
		0b1001_0000, 0b0100_0100, // content-type, delivery-mode | timestamp, cluster-id
		1, 't', 2, 0, 0, 0, 0, 0, 0, 0, 5, 1, 'c'}
	if !bytes.Equal(got, want) {
		t.Errorf("\n got % x\nwant % x", got, want)
	}
	// Every flag bit maps to its property, in order.
	b, _ := AppendHeader(nil, &Header{Properties: allProperties()})
	if flags := uint16(b[12])<<8 | uint16(b[13]); flags != 0xFFFC {
		t.Errorf("all properties: flags %#04x, want 0xfffc", flags)
	}
	// No properties: flags 0, nothing after them.
	b, _ = AppendHeader(nil, &Header{BodySize: 1})
	if len(b) != 14 || b[12] != 0 || b[13] != 0 {
		t.Errorf("no properties: % x", b)
	}
}

func TestDecodeHeaderErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		in     []byte
		target error
		code   int
	}{
		{"class 10", []byte{0, 10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, ErrContentClass, protocol.UnexpectedFrame},
		{"continuation bit", []byte{0, 60, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0}, ErrBadPropertyFlags, protocol.FrameError},
		{"bit 1", []byte{0, 60, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2}, ErrBadPropertyFlags, protocol.FrameError},
		{"bad headers", []byte{0, 60, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x20, 0, 0, 0, 0, 3, 1, 'k', '?'}, ErrMalformedTable, protocol.SyntaxError},
	} {
		_, err := DecodeHeader(tc.in)
		var e *Error
		if !errors.As(err, &e) || !errors.Is(err, tc.target) || e.Code != tc.code {
			t.Errorf("%s: %v, want %v with code %d", tc.name, err, tc.target, tc.code)
		}
	}
}

func TestAppendBodyFrames(t *testing.T) {
	body := bytes.Repeat([]byte("0123456789"), 1000) // 10000 bytes
	for _, tc := range []struct {
		frameMax uint32
		sizes    []int
	}{
		{4096, []int{4088, 4088, 1824}},
		{10008, []int{10000}},
		{10007, []int{9999, 1}},
		{0, []int{10000}},
		{131072, []int{10000}},
	} {
		fs, _ := readAll(t, AppendBodyFrames(nil, 7, body, tc.frameMax), tc.frameMax)
		var got []byte
		var sizes []int
		for _, f := range fs {
			if f.Type != FrameBody || f.Channel != 7 {
				t.Fatalf("frame %+v", f)
			}
			sizes = append(sizes, len(f.Payload))
			got = append(got, f.Payload...)
		}
		if !bytes.Equal(got, body) || !cmp.Equal(sizes, tc.sizes) {
			t.Errorf("frameMax %d: sizes %v, want %v (body equal: %v)", tc.frameMax, sizes, tc.sizes, bytes.Equal(got, body))
		}
	}
	if b := AppendBodyFrames([]byte("x"), 1, nil, 4096); string(b) != "x" {
		t.Errorf("empty body appended % x", b)
	}
}
