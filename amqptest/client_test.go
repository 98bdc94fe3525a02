package amqptest_test

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/amqpsim/amqpsim/amqptest"
	"github.com/amqpsim/amqpsim/sim"
)

// The real client, github.com/rabbitmq/amqp091-go, against the simulator
// over the in-memory transport. Every test but TestTransports runs in a
// synctest bubble, so the waits below are on the bubble's fake clock: a
// timer fires only once every goroutine is blocked, when nothing else can
// arrive. They are exact, whatever the machine's load.

// wait bounds recv in fake time: it fires only if the value never comes.
const wait = 5 * time.Second

func dial(t *testing.T, srv *amqptest.Server) *amqp.Connection {
	t.Helper()
	conn, err := amqp.DialConfig(srv.URL(), amqp.Config{Dial: srv.Dial})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { closeConn(t, conn) })
	return conn
}

func channel(t *testing.T, conn *amqp.Connection) *amqp.Channel {
	t.Helper()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatalf("channel: %v", err)
	}
	return ch
}

func declare(t *testing.T, ch *amqp.Channel, name string) {
	t.Helper()
	if _, err := ch.QueueDeclare(name, false, false, false, false, nil); err != nil {
		t.Fatalf("declare %s: %v", name, err)
	}
}

// declareQuorum declares a quorum queue, whose deliveries time out on
// every release (from 4.3 a classic queue's do not).
func declareQuorum(t *testing.T, ch *amqp.Channel, name string) {
	t.Helper()
	if _, err := ch.QueueDeclare(name, true, false, false, false, amqp.Table{"x-queue-type": "quorum"}); err != nil {
		t.Fatalf("declare %s: %v", name, err)
	}
}

func publish(t *testing.T, ch *amqp.Channel, key string, bodies ...string) {
	t.Helper()
	for _, b := range bodies {
		if err := ch.Publish("", key, false, false, amqp.Publishing{Body: []byte(b)}); err != nil {
			t.Fatalf("publish: %v", err)
		}
	}
}

// recv receives from c, and fails the test, saying what it waited for,
// if nothing comes within wait: in a bubble its fake time, which moves on
// while heartbeats are due, so that a receive that can never complete
// fails instead of spinning through fake time for ever.
func recv[T any](t testing.TB, c <-chan T) T {
	t.Helper()
	select {
	case v, ok := <-c:
		if !ok {
			t.Fatalf("%T closed", c)
		}
		return v
	case <-time.After(wait):
		t.Fatalf("waited %v on %T", wait, c)
	}
	panic("unreachable")
}

// confirmed waits, as recv does, for a publisher confirm and reports
// whether it was an ack; it fails the test if none comes.
func confirmed(t testing.TB, dc *amqp.DeferredConfirmation) bool {
	t.Helper()
	select {
	case <-dc.Done():
		return dc.Acked()
	case <-time.After(wait):
		t.Fatalf("waited %v for the confirm of publish %d", wait, dc.DeliveryTag)
	}
	panic("unreachable")
}

// closeConn closes conn, bounded as recv is: amqp091-go's Close waits for
// connection.close-ok without a deadline, and a connection whose frames
// an alarm holds (or a broken server) never sends it; the server's Close,
// a cleanup that runs after, then drops the connection.
func closeConn(t testing.TB, conn *amqp.Connection) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		conn.Close()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(wait):
		t.Errorf("waited %v for connection.close-ok", wait)
	}
}

// waitGroup waits, as recv does, for wg, and fails the test with what
// the goroutines were doing if they do not end.
func waitGroup(t testing.TB, wg *sync.WaitGroup, what string) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(wait):
		t.Fatalf("waited %v for %s", wait, what)
	}
}

// none checks that nothing arrives on c: in a bubble the timer fires only
// once the server and the client are idle.
func none[T any](t *testing.T, c <-chan T) {
	t.Helper()
	select {
	case v := <-c:
		t.Fatalf("unexpected %v", v)
	case <-time.After(50 * time.Millisecond):
	}
}

func stats(t *testing.T, srv *amqptest.Server, q string) sim.QueueStats {
	t.Helper()
	s, err := srv.Broker().QueueStats("/", q)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestHandshake(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := amqptest.NewServer(t, amqptest.WithVhosts("other"))
		conn := dial(t, srv)
		if conn.Properties["product"] != "RabbitMQ" || conn.Properties["version"] != srv.Broker().Profile().ServerVersion || conn.Major != 0 || conn.Minor != 9 {
			t.Errorf("properties %v, version %d-%d", conn.Properties, conn.Major, conn.Minor)
		}
		caps := conn.Properties["capabilities"].(amqp.Table)
		for _, c := range []string{"publisher_confirms", "basic.nack", "consumer_cancel_notify", "per_consumer_qos", "consumer_priorities"} {
			if caps[c] != true {
				t.Errorf("capability %s = %v", c, caps[c])
			}
		}
		if c, err := amqp.DialConfig(srv.VhostURL("other"), amqp.Config{Dial: srv.Dial}); err != nil {
			t.Errorf("vhost other: %v", err)
		} else {
			c.Close()
		}

		_, err := amqp.DialConfig("amqp://guest:wrong@amqpsim", amqp.Config{Dial: srv.Dial})
		if !errors.Is(err, amqp.ErrCredentials) {
			t.Errorf("bad password: %v, want ErrCredentials", err)
		}
		_, err = amqp.DialConfig(srv.VhostURL("nosuch"), amqp.Config{Dial: srv.Dial})
		var aerr *amqp.Error
		if !errors.As(err, &aerr) || aerr.Code != 530 || aerr.Reason != "NOT_ALLOWED - vhost nosuch not found" {
			t.Errorf("missing vhost: %#v", err)
		}
	})
}

func TestDeclareGetAndCounts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := amqptest.NewServer(t)
		ch := channel(t, dial(t, srv))
		declare(t, ch, "q")
		publish(t, ch, "q", "a", "b")
		q, err := ch.QueueDeclarePassive("q", false, false, false, false, nil)
		if err != nil || q.Messages != 2 {
			t.Fatalf("passive declare = %+v, %v", q, err)
		}
		d, ok, err := ch.Get("q", false)
		if err != nil || !ok || string(d.Body) != "a" || d.MessageCount != 1 || d.DeliveryTag != 1 {
			t.Fatalf("get = %+v %v %v", d, ok, err)
		}
		if err := d.Nack(false, true); err != nil {
			t.Fatal(err)
		}
		d, _, _ = ch.Get("q", true)
		if string(d.Body) != "a" || !d.Redelivered {
			t.Errorf("after nack requeue: %q redelivered=%t", d.Body, d.Redelivered)
		}
		ch.Get("q", true)
		if _, ok, err := ch.Get("q", true); ok || err != nil {
			t.Errorf("get on empty queue = %v, %v", ok, err)
		}
		if n, err := ch.QueueDelete("q", false, false, false); err != nil || n != 0 {
			t.Errorf("delete = %d, %v", n, err)
		}
	})
}

// TestPrefetchWindow: a consumer with prefetch 2 holds at most 2 unacked
// deliveries; each ack lets one more through.
func TestPrefetchWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := amqptest.NewServer(t)
		ch := channel(t, dial(t, srv))
		declare(t, ch, "work")
		publish(t, ch, "work", "1", "2", "3", "4", "5")
		if err := ch.Qos(2, 0, false); err != nil {
			t.Fatal(err)
		}
		ds, err := ch.Consume("work", "c1", false, false, false, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for range 2 {
			got = append(got, string(recv(t, ds).Body))
		}
		none(t, ds)
		if s := stats(t, srv, "work"); s.Unacked != 2 || s.Ready != 3 || s.Consumers != 1 {
			t.Fatalf("stats = %+v", s)
		}
		for len(got) < 5 {
			if err := ch.Ack(uint64(len(got)-1), false); err != nil {
				t.Fatal(err)
			}
			got = append(got, string(recv(t, ds).Body))
		}
		if diff := cmp.Diff([]string{"1", "2", "3", "4", "5"}, got); diff != "" {
			t.Errorf("order (-want +got):\n%s", diff)
		}
		if err := ch.Ack(5, true); err != nil {
			t.Fatal(err)
		}
		none(t, ds)
		if s := stats(t, srv, "work"); s.Unacked != 0 || s.Ready != 0 {
			t.Errorf("stats = %+v", s)
		}
	})
}

func TestAckNackReject(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := amqptest.NewServer(t)
		ch := channel(t, dial(t, srv))
		declare(t, ch, "q")
		publish(t, ch, "q", "a", "b", "c", "d")
		ds, _ := ch.Consume("q", "", false, false, false, false, nil)
		var tags []uint64
		for range 4 {
			tags = append(tags, recv(t, ds).DeliveryTag)
		}
		ch.Ack(tags[1], true)         // a, b
		ch.Reject(tags[2], false)     // c dropped
		ch.Nack(tags[3], false, true) // d requeued and redelivered
		d := recv(t, ds)
		if string(d.Body) != "d" || !d.Redelivered || d.DeliveryTag != 5 {
			t.Fatalf("redelivery = %q redelivered=%t tag=%d", d.Body, d.Redelivered, d.DeliveryTag)
		}
		d.Ack(false)
		none(t, ds)
		if s := stats(t, srv, "q"); s.Ready != 0 || s.Unacked != 0 {
			t.Errorf("stats = %+v", s)
		}
	})
}

func TestPublisherConfirms(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := amqptest.NewServer(t)
		ch := channel(t, dial(t, srv))
		declare(t, ch, "q")
		if err := ch.Confirm(false); err != nil {
			t.Fatal(err)
		}
		confirms := ch.NotifyPublish(make(chan amqp.Confirmation, 10))
		publish(t, ch, "q", "1", "2", "3")
		for tag := uint64(1); tag <= 3; tag++ {
			if c := recv(t, confirms); c.DeliveryTag != tag || !c.Ack {
				t.Errorf("confirm %+v, want ack of %d", c, tag)
			}
		}
		dc, err := ch.PublishWithDeferredConfirm("", "q", false, false, amqp.Publishing{Body: []byte("4")})
		if err != nil {
			t.Fatal(err)
		}
		if !confirmed(t, dc) {
			t.Error("deferred confirm: nack")
		}
	})
}

func TestMandatoryReturn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := amqptest.NewServer(t)
		ch := channel(t, dial(t, srv))
		returns := ch.NotifyReturn(make(chan amqp.Return, 1))
		err := ch.Publish("", "nowhere", true, false, amqp.Publishing{Body: []byte("lost"), MessageId: "m1"})
		if err != nil {
			t.Fatal(err)
		}
		r := recv(t, returns)
		if r.ReplyCode != 312 || r.ReplyText != "NO_ROUTE" || r.RoutingKey != "nowhere" || string(r.Body) != "lost" || r.MessageId != "m1" {
			t.Errorf("return = %+v", r)
		}
	})
}

// TestCancelNotifyOnQueueDelete: deleting a queue cancels its consumers
// with basic.cancel, which amqp091-go reports on NotifyCancel.
func TestCancelNotifyOnQueueDelete(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := amqptest.NewServer(t)
		conn := dial(t, srv)
		ch := channel(t, conn)
		declare(t, ch, "doomed")
		cancels := ch.NotifyCancel(make(chan string, 1))
		ds, _ := ch.Consume("doomed", "ctag-1", false, false, false, false, nil)
		if _, err := channel(t, conn).QueueDelete("doomed", false, false, false); err != nil {
			t.Fatal(err)
		}
		if tag := recv(t, cancels); tag != "ctag-1" {
			t.Errorf("cancelled %q", tag)
		}
		select {
		case _, ok := <-ds:
			if ok {
				t.Error("delivery after cancel")
			}
		case <-time.After(wait):
			t.Error("deliveries channel not closed")
		}
	})
}

// TestChannelError: an unknown delivery tag closes the channel with RabbitMQ's
// 406 and text; the connection stays usable.
func TestChannelError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := amqptest.NewServer(t)
		conn := dial(t, srv)
		ch := channel(t, conn)
		closed := ch.NotifyClose(make(chan *amqp.Error, 1))
		ch.Ack(99, false)
		want := &amqp.Error{Code: 406, Reason: "PRECONDITION_FAILED - unknown delivery tag 99", Server: true, Recover: true}
		if diff := cmp.Diff(want, recv(t, closed)); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
		if conn.IsClosed() {
			t.Fatal("connection closed by a channel error")
		}
		ch2 := channel(t, conn)
		declare(t, ch2, "still-fine")
	})
}

// TestDoubleAckOnQuorumQueue: amqp091-go acking a quorum queue's delivery
// twice (prefetch 1, a second message ready) gets its channel closed with
// 406, and its connection stays open: the second message, released by the
// first ack, is either delivered before the close or not at all, never on
// the closing channel (for which amqp091-go would close the connection
// with 504), as with RabbitMQ 3.10.8 (measured: no delivery in 9 runs of
// 10, the connection open). The message is ready again.
func TestDoubleAckOnQuorumQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := amqptest.NewServer(t)
		conn := dial(t, srv)
		ch := channel(t, conn)
		if _, err := ch.QueueDeclare("q", true, false, false, false, amqp.Table{"x-queue-type": "quorum"}); err != nil {
			t.Fatal(err)
		}
		publish(t, ch, "q", "m1", "m2")
		if err := ch.Qos(1, 0, false); err != nil {
			t.Fatal(err)
		}
		closed := ch.NotifyClose(make(chan *amqp.Error, 1))
		ds, err := ch.Consume("q", "c", false, false, false, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		d := recv(t, ds)
		d.Ack(false)
		d.Ack(false)
		if e := recv(t, closed); e.Code != 406 {
			t.Errorf("channel closed with %v, want 406", e)
		}
		synctest.Wait()
		if conn.IsClosed() {
			t.Fatal("the connection closed")
		}
		if s := stats(t, srv, "q"); s.Ready != 1 || s.Unacked != 0 {
			t.Errorf("queue %+v, want m2 ready", s)
		}
	})
}

// TestHardError: basic.qos with prefetch_size closes the connection with
// 540, as RabbitMQ does.
func TestHardError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := amqptest.NewServer(t)
		conn := dial(t, srv)
		closed := conn.NotifyClose(make(chan *amqp.Error, 1))
		ch := channel(t, conn)
		err := ch.Qos(0, 5, false)
		if err == nil {
			t.Fatal("qos with prefetch_size succeeded")
		}
		want := &amqp.Error{Code: 540, Reason: "NOT_IMPLEMENTED - prefetch_size!=0 (5)", Server: true}
		if diff := cmp.Diff(want, recv(t, closed)); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
		if !conn.IsClosed() {
			t.Error("connection still open")
		}
	})
}

// TestBrokerSideClose: fault injection from the broker's side.
func TestBrokerSideClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := amqptest.NewServer(t)
		conn, err := amqp.DialConfig(srv.URL(), amqp.Config{Dial: srv.Dial, Properties: amqp.Table{"connection_name": "app"}})
		if err != nil {
			t.Fatal(err)
		}
		ch := channel(t, conn)
		chClosed := ch.NotifyClose(make(chan *amqp.Error, 1))
		if err := srv.CloseChannel("app", 1, 406, "injected"); err != nil {
			t.Fatal(err)
		}
		if e := recv(t, chClosed); e.Code != 406 || e.Reason != "PRECONDITION_FAILED - injected" {
			t.Errorf("channel close = %+v", e)
		}
		connClosed := conn.NotifyClose(make(chan *amqp.Error, 1))
		srv.CloseClientConnections("Closed via test")
		want := &amqp.Error{Code: 320, Reason: "CONNECTION_FORCED - Closed via test", Server: true}
		if diff := cmp.Diff(want, recv(t, connClosed)); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
		if n := len(srv.Broker().Connections()); n != 0 {
			t.Errorf("%d connections left", n)
		}
	})
}

// TestConsumeOkBeforeDeliveries: deliveries caused by basic.consume reach
// the client after consume-ok, in queue order.
func TestConsumeOkBeforeDeliveries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := amqptest.NewServer(t)
		ch := channel(t, dial(t, srv))
		declare(t, ch, "q")
		var want []string
		for i := range 50 {
			want = append(want, fmt.Sprint(i))
		}
		publish(t, ch, "q", want...)
		ds, err := ch.Consume("q", "", true, false, false, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for range want {
			got = append(got, string(recv(t, ds).Body))
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
}

// TestLargeBody: bodies larger than frame_max are split and reassembled.
func TestLargeBody(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := amqptest.NewServer(t)
		ch := channel(t, dial(t, srv))
		declare(t, ch, "big")
		body := bytes.Repeat([]byte("0123456789"), 50_000) // 500 kB, 4 body frames
		headers := amqp.Table{"n": int32(7), "s": "x", "nested": amqp.Table{"a": []any{int64(1), "b"}}}
		err := ch.Publish("", "big", false, false, amqp.Publishing{Body: body, Headers: headers, ContentType: "text/plain", Priority: 3})
		if err != nil {
			t.Fatal(err)
		}
		d, ok, err := ch.Get("big", true)
		if err != nil || !ok || !bytes.Equal(d.Body, body) {
			t.Fatalf("get: ok=%v err=%v len=%d", ok, err, len(d.Body))
		}
		if diff := cmp.Diff(headers, d.Headers); diff != "" || d.ContentType != "text/plain" || d.Priority != 3 {
			t.Errorf("properties: %s %q %d", diff, d.ContentType, d.Priority)
		}
	})
}

// TestTransports: the same client over net.Pipe and over TCP.
func TestTransports(t *testing.T) {
	srv := amqptest.NewServer(t)
	pipeDial := func(network, addr string) (net.Conn, error) {
		client, server := net.Pipe()
		return client, srv.Wire().ServeConn(server)
	}
	tcp := amqptest.NewServer(t, amqptest.WithTCP())
	for name, cfg := range map[string]struct {
		url  string
		dial func(string, string) (net.Conn, error)
	}{
		"net.Pipe": {srv.URL(), pipeDial},
		"tcp":      {tcp.URL(), nil},
	} {
		t.Run(name, func(t *testing.T) {
			conn, err := amqp.DialConfig(cfg.url, amqp.Config{Dial: cfg.dial})
			if err != nil {
				t.Fatal(err)
			}
			defer closeConn(t, conn)
			ch := channel(t, conn)
			declare(t, ch, "q-"+name)
			publish(t, ch, "q-"+name, "hello")
			ds, _ := ch.Consume("q-"+name, "", false, false, false, false, nil)
			// Outside a bubble (TCP cannot be in one): real time.
			d := recvWithin(t, ds)
			if string(d.Body) != "hello" {
				t.Errorf("body %q", d.Body)
			}
			d.Ack(false)
		})
	}
}

// TestConsumerTimeout: on RabbitMQ 4.0, moving the broker's virtual
// clock past consumer_timeout closes the channel holding an old unacked
// delivery, at its tick.
func TestConsumerTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := amqptest.NewServer(t, amqptest.WithConfig(sim.Config{Version: sim.V4_0}))
		ch := channel(t, dial(t, srv))
		closed := ch.NotifyClose(make(chan *amqp.Error, 1))
		declareQuorum(t, ch, "slow")
		publish(t, ch, "slow", "x")
		ds, _ := ch.Consume("slow", "", false, false, false, false, nil)
		recv(t, ds)
		srv.Broker().Advance(31 * time.Minute)
		e := recv(t, closed)
		if e.Code != 406 || e.Reason != "PRECONDITION_FAILED - delivery acknowledgement on channel 1 timed out. Timeout value used: 1800000 ms. This timeout value can be configured, see consumers doc guide to learn more" {
			t.Errorf("close = %+v", e)
		}
		if s := stats(t, srv, "slow"); s.Ready != 1 || s.Unacked != 0 {
			t.Errorf("stats = %+v", s)
		}
	})
}

// TestConsumerTimeoutCancels43: on RabbitMQ 4.3 a quorum queue times the
// delivery out itself, 30 minutes after it, and the client hears
// basic.cancel on a channel that stays open. The consumer stays too:
// the client may still ack the old tag, after which the queue delivers
// to the consumer again, which amqp091-go, having closed its delivery
// channel, never hands to the code: the message stays unacked until the
// channel closes.
func TestConsumerTimeoutCancels43(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := amqptest.NewServer(t)
		ch := channel(t, dial(t, srv))
		closed := ch.NotifyClose(make(chan *amqp.Error, 1))
		cancels := ch.NotifyCancel(make(chan string, 1))
		declareQuorum(t, ch, "slow")
		publish(t, ch, "slow", "x")
		ds, _ := ch.Consume("slow", "A", false, false, false, false, nil)
		d := recv(t, ds)
		srv.Broker().Advance(30*time.Minute - time.Millisecond)
		synctest.Wait()
		if len(cancels) != 0 {
			t.Fatal("cancelled before the delivery was 30 minutes old")
		}
		srv.Broker().Advance(time.Millisecond)
		if tag := recv(t, cancels); tag != "A" {
			t.Errorf("basic.cancel of %q, want A", tag)
		}
		synctest.Wait()
		select {
		case _, open := <-ds:
			if open {
				t.Error("a delivery after basic.cancel")
			}
		default:
			t.Error("the deliveries channel is still open after basic.cancel")
		}
		if s := stats(t, srv, "slow"); s.Ready != 1 || s.Unacked != 0 || s.Consumers != 1 {
			t.Errorf("stats = %+v, want the message back and the consumer still counted", s)
		}
		if err := d.Ack(false); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if s := stats(t, srv, "slow"); s.Ready != 0 || s.Unacked != 1 {
			t.Errorf("after the ack, stats = %+v, want the message delivered again", s)
		}
		select {
		case e := <-closed:
			t.Errorf("channel closed: %v", e)
		default:
		}
	})
}

// TestCleanCloseNotifiesNothing: a client's clean connection.close reaches
// no NotifyClose listener as an error. RabbitMQ leaves the socket to the
// client after close-ok, and so must the simulator: closing its side at once
// let amqp091-go's reader sometimes report "501 EOF" before Close returned.
// With AMQP_URL set the same runs against that broker.
func TestCleanCloseNotifiesNothing(t *testing.T) {
	cleanClose := func(t *testing.T, url string, dial func(network, addr string) (net.Conn, error)) {
		for range 50 {
			conn, err := amqp.DialConfig(url, amqp.Config{Dial: dial})
			if err != nil {
				t.Fatal(err)
			}
			closes := conn.NotifyClose(make(chan *amqp.Error, 1))
			ch, err := conn.Channel()
			if err != nil {
				t.Fatal(err)
			}
			chCloses := ch.NotifyClose(make(chan *amqp.Error, 1))
			if err := conn.Close(); err != nil {
				t.Fatalf("close: %v", err)
			}
			// Both channels are closed by the time Close returns.
			for what, c := range map[string]chan *amqp.Error{"connection": closes, "channel": chCloses} {
				select {
				case err, ok := <-c:
					if ok {
						t.Fatalf("NotifyClose on the %s got %v after a clean close", what, err)
					}
				default:
					t.Fatalf("NotifyClose on the %s is still open after Close returned", what)
				}
			}
		}
	}
	t.Run("sim", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv := amqptest.NewServer(t)
			cleanClose(t, srv.URL(), srv.Dial)
		})
	})
	t.Run("rabbitmq", func(t *testing.T) {
		url := os.Getenv("AMQP_URL")
		if url == "" {
			t.Skip("needs a RabbitMQ broker: set AMQP_URL=amqp://guest:guest@127.0.0.1:5672/ to run")
		}
		cleanClose(t, url, nil)
	})
}
