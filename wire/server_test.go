package wire

import (
	"encoding/binary"
	"errors"
	"github.com/amqpsim/amqpsim/internal/bubble"
	"io"
	"net"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// rawClient speaks raw frames to a Server over a Pipe, for the protocol
// violations a real client never commits. The expected replies are what
// RabbitMQ 3.10.8 answered to the same bytes (checked with a raw-frame
// probe against a running broker).
type rawClient struct {
	t    *testing.T
	conn net.Conn
	fr   *FrameReader
	fw   *FrameWriter
}

// maxFrames bounds the raw client's loops that read up to some frame or
// the end: a server that sends without end must fail the test, not hang
// it (a server sending heartbeats or methods in a loop would go past the
// connection's deadline in no time).
const maxFrames = 1000

func newRawServer(t *testing.T) (*Server, *sim.Broker) {
	t.Helper()
	b := sim.New(sim.Config{})
	s := NewServer(b)
	s.Logf = t.Logf
	t.Cleanup(func() { s.Close() })
	return s, b
}

func dialRaw(t *testing.T, s *Server) *rawClient {
	t.Helper()
	client, server := Pipe()
	if err := s.ServeConn(server); err != nil {
		t.Fatal(err)
	}
	_ = client.SetDeadline(time.Now().Add(10 * time.Second))
	t.Cleanup(func() { client.Close() })
	return &rawClient{t: t, conn: client, fr: NewFrameReader(client), fw: NewFrameWriter(client)}
}

// open runs the handshake with caps as the client's capabilities.
func (c *rawClient) open(user, pass, vhost string, caps protocol.Table) Method {
	c.t.Helper()
	if err := c.fw.WriteProtocolHeader(); err != nil {
		c.t.Fatal(err)
	}
	start := c.expect()
	if _, ok := start.(*ConnectionStart); !ok {
		c.t.Fatalf("got %#v, want connection.start", start)
	}
	if caps == nil {
		caps = protocol.Table{}
	}
	c.send(0, &ConnectionStartOk{ClientProperties: protocol.Table{"capabilities": caps}, Mechanism: "PLAIN",
		Response: "\x00" + user + "\x00" + pass, Locale: "en_US"})
	tune, ok := c.next().(*ConnectionTune)
	if !ok {
		return nil
	}
	c.send(0, &ConnectionTuneOk{ChannelMax: tune.ChannelMax, FrameMax: tune.FrameMax})
	c.fr.SetFrameMax(tune.FrameMax)
	c.fw.SetFrameMax(tune.FrameMax)
	c.send(0, &ConnectionOpen{VirtualHost: vhost})
	return c.next()
}

func (c *rawClient) ready() {
	c.t.Helper()
	if m := c.open("guest", "guest", "/", nil); m == nil {
		c.t.Fatal("handshake failed")
	} else if _, ok := m.(*ConnectionOpenOk); !ok {
		c.t.Fatalf("got %#v, want open-ok", m)
	}
}

func (c *rawClient) send(ch uint16, m Method) {
	c.t.Helper()
	if err := c.fw.WriteMethod(ch, m); err != nil {
		c.t.Fatal(err)
	}
}

func (c *rawClient) raw(typ FrameType, ch uint16, payload []byte) {
	c.t.Helper()
	if _, err := c.conn.Write(AppendFrame(nil, Frame{Type: typ, Channel: ch, Payload: payload})); err != nil {
		c.t.Fatal(err)
	}
}

// next returns the next method, skipping heartbeats; nil at the end of the
// stream.
func (c *rawClient) next() Method {
	c.t.Helper()
	for range maxFrames {
		f, err := c.fr.ReadFrame()
		if err != nil {
			return nil
		}
		if f.Type != FrameMethod {
			continue
		}
		m, err := DecodeMethod(f.Payload)
		if err != nil {
			c.t.Fatalf("decode: %v", err)
		}
		return m
	}
	c.t.Fatalf("%d frames without a method", maxFrames)
	return nil
}

func (c *rawClient) expect() Method {
	c.t.Helper()
	m := c.next()
	if m == nil {
		c.t.Fatal("connection ended")
	}
	return m
}

// expectClose reads up to connection.close, answers close-ok, and checks
// that the server then ends the connection.
func (c *rawClient) expectClose(want *ConnectionClose) {
	c.t.Helper()
	for i := 0; ; i++ {
		if i == maxFrames {
			c.t.Fatalf("%d methods without connection.close, want %+v", maxFrames, want)
		}
		m := c.next()
		if m == nil {
			c.t.Fatalf("connection ended without connection.close, want %+v", want)
		}
		if got, ok := m.(*ConnectionClose); ok {
			if diff := cmp.Diff(want, got); diff != "" {
				c.t.Fatalf("connection.close (-want +got):\n%s", diff)
			}
			break
		}
	}
	c.send(0, &ConnectionCloseOk{})
	c.expectEOF()
}

func (c *rawClient) expectEOF() {
	c.t.Helper()
	for range maxFrames {
		f, err := c.fr.ReadFrame()
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.ErrClosedPipe) {
				c.t.Fatalf("want EOF, got %v", err)
			}
			return
		}
		if f.Type == FrameMethod {
			m, _ := DecodeMethod(f.Payload)
			c.t.Fatalf("want EOF, got %#v", m)
		}
	}
	c.t.Fatalf("want EOF, got %d frames", maxFrames)
}

func openChannel(c *rawClient, id uint16) {
	c.t.Helper()
	c.send(id, &ChannelOpen{})
	if _, ok := c.expect().(*ChannelOpenOk); !ok {
		c.t.Fatal("no channel.open-ok")
	}
}

func header(class uint16, size uint64) []byte {
	b := binary.BigEndian.AppendUint16(nil, class)
	b = binary.BigEndian.AppendUint16(b, 0)
	b = binary.BigEndian.AppendUint64(b, size)
	return binary.BigEndian.AppendUint16(b, 0)
}

func cclose(code int, text string, m protocol.Method) *ConnectionClose {
	return &ConnectionClose{ReplyCode: uint16(code), ReplyText: text, ClassID: m.Class, MethodID: m.ID}
}

// connection.start as RabbitMQ 3.10.8 sends it (measured), on 3.10:
// TestServerPropertiesReportProfile gives the other releases' properties.
func TestServerConnectionStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newProfileServer(t, sim.V3_10)
		c := dialRaw(t, s)
		c.fw.WriteProtocolHeader()
		start, ok := c.expect().(*ConnectionStart)
		if !ok {
			t.Fatal("no connection.start")
		}
		if start.VersionMajor != 0 || start.VersionMinor != 9 || start.Mechanisms != "PLAIN AMQPLAIN" || start.Locales != "en_US" {
			t.Errorf("start = %+v", start)
		}
		caps := start.ServerProperties["capabilities"].(protocol.Table)
		want := protocol.Table{"publisher_confirms": true, "exchange_exchange_bindings": true, "basic.nack": true,
			"consumer_cancel_notify": true, "connection.blocked": true, "consumer_priorities": true,
			"authentication_failure_close": true, "per_consumer_qos": true, "direct_reply_to": true}
		if diff := cmp.Diff(want, caps); diff != "" {
			t.Errorf("capabilities (-want +got):\n%s", diff)
		}
		// What RabbitMQ 3.10.8 sends (measured), amqpsim named in information only.
		for k, v := range map[string]string{"product": "RabbitMQ", "version": "3.10.8", "platform": "Erlang/OTP 25.2.3",
			"copyright": "Copyright (c) 2007-2022 VMware, Inc. or its affiliates."} {
			if start.ServerProperties[k] != v {
				t.Errorf("%s = %v, want %q", k, start.ServerProperties[k], v)
			}
		}
		if info, _ := start.ServerProperties["information"].(string); !strings.HasPrefix(info, "amqpsim ") {
			t.Errorf("information = %q", info)
		}
	})
}

func TestServerTuneDefaults(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, _ := newRawServer(t)
		c := dialRaw(t, s)
		c.fw.WriteProtocolHeader()
		c.expect()
		c.send(0, &ConnectionStartOk{ClientProperties: protocol.Table{}, Mechanism: "PLAIN", Response: "\x00guest\x00guest"})
		got := c.expect()
		if diff := cmp.Diff(&ConnectionTune{ChannelMax: 2047, FrameMax: 131072, Heartbeat: 60}, got); diff != "" {
			t.Fatalf("tune (-want +got):\n%s", diff)
		}
	})
}

// On 3.10 a bad protocol header is answered with the 0-9-1 header; from
// 4.0 with AMQP 1.0's SASL header (TestServerProtocolHeaderPerProfile).
func TestServerBadProtocolHeader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newProfileServer(t, sim.V3_10)
		for _, h := range []string{"AMQP\x00\x00\x09\x02", "GET / HTTP/1.1\r\n\r\n"} {
			c := dialRaw(t, s)
			c.conn.Write([]byte(h))
			got, _ := io.ReadAll(c.conn)
			if string(got) != "AMQP\x00\x00\x09\x01" {
				t.Errorf("after %q the server sent %q, want the 0-9-1 header", h, got)
			}
		}
	})
}

func TestServerLogin(t *testing.T) {
	t.Run("refused without authentication_failure_close: silent close", bubble.Subtest(func(t *testing.T) {
		s, _ := newRawServer(t)
		c := dialRaw(t, s)
		if m := c.open("guest", "nope", "/", nil); m != nil {
			t.Fatalf("got %#v, want the connection closed", m)
		}
	}))
	t.Run("refused with authentication_failure_close", bubble.Subtest(func(t *testing.T) {
		s, _ := newRawServer(t)
		c := dialRaw(t, s)
		c.fw.WriteProtocolHeader()
		c.expect()
		c.send(0, &ConnectionStartOk{ClientProperties: protocol.Table{"capabilities": protocol.Table{"authentication_failure_close": true}},
			Mechanism: "PLAIN", Response: "\x00nobody\x00nope"})
		want := cclose(403, "ACCESS_REFUSED - Login was refused using authentication mechanism PLAIN. For details see the broker logfile.", protocol.Method{})
		if diff := cmp.Diff(want, c.next()); diff != "" {
			t.Fatalf("(-want +got):\n%s", diff)
		}
		c.expectEOF()
	}))
	t.Run("AMQPLAIN", bubble.Subtest(func(t *testing.T) {
		s, _ := newRawServer(t)
		c := dialRaw(t, s)
		c.fw.WriteProtocolHeader()
		c.expect()
		tbl, _ := AppendTable(nil, protocol.Table{"LOGIN": "guest", "PASSWORD": "guest"})
		c.send(0, &ConnectionStartOk{ClientProperties: protocol.Table{}, Mechanism: "AMQPLAIN", Response: string(tbl[4:])})
		if _, ok := c.expect().(*ConnectionTune); !ok {
			t.Fatal("AMQPLAIN login failed")
		}
	}))
	t.Run("unknown mechanism", bubble.Subtest(func(t *testing.T) {
		s, _ := newRawServer(t)
		c := dialRaw(t, s)
		c.fw.WriteProtocolHeader()
		c.expect()
		c.send(0, &ConnectionStartOk{ClientProperties: protocol.Table{}, Mechanism: "FOO", Response: "x"})
		c.expectEOF()
	}))
}

func TestServerMissingVhost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, _ := newRawServer(t)
		c := dialRaw(t, s)
		got := c.open("guest", "guest", "nosuch", nil)
		if diff := cmp.Diff(cclose(530, "NOT_ALLOWED - vhost nosuch not found", protocol.ConnectionOpen), got); diff != "" {
			t.Fatalf("(-want +got):\n%s", diff)
		}
	})
}

// An out-of-range tune-ok gets no close frame: RabbitMQ 3.10.8 drops the
// socket 3 s later (measured for each of these).
func TestServerTuneOkRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, _ := newRawServer(t)
		for _, tune := range []ConnectionTuneOk{
			{ChannelMax: 2047, FrameMax: 200000},
			{ChannelMax: 2047, FrameMax: 100},
			{ChannelMax: 0, FrameMax: 4096},
		} {
			c := dialRaw(t, s)
			c.fw.WriteProtocolHeader()
			c.expect()
			c.send(0, &ConnectionStartOk{ClientProperties: protocol.Table{}, Mechanism: "PLAIN", Response: "\x00guest\x00guest"})
			c.expect()
			c.send(0, &tune)
			start := time.Now()
			if took, closeFrame := readUntilClosed(c); took != 3*time.Second || closeFrame {
				t.Errorf("%+v: dropped after %v (close frame %t), want 3s without one", tune, took, closeFrame)
			}
			if time.Since(start) != 3*time.Second {
				t.Errorf("%+v: took %v", tune, time.Since(start))
			}
		}
	})
}

// A failed login is answered at once (connection.close to a client that
// announced authentication_failure_close) and the socket dropped 3 s
// later, as RabbitMQ 3.10.8 does (measured); HandshakeFailureDelay < 0
// drops it at once.
func TestServerFailedLoginDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, tc := range []struct {
			delay, want time.Duration
		}{{0, 3 * time.Second}, {-1, 0}} {
			s, _ := newRawServer(t)
			s.HandshakeFailureDelay = tc.delay
			c := dialRaw(t, s)
			c.fw.WriteProtocolHeader()
			c.expect()
			c.send(0, &ConnectionStartOk{ClientProperties: protocol.Table{"capabilities": protocol.Table{"authentication_failure_close": true}},
				Mechanism: "PLAIN", Response: "\x00guest\x00wrong"})
			if m, ok := c.expect().(*ConnectionClose); !ok || m.ReplyCode != 403 {
				t.Fatalf("want connection.close 403, got %#v", m)
			}
			if took, _ := readUntilClosed(c); took != tc.want {
				t.Errorf("delay %v: dropped after %v, want %v", tc.delay, took, tc.want)
			}
		}
	})
}

// TestServerProtocolErrors replays the protocol violations probed against
// RabbitMQ 3.10.8 and expects its connection.close, code, text and ids.
func TestServerProtocolErrors(t *testing.T) {
	qos, _ := AppendMethod(nil, &BasicQos{})
	tests := []struct {
		name string
		do   func(c *rawClient)
		want *ConnectionClose
	}{
		{"method on an unopened channel", func(c *rawClient) { c.send(1, &BasicQos{PrefetchCount: 1}) },
			cclose(504, "CHANNEL_ERROR - expected 'channel.open'", protocol.BasicQos)},
		{"second channel.open", func(c *rawClient) { openChannel(c, 1); c.send(1, &ChannelOpen{}) },
			cclose(504, "CHANNEL_ERROR - second 'channel.open' seen", protocol.ChannelOpen)},
		{"server-only method", func(c *rawClient) { openChannel(c, 1); c.send(1, &BasicGetEmpty{}) },
			cclose(503, "COMMAND_INVALID - unimplemented method", protocol.BasicGetEmpty)},
		{"connection method on a channel", func(c *rawClient) { openChannel(c, 1); c.send(1, &ConnectionTuneOk{}) },
			cclose(503, "COMMAND_INVALID - unimplemented method", protocol.ConnectionTuneOk)},
		{"channel.close-ok on an open channel", func(c *rawClient) { openChannel(c, 1); c.send(1, &ChannelCloseOk{}) },
			cclose(503, "COMMAND_INVALID - unimplemented method", protocol.ChannelCloseOk)},
		{"channel method on channel 0", func(c *rawClient) { c.send(0, &ChannelOpen{}) },
			cclose(504, "CHANNEL_ERROR - unexpected method in connection state running", protocol.ChannelOpen)},
		{"basic method on channel 0", func(c *rawClient) { c.send(0, &BasicQos{PrefetchCount: 1}) },
			cclose(504, "CHANNEL_ERROR - unexpected method in connection state running", protocol.BasicQos)},
		{"header frame first", func(c *rawClient) { openChannel(c, 1); c.raw(FrameHeader, 1, header(60, 0)) },
			cclose(505, "UNEXPECTED_FRAME - expected method frame, got non method frame instead", protocol.Method{})},
		{"method instead of header", func(c *rawClient) {
			openChannel(c, 1)
			c.send(1, &BasicPublish{RoutingKey: "x"})
			c.send(1, &BasicQos{})
		}, cclose(505, "UNEXPECTED_FRAME - expected content header for class 60, got non content header frame instead", protocol.BasicPublish)},
		{"header of another class", func(c *rawClient) {
			openChannel(c, 1)
			c.send(1, &BasicPublish{RoutingKey: "x"})
			c.raw(FrameHeader, 1, header(50, 5))
		}, cclose(505, "UNEXPECTED_FRAME - expected content header for class 60, got one for class 50 instead", protocol.BasicPublish)},
		{"method instead of body", func(c *rawClient) {
			openChannel(c, 1)
			c.send(1, &BasicPublish{RoutingKey: "x"})
			c.raw(FrameHeader, 1, header(60, 5))
			c.send(1, &BasicQos{})
		}, cclose(505, "UNEXPECTED_FRAME - expected content body, got non content body frame instead", protocol.BasicPublish)},
		{"body on channel 0", func(c *rawClient) { c.raw(FrameBody, 0, []byte("hello")) },
			cclose(505, `UNEXPECTED_FRAME - type 3, all octets = <<"hello">>`, protocol.Method{})},
		{"heartbeat on a channel", func(c *rawClient) { openChannel(c, 1); c.raw(FrameHeartbeat, 1, nil) },
			cclose(505, "UNEXPECTED_FRAME - type 8, all octets = <<>>", protocol.Method{})},
		{"heartbeat with a payload", func(c *rawClient) { c.raw(FrameHeartbeat, 0, []byte{1, 2}) },
			cclose(501, "FRAME_ERROR - type 8, all octets = <<1,2>>: unknown_frame", protocol.Method{})},
		{"unknown frame type", func(c *rawClient) { c.raw(5, 1, []byte("hello world, this is long text")) },
			cclose(501, `FRAME_ERROR - type 5, first 16 octets = <<"hello world, thi">>: unknown_frame`, protocol.Method{})},
		{"method frame without ids", func(c *rawClient) { openChannel(c, 1); c.raw(FrameMethod, 1, []byte{0, 60}) },
			cclose(501, "FRAME_ERROR - type 1, all octets = <<0,60>>: unknown_frame", protocol.Method{})},
		{"oversized frame", func(c *rawClient) { openChannel(c, 1); c.raw(FrameBody, 1, make([]byte, 200000)) },
			cclose(501, "FRAME_ERROR - type 3, all octets = <<>>: {frame_too_large,200000,131064}", protocol.Method{})},
		{"bad frame end", func(c *rawClient) { c.conn.Write([]byte{8, 0, 0, 0, 0, 0, 0, 0xCD}) },
			cclose(501, "FRAME_ERROR - type 8, all octets = <<>>: {invalid_frame_end_marker,205}", protocol.Method{})},
		{"truncated arguments", func(c *rawClient) { openChannel(c, 1); c.raw(FrameMethod, 1, qos[:6]) },
			cclose(501, "FRAME_ERROR - cannot decode <<0,0>>", protocol.BasicQos)},
		{"trailing arguments", func(c *rawClient) {
			openChannel(c, 1)
			c.raw(FrameMethod, 1, append(append([]byte{}, qos...), 9, 9))
		}, cclose(501, "FRAME_ERROR - cannot decode <<0,0,0,0,0,0,0,9,9>>", protocol.BasicQos)},
		{"prefetch_size", func(c *rawClient) { openChannel(c, 1); c.send(1, &BasicQos{PrefetchSize: 5}) },
			cclose(540, "NOT_IMPLEMENTED - prefetch_size!=0 (5)", protocol.BasicQos)},
		{"recover-async requeue=false", func(c *rawClient) { openChannel(c, 1); c.send(1, &BasicRecoverAsync{}) },
			cclose(540, "NOT_IMPLEMENTED - requeue=false", protocol.BasicRecoverAsync)},
		{"unknown method id", func(c *rawClient) { openChannel(c, 1); c.raw(FrameMethod, 1, []byte{0, 60, 3, 231}) },
			cclose(503, "COMMAND_INVALID - unknown method: class 60, method 999", protocol.Method{Class: 60, ID: 999})},
		{"channel.open while closing", func(c *rawClient) {
			openChannel(c, 1)
			c.send(1, &BasicAck{DeliveryTag: 5})
			c.expect() // channel.close
			c.send(1, &ChannelClose{ReplyCode: 200})
			if _, ok := c.expect().(*ChannelCloseOk); !ok {
				c.t.Fatal("no close-ok")
			}
			c.send(1, &ChannelOpen{})
		}, cclose(504, "CHANNEL_ERROR - second 'channel.open' seen", protocol.ChannelOpen)},
	}
	for _, tc := range tests {
		t.Run(tc.name, bubble.Subtest(func(t *testing.T) {
			s, _ := newRawServer(t)
			c := dialRaw(t, s)
			c.ready()
			tc.do(c)
			c.expectClose(tc.want)
		}))
	}
}

// TestServerFrameMaxIsThePayload: RabbitMQ allows a frame's 8 bytes of
// overhead on top of frame_max (RS@v4.3.5 rabbit_reader:handle_input/3
// refuses a payload over FrameMax - ?EMPTY_FRAME_SIZE + ?FRAME_SIZE_FUDGE,
// the fudge being the same 8 bytes): a body frame whose
// payload is exactly the 131072 negotiated is taken, one byte more is
// frame_too_large. Measured with raw frames on 3.10.8, 4.0.5 and 4.3.6:
// the message of 131072 bytes was queued (queue.delete-ok counted it),
// the 131073-byte one closed the connection with this text.
func TestServerFrameMaxIsThePayload(t *testing.T) {
	publish := func(c *rawClient, size int) {
		c.send(1, &BasicPublish{RoutingKey: "q"})
		c.raw(FrameHeader, 1, header(60, uint64(size)))
		c.raw(FrameBody, 1, make([]byte, size))
	}
	synctest.Test(t, func(t *testing.T) {
		s, b := newRawServer(t)
		c := dialRaw(t, s)
		c.ready()
		openChannel(c, 1)
		c.send(1, &QueueDeclare{Queue: "q"})
		c.expect()
		publish(c, DefaultFrameMax) // 131072, which ready's tune-ok takes
		c.send(1, &QueueDeclare{Queue: "q", Passive: true})
		if ok, _ := c.expect().(*QueueDeclareOk); ok == nil || ok.MessageCount != 1 {
			t.Fatalf("after a body frame of exactly frame_max: %+v, want the message queued", ok)
		}
		if ms, err := b.QueueMessages("/", "q"); err != nil || len(ms) != 1 || len(ms[0].Body) != DefaultFrameMax {
			t.Fatalf("queued %d messages (%v), want one of 131072 bytes", len(ms), err)
		}
		publish(c, DefaultFrameMax+1)
		c.expectClose(cclose(501, "FRAME_ERROR - type 3, all octets = <<>>: {frame_too_large,131073,131064}", protocol.Method{}))
	})
}

// TestServerClosingChannelDropsMethods: after channel.close the server
// ignores the channel's methods until close-ok, then the channel can be
// opened again (RabbitMQ 3.10.8).
func TestServerClosingChannelDropsMethods(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, b := newRawServer(t)
		c := dialRaw(t, s)
		c.ready()
		openChannel(c, 1)
		c.send(1, &BasicAck{DeliveryTag: 5})
		c.send(1, &QueueDeclare{Queue: "never"})
		c.send(1, &BasicQos{PrefetchSize: 5}) // would be a connection error
		want := &ChannelClose{ReplyCode: 406, ReplyText: "PRECONDITION_FAILED - unknown delivery tag 5", ClassID: 60, MethodID: 80}
		if diff := cmp.Diff(want, c.expect()); diff != "" {
			t.Fatalf("(-want +got):\n%s", diff)
		}
		c.send(1, &ChannelCloseOk{})
		openChannel(c, 1)
		c.send(1, &QueueDeclare{Queue: "never", Passive: true})
		want = &ChannelClose{ReplyCode: 404, ReplyText: "NOT_FOUND - no queue 'never' in vhost '/'", ClassID: 50, MethodID: 10}
		if diff := cmp.Diff(want, c.expect()); diff != "" {
			t.Fatalf("(-want +got):\n%s", diff)
		}
		if qs := b.Queues(); len(qs) != 0 {
			t.Errorf("queues = %v, want none", qs)
		}
	})
}

func TestServerChannelMax(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := sim.New(sim.Config{})
		s := NewServer(b)
		s.ChannelMax = 2
		t.Cleanup(func() { s.Close() })
		c := dialRaw(t, s)
		c.ready()
		openChannel(c, 7)
		openChannel(c, 3000) // RabbitMQ limits the count, not the number
		c.send(9, &ChannelOpen{})
		c.expectClose(cclose(530, "NOT_ALLOWED - number of channels opened (2) has reached the negotiated channel_max (2)", protocol.Method{}))
	})
}

// TestServerBrokerSideClose: sim.Broker.CloseConnection becomes
// connection.close 320; the server waits for close-ok and ends the
// connection.
func TestServerBrokerSideClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, b := newRawServer(t)
		c := dialRaw(t, s)
		c.ready()
		b.Connections()[0].CloseWithError(sim.Forced("Closed via test"))
		c.expectClose(cclose(320, "CONNECTION_FORCED - Closed via test", protocol.Method{}))
	})
}

// TestServerCloseTimeout: a client that never answers connection.close is
// disconnected after CloseTimeout.
func TestServerCloseTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, b := newRawServer(t)
		s.CloseTimeout = 50 * time.Millisecond
		c := dialRaw(t, s)
		c.ready()
		b.Connections()[0].CloseWithError(sim.Forced("bye"))
		if _, ok := c.expect().(*ConnectionClose); !ok {
			t.Fatal("no connection.close")
		}
		c.expectEOF()
	})
}

func TestServerCloseLeavesNoGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		before, _ := bubble.Goroutines()
		b := sim.New(sim.Config{})
		s := NewServer(b)
		for range 5 {
			c := dialRaw(t, s)
			c.ready()
			openChannel(c, 1)
		}
		silent, server := Pipe() // a client that never speaks
		s.ServeConn(server)
		defer silent.Close()
		s.Close()
		s.Close() // idempotent
		if err := s.ServeConn(server); !errors.Is(err, ErrServerClosed) {
			t.Errorf("ServeConn after Close = %v", err)
		}
		waitGoroutines(t, before)
	})
}

// waitGoroutines checks that at most n goroutines run, once every other
// goroutine of the test's synctest bubble has exited or is blocked for good.
func waitGoroutines(t *testing.T, n int) {
	t.Helper()
	synctest.Wait()
	if got, dump := bubble.Goroutines(); got > n {
		t.Fatalf("%d goroutines, want <= %d:\n%s", got, n, dump)
	}
}
