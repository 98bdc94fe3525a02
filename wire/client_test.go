package wire

// Cross-checks against the real client: amqp091-go runs over net.Pipe against
// fakeBroker, a minimal test-only peer built on this package's codec.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/amqpsim/amqpsim/internal/bubble"
	"net"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/amqpsim/amqpsim/protocol"
)

// waitTimeout bounds waits in fake time: every test runs in a synctest
// bubble, so it fires only if what is awaited can never come.
const waitTimeout = 5 * time.Second

// inbound is a method the client sent, with its content for content methods.
type inbound struct {
	channel    uint16
	method     Method
	header     *Header
	body       []byte
	bodyFrames []int // sizes of the body frames
	err        error // a read or decode error; ends the stream
}

// fakeBroker is the server side of one client connection. A goroutine reads
// and decodes everything the client sends (so the client never blocks on a
// write) and queues it on in; the test goroutine scripts the replies.
type fakeBroker struct {
	conn net.Conn
	fw   *FrameWriter
	in   chan inbound
	done chan struct{} // closed when the reader goroutine exits
}

func newFakeBroker(conn net.Conn) *fakeBroker {
	b := &fakeBroker{conn: conn, fw: NewFrameWriter(conn), in: make(chan inbound, 1000), done: make(chan struct{})}
	go b.read(NewFrameReader(conn))
	return b
}

func (b *fakeBroker) read(fr *FrameReader) {
	defer close(b.done)
	fail := func(err error) { b.in <- inbound{err: err} }
	if err := fr.ReadProtocolHeader(); err != nil {
		fail(err)
		return
	}
	var cur *inbound // content method awaiting its header and body
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			fail(err)
			return
		}
		switch f.Type {
		case FrameHeartbeat:
		case FrameMethod:
			m, err := DecodeMethod(f.Payload)
			if err != nil {
				fail(err)
				return
			}
			if tuneOk, ok := m.(*ConnectionTuneOk); ok {
				fr.SetFrameMax(tuneOk.FrameMax)
			}
			if m.HasContent() {
				cur = &inbound{channel: f.Channel, method: m}
				continue
			}
			b.in <- inbound{channel: f.Channel, method: m}
		case FrameHeader:
			h, err := DecodeHeader(f.Payload)
			if err != nil {
				fail(err)
				return
			}
			cur.header = &h
			cur.body = []byte{}
			if h.BodySize == 0 {
				b.in <- *cur
			}
		case FrameBody:
			cur.body = append(cur.body, f.Payload...)
			cur.bodyFrames = append(cur.bodyFrames, len(f.Payload))
			if uint64(len(cur.body)) >= cur.header.BodySize {
				b.in <- *cur
			}
		}
	}
}

// next returns the next thing the client sent.
func (b *fakeBroker) next(t *testing.T) inbound {
	t.Helper()
	select {
	case got := <-b.in:
		if got.err != nil {
			t.Fatalf("broker read: %v", got.err)
		}
		return got
	case <-time.After(waitTimeout):
		t.Fatal("timed out waiting for the client")
	}
	panic("unreachable")
}

// expect returns the next method the client sent, which must be a T.
func expect[T Method](t *testing.T, b *fakeBroker) (T, inbound) {
	t.Helper()
	got := b.next(t)
	m, ok := got.method.(T)
	if !ok {
		t.Fatalf("client sent %T %+v, want %T", got.method, got.method, m)
	}
	return m, got
}

func (b *fakeBroker) send(t *testing.T, channel uint16, m Method) {
	t.Helper()
	if err := b.fw.WriteMethod(channel, m); err != nil {
		t.Fatalf("broker send %v: %v", m.ID(), err)
	}
}

func (b *fakeBroker) sendContent(t *testing.T, channel uint16, m Method, p *protocol.Properties, body []byte) {
	t.Helper()
	if err := b.fw.WriteContent(channel, m, p, body); err != nil {
		t.Fatalf("broker send %v: %v", m.ID(), err)
	}
}

// async runs f in a goroutine; the returned function waits for its result.
func async[T any](f func() (T, error)) func(t *testing.T) T {
	type result struct {
		v   T
		err error
	}
	c := make(chan result, 1)
	go func() {
		v, err := f()
		c <- result{v, err}
	}()
	return func(t *testing.T) T {
		t.Helper()
		select {
		case r := <-c:
			if r.err != nil {
				t.Fatalf("client: %v", r.err)
			}
			return r.v
		case <-time.After(waitTimeout):
			t.Fatal("timed out waiting for the client call")
		}
		panic("unreachable")
	}
}

func async0(f func() error) func(t *testing.T) {
	w := async(func() (struct{}, error) { return struct{}{}, f() })
	return func(t *testing.T) { t.Helper(); w(t) }
}

func recv[T any](t *testing.T, c <-chan T) T {
	t.Helper()
	select {
	case v, ok := <-c:
		if !ok {
			t.Fatal("channel closed")
		}
		return v
	case <-time.After(waitTimeout):
		t.Fatalf("timed out waiting on %T", c)
	}
	panic("unreachable")
}

// dial connects amqp091-go to a fakeBroker over net.Pipe, checking the
// handshake, opens channel 1, and registers a cleanup that closes the
// connection the AMQP way, then the pipe, and checks no goroutine leaked.
func dial(t *testing.T, frameMax uint32) (*amqp.Connection, *amqp.Channel, *fakeBroker) {
	t.Helper()
	before, _ := bubble.Goroutines()
	clientConn, serverConn := net.Pipe()
	deadline := time.Now().Add(30 * time.Second) // nothing may hang
	_ = serverConn.SetDeadline(deadline)
	_ = clientConn.SetDeadline(deadline)
	b := newFakeBroker(serverConn)
	var conn *amqp.Connection
	t.Cleanup(func() {
		if conn != nil && !conn.IsClosed() {
			closed := async0(conn.Close)
			for i := 0; ; i++ {
				if i == maxFrames {
					t.Fatalf("%d frames from the closing client without connection.close", maxFrames)
				}
				got := b.next(t)
				if _, ok := got.method.(*ConnectionClose); ok {
					break
				}
			}
			b.send(t, 0, &ConnectionCloseOk{})
			closed(t)
		}
		_ = serverConn.Close()
		_ = clientConn.Close()
		select {
		case <-b.done:
		case <-time.After(waitTimeout):
			t.Error("broker reader did not exit")
		}
		checkGoroutines(t, before)
	})

	opened := async(func() (*amqp.Connection, error) {
		return amqp.Open(clientConn, amqp.Config{
			SASL:      []amqp.Authentication{&amqp.PlainAuth{Username: "guest", Password: "guest"}},
			Vhost:     "/",
			Locale:    "en_US",
			Heartbeat: 0,
		})
	})
	b.send(t, 0, &ConnectionStart{VersionMajor: 0, VersionMinor: 9,
		ServerProperties: protocol.Table{"product": "amqpsim", "capabilities": protocol.Table{"publisher_confirms": true}},
		Mechanisms:       "AMQPLAIN PLAIN", Locales: "en_US"})
	startOk, _ := expect[*ConnectionStartOk](t, b)
	if startOk.Mechanism != "PLAIN" || startOk.Response != "\x00guest\x00guest" || startOk.Locale != "en_US" {
		t.Errorf("start-ok %+v", startOk)
	}
	wantCaps := protocol.Table{"connection.blocked": true, "consumer_cancel_notify": true, "basic.nack": true, "publisher_confirms": true}
	if diff := cmp.Diff(wantCaps, startOk.ClientProperties["capabilities"]); diff != "" {
		t.Errorf("client capabilities (-want +got):\n%s", diff)
	}
	if p, ok := startOk.ClientProperties["product"].(string); !ok || p == "" {
		t.Errorf("client product %#v", startOk.ClientProperties["product"])
	}
	b.send(t, 0, &ConnectionTune{ChannelMax: 2047, FrameMax: frameMax, Heartbeat: 0})
	tuneOk, _ := expect[*ConnectionTuneOk](t, b)
	if *tuneOk != (ConnectionTuneOk{ChannelMax: 2047, FrameMax: frameMax, Heartbeat: 0}) {
		t.Errorf("tune-ok %+v", tuneOk)
	}
	b.fw.SetFrameMax(frameMax)
	open, _ := expect[*ConnectionOpen](t, b)
	if open.VirtualHost != "/" {
		t.Errorf("open %+v", open)
	}
	b.send(t, 0, &ConnectionOpenOk{})
	conn = opened(t)

	channel := async(conn.Channel)
	_, got := expect[*ChannelOpen](t, b)
	if got.channel != 1 {
		t.Errorf("channel.open on channel %d", got.channel)
	}
	b.send(t, 1, &ChannelOpenOk{})
	return conn, channel(t), b
}

// checkGoroutines checks that the goroutine count is back to before. It
// runs in the test's synctest bubble: synctest.Wait returns once every
// other goroutine of the bubble has exited or is blocked for good.
func checkGoroutines(t *testing.T, before int) {
	t.Helper()
	synctest.Wait()
	if n, dump := bubble.Goroutines(); n > before {
		t.Errorf("goroutines leaked: %d before, %d after\n%s", before, n, dump)
	}
}

// clientTable holds every type amqp091-go writes.
func clientTable() amqp.Table {
	return amqp.Table{
		"bool": true, "int8": int8(-8), "byte": byte(200), "int16": int16(-1600), "uint16": uint16(60000),
		"int": -42, "int32": int32(-320000), "uint32": uint32(4000000000), "int64": int64(-6400000000000),
		"float32": float32(3.5), "float64": 6.25e-3, "decimal": amqp.Decimal{Scale: 2, Value: -12345},
		"string": "héllo", "bytes": []byte{0, 1, 0xCE}, "time": time.Unix(1700000000, 0), "void": nil,
		"array": []any{int32(1), "two", amqp.Table{"x": true}, []any{}},
		"table": amqp.Table{"nested": amqp.Table{"deep": int64(1)}},
	}
}

// clientTableDecoded is clientTable as this package decodes it.
func clientTableDecoded() protocol.Table {
	return protocol.Table{
		"bool": true, "int8": int8(-8), "byte": uint8(200), "int16": int16(-1600), "uint16": uint16(60000),
		"int": int32(-42), "int32": int32(-320000), "uint32": uint32(4000000000), "int64": int64(-6400000000000),
		"float32": float32(3.5), "float64": 6.25e-3, "decimal": protocol.Decimal{Scale: 2, Value: -12345},
		"string": "héllo", "bytes": []byte{0, 1, 0xCE}, "time": time.Unix(1700000000, 0).UTC(), "void": nil,
		"array": []any{int32(1), "two", protocol.Table{"x": true}, []any{}},
		"table": protocol.Table{"nested": protocol.Table{"deep": int64(1)}},
	}
}

func TestClientPublish(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, ch, b := dial(t, 4096)
		body := bytes.Repeat([]byte("0123456789"), 1000)
		pub := amqp.Publishing{
			Headers: clientTable(), ContentType: "application/json", ContentEncoding: "gzip",
			DeliveryMode: amqp.Persistent, Priority: 9, CorrelationId: "corr", ReplyTo: "reply",
			Expiration: "60000", MessageId: "msg-1", Timestamp: time.Unix(1700000001, 0), Type: "order.created",
			UserId: "guest", AppId: "app", Body: body,
		}
		if err := ch.PublishWithContext(context.Background(), "ex", "rk", true, false, pub); err != nil {
			t.Fatal(err)
		}
		m, got := expect[*BasicPublish](t, b)
		if diff := cmp.Diff(&BasicPublish{Exchange: "ex", RoutingKey: "rk", Mandatory: true}, m); diff != "" {
			t.Errorf("basic.publish (-want +got):\n%s", diff)
		}
		want := Header{BodySize: 10000, Properties: protocol.Properties{
			ContentType: "application/json", ContentEncoding: "gzip", Headers: clientTableDecoded(),
			DeliveryMode: 2, Priority: 9, CorrelationID: "corr", ReplyTo: "reply", Expiration: "60000",
			MessageID: "msg-1", Timestamp: time.Unix(1700000001, 0).UTC(), Type: "order.created",
			UserID: "guest", AppID: "app",
		}}
		if diff := cmp.Diff(&want, got.header); diff != "" {
			t.Errorf("content header (-want +got):\n%s", diff)
		}
		if !bytes.Equal(got.body, body) || !cmp.Equal(got.bodyFrames, []int{4088, 4088, 1824}) {
			t.Errorf("body of %d bytes in frames %v", len(got.body), got.bodyFrames)
		}
	})
}

func TestClientConsumeDeliver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, ch, b := dial(t, 4096)
		consumed := async(func() (<-chan amqp.Delivery, error) {
			return ch.Consume("q", "ctag", false, true, false, false, amqp.Table{"x-priority": int32(5)})
		})
		consume, _ := expect[*BasicConsume](t, b)
		if diff := cmp.Diff(&BasicConsume{Queue: "q", ConsumerTag: "ctag", Exclusive: true,
			Arguments: protocol.Table{"x-priority": int32(5)}}, consume); diff != "" {
			t.Errorf("basic.consume (-want +got):\n%s", diff)
		}
		b.send(t, 1, &BasicConsumeOk{ConsumerTag: "ctag"})
		deliveries := consumed(t)

		props := allProperties()
		body := bytes.Repeat([]byte{0xCE, 0}, 5000)
		b.sendContent(t, 1, &BasicDeliver{ConsumerTag: "ctag", DeliveryTag: 42, Redelivered: true, Exchange: "ex", RoutingKey: "rk"}, &props, body)
		d := recv(t, deliveries)
		want := amqp.Delivery{
			Headers: amqp.Table{
				"bool": true, "false": false, "int8": int8(-8), "uint8": byte(200), "int16": int16(-1600),
				"uint16": uint16(60000), "int32": int32(-320000), "uint32": uint32(4000000000),
				"int64": int64(-6400000000000), "float32": float32(3.5), "float64": 6.25e-3,
				"decimal": amqp.Decimal{Scale: 2, Value: -12345}, "string": "héllo", "bytes": []byte{0, 1, 0xCE, 0xFF},
				"time": time.Unix(1700000000, 0), "void": nil,
				"array": []any{int32(1), "two", []any(nil), amqp.Table{}, nil, []any{false}},
				"table": amqp.Table{"nested": amqp.Table{"deep": int64(1)}, "empty": amqp.Table{}},
				"":      "empty key",
			},
			ContentType: props.ContentType, ContentEncoding: props.ContentEncoding, DeliveryMode: 2, Priority: 9,
			CorrelationId: props.CorrelationID, ReplyTo: props.ReplyTo, Expiration: props.Expiration,
			MessageId: props.MessageID, Timestamp: props.Timestamp, Type: props.Type, UserId: props.UserID,
			AppId: props.AppID, ConsumerTag: "ctag", DeliveryTag: 42, Redelivered: true, Exchange: "ex",
			RoutingKey: "rk", Body: body,
		}
		if diff := cmp.Diff(want, d, cmpopts.IgnoreFields(amqp.Delivery{}, "Acknowledger")); diff != "" {
			t.Errorf("delivery (-want +got):\n%s", diff)
		}

		// Empty bodies and acknowledgements.
		for tag := uint64(43); tag <= 45; tag++ {
			b.sendContent(t, 1, &BasicDeliver{ConsumerTag: "ctag", DeliveryTag: tag}, nil, nil)
		}
		d43, d44, d45 := recv(t, deliveries), recv(t, deliveries), recv(t, deliveries)
		if d43.DeliveryTag != 43 || len(d43.Body) != 0 || d45.DeliveryTag != 45 {
			t.Errorf("empty deliveries %+v %+v", d43, d45)
		}
		if err := errors.Join(d.Ack(true), d43.Nack(false, true), d44.Reject(false), d45.Nack(true, false)); err != nil {
			t.Fatal(err)
		}
		for _, want := range []Method{
			&BasicAck{DeliveryTag: 42, Multiple: true}, &BasicNack{DeliveryTag: 43, Requeue: true},
			&BasicReject{DeliveryTag: 44}, &BasicNack{DeliveryTag: 45, Multiple: true},
		} {
			if diff := cmp.Diff(want, b.next(t).method); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		}
	})
}

func TestClientGet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, ch, b := dial(t, 131072)
		type got struct {
			d  amqp.Delivery
			ok bool
		}
		get := func() func(*testing.T) got {
			return async(func() (got, error) { d, ok, err := ch.Get("q", true); return got{d, ok}, err })
		}
		wait := get()
		if diff := cmp.Diff(&BasicGet{Queue: "q", NoAck: true}, b.next(t).method); diff != "" {
			t.Errorf("basic.get (-want +got):\n%s", diff)
		}
		b.sendContent(t, 1, &BasicGetOk{DeliveryTag: 5, Redelivered: true, Exchange: "ex", RoutingKey: "q", MessageCount: 2},
			&protocol.Properties{ContentType: "text/plain"}, []byte("hello"))
		r := wait(t)
		if !r.ok || r.d.DeliveryTag != 5 || !r.d.Redelivered || r.d.Exchange != "ex" || r.d.RoutingKey != "q" ||
			r.d.MessageCount != 2 || r.d.ContentType != "text/plain" || string(r.d.Body) != "hello" {
			t.Errorf("get-ok delivery %+v", r)
		}
		wait = get()
		expect[*BasicGet](t, b)
		b.send(t, 1, &BasicGetEmpty{})
		if r := wait(t); r.ok {
			t.Errorf("get-empty gave %+v", r)
		}
	})
}

func TestClientReturnAndConfirm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, ch, b := dial(t, 131072)
		wait := async0(func() error { return ch.Confirm(false) })
		expect[*ConfirmSelect](t, b)
		b.send(t, 1, &ConfirmSelectOk{})
		wait(t)
		returns := ch.NotifyReturn(make(chan amqp.Return, 1))
		confirms := ch.NotifyPublish(make(chan amqp.Confirmation, 2))
		for i := range 2 {
			if err := ch.PublishWithContext(context.Background(), "", "nowhere", true, false, amqp.Publishing{Body: []byte{byte(i)}}); err != nil {
				t.Fatal(err)
			}
			expect[*BasicPublish](t, b)
		}
		b.sendContent(t, 1, &BasicReturn{ReplyCode: protocol.NoRoute, ReplyText: "NO_ROUTE", RoutingKey: "nowhere"},
			&protocol.Properties{MessageID: "m"}, []byte{0})
		b.send(t, 1, &BasicAck{DeliveryTag: 1})
		b.send(t, 1, &BasicNack{DeliveryTag: 2})
		ret := recv(t, returns)
		if ret.ReplyCode != 312 || ret.ReplyText != "NO_ROUTE" || ret.RoutingKey != "nowhere" || ret.MessageId != "m" || !bytes.Equal(ret.Body, []byte{0}) {
			t.Errorf("return %+v", ret)
		}
		if c1, c2 := recv(t, confirms), recv(t, confirms); c1 != (amqp.Confirmation{DeliveryTag: 1, Ack: true}) || c2 != (amqp.Confirmation{DeliveryTag: 2}) {
			t.Errorf("confirms %+v %+v", c1, c2)
		}
	})
}

// TestClientSynchronousMethods runs each synchronous call the client makes,
// checking the method decoded and the client's view of the reply.
func TestClientSynchronousMethods(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		conn, ch, b := dial(t, 131072)
		args := amqp.Table{"x-message-ttl": int32(60000), "x-queue-type": "classic", "x-max-length": int64(10)}
		wantArgs := protocol.Table{"x-message-ttl": int32(60000), "x-queue-type": "classic", "x-max-length": int64(10)}
		var result any
		for _, tc := range []struct {
			name  string
			call  func() error
			want  Method
			reply Method
			check any // expected result, when the call sets one
		}{
			{"queue.declare", func() (err error) { result, err = ch.QueueDeclare("q", true, false, true, false, args); return },
				&QueueDeclare{Queue: "q", Durable: true, Exclusive: true, Arguments: wantArgs},
				&QueueDeclareOk{Queue: "q", MessageCount: 7, ConsumerCount: 3}, amqp.Queue{Name: "q", Messages: 7, Consumers: 3}},
			{"queue.declare passive", func() (err error) { result, err = ch.QueueDeclarePassive("", false, true, false, false, nil); return },
				&QueueDeclare{Passive: true, AutoDelete: true, Arguments: protocol.Table{}},
				&QueueDeclareOk{Queue: "amq.gen-x"}, amqp.Queue{Name: "amq.gen-x"}},
			{"queue.bind", func() error { return ch.QueueBind("q", "k", "ex", false, args) },
				&QueueBind{Queue: "q", Exchange: "ex", RoutingKey: "k", Arguments: wantArgs}, &QueueBindOk{}, nil},
			{"queue.unbind", func() error { return ch.QueueUnbind("q", "k", "ex", nil) },
				&QueueUnbind{Queue: "q", Exchange: "ex", RoutingKey: "k", Arguments: protocol.Table{}}, &QueueUnbindOk{}, nil},
			{"queue.purge", func() (err error) { result, err = ch.QueuePurge("q", false); return },
				&QueuePurge{Queue: "q"}, &QueuePurgeOk{MessageCount: 9}, 9},
			{"queue.delete", func() (err error) { result, err = ch.QueueDelete("q", true, true, false); return },
				&QueueDelete{Queue: "q", IfUnused: true, IfEmpty: true}, &QueueDeleteOk{MessageCount: 4}, 4},
			{"exchange.declare", func() error {
				return ch.ExchangeDeclare("ex", "topic", true, false, true, false, amqp.Table{"alternate-exchange": "ae"})
			},
				&ExchangeDeclare{Exchange: "ex", Type: "topic", Durable: true, Internal: true, Arguments: protocol.Table{"alternate-exchange": "ae"}},
				&ExchangeDeclareOk{}, nil},
			{"exchange.declare passive", func() error { return ch.ExchangeDeclarePassive("ex", "direct", false, true, false, false, nil) },
				&ExchangeDeclare{Exchange: "ex", Type: "direct", Passive: true, AutoDelete: true, Arguments: protocol.Table{}},
				&ExchangeDeclareOk{}, nil},
			{"exchange.delete", func() error { return ch.ExchangeDelete("ex", true, false) },
				&ExchangeDelete{Exchange: "ex", IfUnused: true}, &ExchangeDeleteOk{}, nil},
			{"exchange.bind", func() error { return ch.ExchangeBind("d", "k", "s", false, args) },
				&ExchangeBind{Destination: "d", Source: "s", RoutingKey: "k", Arguments: wantArgs}, &ExchangeBindOk{}, nil},
			{"exchange.unbind", func() error { return ch.ExchangeUnbind("d", "k", "s", false, nil) },
				&ExchangeUnbind{Destination: "d", Source: "s", RoutingKey: "k", Arguments: protocol.Table{}}, &ExchangeUnbindOk{}, nil},
			{"basic.qos", func() error { return ch.Qos(3, 0, true) },
				&BasicQos{PrefetchCount: 3, Global: true}, &BasicQosOk{}, nil},
			{"basic.cancel", func() error { return ch.Cancel("ctag", false) },
				&BasicCancel{ConsumerTag: "ctag"}, &BasicCancelOk{ConsumerTag: "ctag"}, nil},
			//lint:ignore SA1019 the row tests the codec's basic.recover, which amqp091-go deprecates.
			{"basic.recover", func() error { return ch.Recover(true) },
				&BasicRecover{Requeue: true}, &BasicRecoverOk{}, nil},
			{"channel.flow", func() error { return ch.Flow(false) },
				&ChannelFlow{Active: false}, &ChannelFlowOk{Active: false}, nil},
			{"tx.select", ch.Tx, &TxSelect{}, &TxSelectOk{}, nil},
			{"tx.commit", ch.TxCommit, &TxCommit{}, &TxCommitOk{}, nil},
			{"tx.rollback", ch.TxRollback, &TxRollback{}, &TxRollbackOk{}, nil},
			{"connection.update-secret", func() error { return conn.UpdateSecret("new-secret", "rotation") },
				&ConnectionUpdateSecret{NewSecret: "new-secret", Reason: "rotation"}, &ConnectionUpdateSecretOk{}, nil},
			{"channel.close", ch.Close, &ChannelClose{ReplyCode: 200}, &ChannelCloseOk{}, nil},
		} {
			result = nil
			wait := async0(tc.call)
			got := b.next(t)
			if diff := cmp.Diff(tc.want, got.method); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tc.name, diff)
			}
			b.send(t, got.channel, tc.reply)
			wait(t)
			if tc.check != nil && !cmp.Equal(tc.check, result) {
				t.Errorf("%s: client got %#v, want %#v", tc.name, result, tc.check)
			}
		}
	})
}

// TestClientServerInitiated sends the methods only a server starts.
func TestClientServerInitiated(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		conn, ch, b := dial(t, 131072)
		blocked := conn.NotifyBlocked(make(chan amqp.Blocking, 2))
		cancels := ch.NotifyCancel(make(chan string, 1))
		chClosed := ch.NotifyClose(make(chan *amqp.Error, 1))

		b.send(t, 0, &ConnectionBlocked{Reason: "low on memory"})
		b.send(t, 0, &ConnectionUnblocked{})
		if b1, b2 := recv(t, blocked), recv(t, blocked); b1 != (amqp.Blocking{Active: true, Reason: "low on memory"}) || b2.Active {
			t.Errorf("blocked %+v, %+v", b1, b2)
		}
		b.send(t, 1, &BasicCancel{ConsumerTag: "ctag", NoWait: true})
		if tag := recv(t, cancels); tag != "ctag" {
			t.Errorf("cancel %q", tag)
		}
		b.send(t, 1, &ChannelClose{ReplyCode: protocol.NotFound, ReplyText: "NOT_FOUND - no queue 'x'", ClassID: 50, MethodID: 10})
		expect[*ChannelCloseOk](t, b)
		e := recv(t, chClosed)
		if e.Code != 404 || e.Reason != "NOT_FOUND - no queue 'x'" || !e.Server {
			t.Errorf("channel close %+v", e)
		}
		// A wire.Error maps onto the connection.close a server sends.
		_, err := DecodeMethod([]byte{0, 60, 0, 99})
		var werr *Error
		if !errors.As(err, &werr) {
			t.Fatal(err)
		}
		perr := werr.AMQP()
		connClosed := conn.NotifyClose(make(chan *amqp.Error, 1))
		b.send(t, 0, &ConnectionClose{ReplyCode: uint16(perr.Code), ReplyText: perr.Text, ClassID: perr.Method.Class, MethodID: perr.Method.ID})
		expect[*ConnectionCloseOk](t, b)
		e = recv(t, connClosed)
		if e.Code != 503 || !strings.HasPrefix(e.Reason, "COMMAND_INVALID - unknown method") {
			t.Errorf("connection close %+v", e)
		}
	})
}

// TestClientFrameMax: the client enforces the negotiated frame-max on what
// the broker sends, so the writer must split bodies to fit it.
func TestClientFrameMax(t *testing.T) {
	for _, frameMax := range []uint32{4096, 4097, 65536} {
		t.Run(fmt.Sprint(frameMax), bubble.Subtest(func(t *testing.T) {
			_, ch, b := dial(t, frameMax)
			wait := async(func() (<-chan amqp.Delivery, error) { return ch.Consume("q", "c", true, false, false, false, nil) })
			expect[*BasicConsume](t, b)
			b.send(t, 1, &BasicConsumeOk{ConsumerTag: "c"})
			deliveries := wait(t)
			body := make([]byte, 3*frameMax+1)
			for i := range body {
				body[i] = byte(i)
			}
			b.sendContent(t, 1, &BasicDeliver{ConsumerTag: "c", DeliveryTag: 1}, nil, body)
			if d := recv(t, deliveries); !bytes.Equal(d.Body, body) {
				t.Errorf("body of %d bytes, want %d", len(d.Body), len(body))
			}
		}))
	}
}
