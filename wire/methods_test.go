package wire

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/amqpsim/amqpsim/protocol"
)

// everyTypeTable holds a value of every Go type a field table decodes to.
func everyTypeTable() protocol.Table {
	return protocol.Table{
		"bool":    true,
		"false":   false,
		"int8":    int8(-8),
		"uint8":   uint8(200),
		"int16":   int16(-1600),
		"uint16":  uint16(60000),
		"int32":   int32(-320000),
		"uint32":  uint32(4000000000),
		"int64":   int64(-6400000000000),
		"float32": float32(3.5),
		"float64": 6.25e-3,
		"decimal": protocol.Decimal{Scale: 2, Value: -12345},
		"string":  "héllo",
		"bytes":   []byte{0, 1, 0xCE, 0xFF},
		"time":    time.Unix(1700000000, 0).UTC(),
		"void":    nil,
		"array":   []any{int32(1), "two", []any{}, protocol.Table{}, nil, []any{false}},
		"table":   protocol.Table{"nested": protocol.Table{"deep": int64(1)}, "empty": protocol.Table{}},
		"":        "empty key",
	}
}

// fill sets every argument of the method struct m. Numbers get values with
// high bits set (to catch truncation), strings a name derived from the field,
// tables everyTypeTable, and bits the pattern i%2 == flip, so two calls with
// flip false and true put every bit in both states.
func fill(m Method, flip bool) Method {
	v := reflect.ValueOf(m).Elem()
	for i := 0; i < v.NumField(); i++ {
		f, name := v.Field(i), v.Type().Field(i).Name
		switch f.Kind() {
		case reflect.Bool:
			f.SetBool((i%2 == 0) == flip)
		case reflect.Uint8:
			f.SetUint(uint64(0xA0 + i))
		case reflect.Uint16:
			f.SetUint(uint64(0xBE00 + i))
		case reflect.Uint32:
			f.SetUint(uint64(0xDEAD0000 + i))
		case reflect.Uint64:
			f.SetUint(0xFEEDFACE00000000 + uint64(i))
		case reflect.String:
			f.SetString(fmt.Sprintf("%s-%d-%v", name, i, flip))
		case reflect.Map:
			f.Set(reflect.ValueOf(everyTypeTable()))
		default:
			panic("fill: unhandled kind " + f.Kind().String())
		}
	}
	return m
}

func methodName(id protocol.Method) string {
	return reflect.TypeOf(newMethod(id.Class, id.ID)).Elem().Name()
}

func TestMethodRoundTrip(t *testing.T) {
	if len(methodIDs) != 64 {
		t.Errorf("%d methods generated, want the 64 of the RabbitMQ-extended 0-9-1 XML", len(methodIDs))
	}
	for _, id := range methodIDs {
		for _, flip := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/%v", methodName(id), flip), func(t *testing.T) {
				want := fill(newMethod(id.Class, id.ID), flip)
				if got := want.ID(); got != id {
					t.Fatalf("ID() = %v, want %v", got, id)
				}
				payload, err := AppendMethod(nil, want)
				if err != nil {
					t.Fatal(err)
				}
				got, err := DecodeMethod(payload)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("round trip (-want +got):\n%s", diff)
				}
				// Every strict prefix must fail cleanly, never panic.
				for n := range len(payload) {
					if _, err := DecodeMethod(payload[:n]); !errors.Is(err, ErrTruncated) {
						t.Fatalf("DecodeMethod(first %d of %d bytes) = %v, want ErrTruncated", n, len(payload), err)
					}
				}
				_, err = DecodeMethod(append(payload, 0))
				var e *Error
				if !errors.As(err, &e) || !errors.Is(err, ErrTrailingBytes) || e.Code != protocol.FrameError || e.Method != id {
					t.Errorf("DecodeMethod(payload+1 byte) = %#v, want FRAME_ERROR ErrTrailingBytes for %v", err, id)
				}
			})
		}
	}
}

// TestMethodIDsMatchProtocol checks every method protocol names decodes to a
// struct with that id, and the content flag of each.
func TestMethodIDsMatchProtocol(t *testing.T) {
	known := []protocol.Method{
		protocol.ConnectionStart, protocol.ConnectionStartOk, protocol.ConnectionSecure, protocol.ConnectionSecureOk,
		protocol.ConnectionTune, protocol.ConnectionTuneOk, protocol.ConnectionOpen, protocol.ConnectionOpenOk,
		protocol.ConnectionClose, protocol.ConnectionCloseOk, protocol.ConnectionBlocked, protocol.ConnectionUnblock,
		protocol.ChannelOpen, protocol.ChannelOpenOk, protocol.ChannelFlow, protocol.ChannelFlowOk,
		protocol.ChannelClose, protocol.ChannelCloseOk,
		protocol.ExchangeDeclare, protocol.ExchangeDeclareOk, protocol.ExchangeDelete, protocol.ExchangeDeleteOk,
		protocol.ExchangeBind, protocol.ExchangeBindOk, protocol.ExchangeUnbind, protocol.ExchangeUnbindOk,
		protocol.QueueDeclare, protocol.QueueDeclareOk, protocol.QueueBind, protocol.QueueBindOk,
		protocol.QueuePurge, protocol.QueuePurgeOk, protocol.QueueDelete, protocol.QueueDeleteOk,
		protocol.QueueUnbind, protocol.QueueUnbindOk,
		protocol.BasicQos, protocol.BasicQosOk, protocol.BasicConsume, protocol.BasicConsumeOk,
		protocol.BasicCancel, protocol.BasicCancelOk, protocol.BasicPublish, protocol.BasicReturn,
		protocol.BasicDeliver, protocol.BasicGet, protocol.BasicGetOk, protocol.BasicGetEmpty,
		protocol.BasicAck, protocol.BasicReject, protocol.BasicRecoverAsync, protocol.BasicRecover,
		protocol.BasicRecoverOk, protocol.BasicNack,
		protocol.ConfirmSelect, protocol.ConfirmSelectOk,
		protocol.TxSelect, protocol.TxSelectOk, protocol.TxCommit, protocol.TxCommitOk,
		protocol.TxRollback, protocol.TxRollbackOk,
	}
	for _, id := range known {
		m := newMethod(id.Class, id.ID)
		if m == nil {
			t.Errorf("%v: no generated struct", id)
			continue
		}
		if m.ID() != id {
			t.Errorf("%v: ID() = %v", id, m.ID())
		}
		if n := strings.ReplaceAll(strings.ReplaceAll(id.String(), ".", ""), "-", ""); !strings.EqualFold(n, methodName(id)) {
			t.Errorf("%v: struct %s", id, methodName(id))
		}
	}
	content := map[protocol.Method]bool{protocol.BasicPublish: true, protocol.BasicReturn: true,
		protocol.BasicDeliver: true, protocol.BasicGetOk: true}
	for _, id := range methodIDs {
		if got := newMethod(id.Class, id.ID).HasContent(); got != content[id] {
			t.Errorf("%v: HasContent() = %v", id, got)
		}
	}
	// connection.update-secret(-ok) are the two the protocol package lacks.
	for _, id := range []protocol.Method{{Class: 10, ID: 70}, {Class: 10, ID: 71}} {
		if _, ok := newMethod(id.Class, id.ID).(interface{ ID() protocol.Method }); !ok {
			t.Errorf("%v missing", id)
		}
	}
}

// TestMethodGolden pins exact encodings, independent of the round trip.
func TestMethodGolden(t *testing.T) {
	for _, tc := range []struct {
		m    Method
		want []byte
	}{
		{&BasicQos{PrefetchSize: 1, PrefetchCount: 0x0203, Global: true},
			[]byte{0, 60, 0, 10, 0, 0, 0, 1, 2, 3, 1}},
		{&BasicAck{DeliveryTag: 0x0102030405060708, Multiple: true},
			[]byte{0, 60, 0, 80, 1, 2, 3, 4, 5, 6, 7, 8, 1}},
		{&BasicNack{DeliveryTag: 9, Requeue: true},
			[]byte{0, 60, 0, 120, 0, 0, 0, 0, 0, 0, 0, 9, 2}},
		// no-local, no-ack, exclusive, no-wait: LSB first in one octet.
		{&BasicConsume{Queue: "q", ConsumerTag: "c", NoAck: true, NoWait: true},
			[]byte{0, 60, 0, 20, 0, 0, 1, 'q', 1, 'c', 0b1010, 0, 0, 0, 0}},
		{&QueueDeclare{Queue: "q", Durable: true, AutoDelete: true, Arguments: protocol.Table{"x": int32(1)}},
			[]byte{0, 50, 0, 10, 0, 0, 1, 'q', 0b01010, 0, 0, 0, 7, 1, 'x', 'I', 0, 0, 0, 1}},
		{&ExchangeUnbindOk{}, []byte{0, 40, 0, 51}},
		{&ChannelOpenOk{Reserved1: "ab"}, []byte{0, 20, 0, 11, 0, 0, 0, 2, 'a', 'b'}},
		{&ConnectionTune{ChannelMax: 2047, FrameMax: 131072, Heartbeat: 60},
			[]byte{0, 10, 0, 30, 0x07, 0xFF, 0, 2, 0, 0, 0, 60}},
		{&ConnectionOpen{VirtualHost: "/", Reserved2: true}, []byte{0, 10, 0, 40, 1, '/', 0, 1}},
	} {
		got, err := AppendMethod(nil, tc.m)
		if err != nil {
			t.Errorf("%v: %v", tc.m.ID(), err)
			continue
		}
		if !bytes.Equal(got, tc.want) {
			t.Errorf("%v:\n got % x\nwant % x", tc.m.ID(), got, tc.want)
		}
	}
}

func TestDecodeMethodErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		payload []byte
		target  error
		code    int
	}{
		{"empty", nil, ErrTruncated, protocol.FrameError},
		{"no method id", []byte{0, 60, 0}, ErrTruncated, protocol.FrameError},
		{"unknown class", []byte{0, 99, 0, 10}, ErrUnknownMethod, protocol.CommandInvalid},
		{"unknown method", []byte{0, 60, 0, 200, 1, 2}, ErrUnknownMethod, protocol.CommandInvalid},
		{"access.request", []byte{0, 30, 0, 10}, ErrUnknownMethod, protocol.CommandInvalid},
		{"shortstr past end", []byte{0, 60, 0, 20, 0, 0, 200, 'q'}, ErrTruncated, protocol.FrameError},
		{"table past end", []byte{0, 50, 0, 10, 0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF}, ErrTruncated, protocol.FrameError},
		{"bad tag", []byte{0, 50, 0, 10, 0, 0, 0, 0, 0, 0, 0, 3, 1, 'x', 'Z'}, ErrMalformedTable, protocol.SyntaxError},
		{"value past table end", []byte{0, 50, 0, 10, 0, 0, 0, 0, 0, 0, 0, 4, 1, 'x', 'I', 0, 0}, ErrMalformedTable, protocol.SyntaxError},
	} {
		m, err := DecodeMethod(tc.payload)
		var e *Error
		if m != nil || !errors.As(err, &e) || !errors.Is(err, tc.target) || e.Code != tc.code {
			t.Errorf("%s: DecodeMethod = %v, %v; want %v with code %d", tc.name, m, err, tc.target, tc.code)
			continue
		}
		if a := e.AMQP(); a.Code != tc.code || !strings.HasPrefix(a.Text, protocol.CodeName(tc.code)+" - ") || !a.Hard {
			t.Errorf("%s: AMQP() = %+v", tc.name, a)
		}
	}
	_, err := DecodeMethod([]byte{0, 60, 0, 200})
	var e *Error
	if errors.As(err, &e); e.Method != (protocol.Method{Class: 60, ID: 200}) || e.AMQP().Text != "COMMAND_INVALID - unknown method: class 60, method 200" {
		t.Errorf("unknown method error = %+v / %q", e, e.AMQP().Text)
	}
}

func TestAppendMethodErrors(t *testing.T) {
	long := strings.Repeat("x", 256)
	for _, tc := range []struct {
		m      Method
		target error
	}{
		{&QueueDeclare{Queue: long}, ErrTooLong},
		{&QueueDeclare{Arguments: protocol.Table{"k": uint64(1)}}, ErrFieldType},
		{&QueueDeclare{Arguments: protocol.Table{long: "v"}}, ErrTooLong},
		{&QueueDeclare{Arguments: protocol.Table{"k": 1 << 40}}, ErrRange},
		{&QueueDeclare{Arguments: protocol.Table{"k": []any{map[string]any{}}}}, ErrFieldType},
		{nil, ErrNilMethod},
		{(*BasicAck)(nil), ErrNilMethod},
	} {
		dst := []byte("keep")
		got, err := AppendMethod(dst, tc.m)
		if !errors.Is(err, tc.target) || string(got) != "keep" {
			t.Errorf("AppendMethod(%#v) = %q, %v; want dst unchanged and %v", tc.m, got, err, tc.target)
		}
	}
	// A longstr may exceed 255 bytes.
	m := &ConnectionStartOk{Response: long + long, Mechanism: "PLAIN"}
	b, err := AppendMethod(nil, m)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := DecodeMethod(b); err != nil || got.(*ConnectionStartOk).Response != m.Response {
		t.Errorf("long longstr: %v", err)
	}
}
