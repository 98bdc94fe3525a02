package wire

import (
	"bytes"
	"errors"
	"io"
	"os"
	"testing"
	"time"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// handshakeBytes is a client's side of a valid handshake (after the
// protocol header), with heartbeats off.
func handshakeBytes() []byte {
	var buf bytes.Buffer
	fw := NewFrameWriter(&buf)
	fw.WriteMethod(0, &ConnectionStartOk{ClientProperties: protocol.Table{"capabilities": protocol.Table{"consumer_cancel_notify": true}},
		Mechanism: "PLAIN", Response: "\x00guest\x00guest", Locale: "en_US"})
	fw.WriteMethod(0, &ConnectionTuneOk{ChannelMax: 2047, FrameMax: 131072})
	fw.WriteMethod(0, &ConnectionOpen{VirtualHost: "/"})
	return buf.Bytes()
}

// fuzzSeeds are client byte streams after the protocol header: the
// handshake followed by valid and invalid traffic.
func fuzzSeeds() [][]byte {
	hs := handshakeBytes()
	frames := func(f func(fw *FrameWriter)) []byte {
		var buf bytes.Buffer
		buf.Write(hs)
		fw := NewFrameWriter(&buf)
		fw.SetFrameMax(131072)
		f(fw)
		return buf.Bytes()
	}
	return [][]byte{
		nil,
		hs,
		frames(func(fw *FrameWriter) {
			fw.WriteMethod(1, &ChannelOpen{})
			fw.WriteMethod(1, &QueueDeclare{Queue: "q"})
			fw.WriteMethod(1, &ConfirmSelect{})
			fw.WriteContent(1, &BasicPublish{RoutingKey: "q", Mandatory: true}, &protocol.Properties{Headers: protocol.Table{"a": int32(1)}}, []byte("hello"))
			fw.WriteContent(1, &BasicPublish{RoutingKey: "nowhere", Mandatory: true}, nil, nil)
			fw.WriteMethod(1, &BasicQos{PrefetchCount: 1})
			fw.WriteMethod(1, &BasicConsume{Queue: "q", ConsumerTag: "c"})
			fw.WriteMethod(1, &BasicGet{Queue: "q"})
			fw.WriteMethod(1, &BasicAck{DeliveryTag: 1})
			fw.WriteMethod(1, &BasicNack{DeliveryTag: 7})
			fw.WriteMethod(1, &ChannelCloseOk{})
			fw.WriteMethod(1, &QueueDelete{Queue: "q"})
			fw.WriteMethod(0, &ConnectionClose{ReplyCode: 200})
		}),
		frames(func(fw *FrameWriter) {
			fw.WriteMethod(1, &ChannelOpen{})
			fw.WriteMethod(1, &BasicPublish{RoutingKey: "x"})
			fw.WriteFrame(Frame{Type: FrameHeader, Channel: 1, Payload: []byte{0, 60, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0}})
			fw.WriteFrame(Frame{Type: FrameBody, Channel: 1, Payload: []byte("0123456789")})
			fw.WriteMethod(1, &ChannelClose{})
		}),
		frames(func(fw *FrameWriter) {
			fw.WriteFrame(Frame{Type: 9, Channel: 3, Payload: []byte{1, 2, 3}})
			fw.WriteMethod(0, &ConnectionCloseOk{})
		}),
		append(hs, 1, 0, 1, 0, 0, 0, 4, 0, 60, 3, 231, 0xCE),
	}
}

// FuzzServeConn feeds a server arbitrary bytes after a valid protocol header,
// then ends the client's side. The server must neither panic nor hang: the
// connection must end, and Close must return.
func FuzzServeConn(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s := NewServer(sim.New(sim.Config{NoTrace: true}))
		s.CloseTimeout = time.Second
		client, server := Pipe()
		if err := s.ServeConn(server); err != nil {
			t.Fatal(err)
		}
		client.Write(ProtocolHeader[:])
		client.Write(data)
		client.(interface{ CloseWrite() error }).CloseWrite()
		client.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, err := io.Copy(io.Discard, client)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("the server did not end the connection")
		}
		client.Close()
		s.Close()
	})
}
