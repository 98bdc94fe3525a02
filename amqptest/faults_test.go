package amqptest_test

import (
	"errors"
	"slices"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/amqpsim/amqpsim/amqptest"
	"github.com/amqpsim/amqpsim/sim"
)

// named dials with a connection name, so that faults can find it.
func named(t *testing.T, srv *amqptest.Server, name, query string) *amqp.Connection {
	t.Helper()
	conn, err := amqp.DialConfig(srv.URL()+query, amqp.Config{Dial: srv.Dial, Properties: amqp.Table{"connection_name": name}})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { closeConn(t, conn) })
	return conn
}

// TestRestartThroughClient: a broker restart reaches amqp091-go as
// RabbitMQ's shutdown close; the client's reconnect loop sees refused
// dials for the downtime, then finds durable queues with their persistent
// messages and loses the transient ones.
func TestRestartThroughClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := amqptest.NewServer(t, amqptest.WithConfig(sim.Config{Clock: time.Now}))
		conn := named(t, srv, "app", "")
		closed := conn.NotifyClose(make(chan *amqp.Error, 1))
		ch := channel(t, conn)
		if _, err := ch.QueueDeclare("orders", true, false, false, false, nil); err != nil {
			t.Fatal(err)
		}
		declare(t, ch, "scratch")
		for _, p := range []amqp.Publishing{
			{DeliveryMode: amqp.Persistent, Body: []byte("kept")},
			{DeliveryMode: amqp.Transient, Body: []byte("lost")},
		} {
			for _, q := range []string{"orders", "scratch"} {
				if err := ch.Publish("", q, false, false, p); err != nil {
					t.Fatal(err)
				}
			}
		}
		srv.WaitQueue(t, "scratch", func(s sim.QueueStats) bool { return s.Ready == 2 })

		srv.Restart(5 * time.Second)
		e := recv(t, closed)
		if e == nil || e.Code != amqp.ConnectionForced || e.Reason != "CONNECTION_FORCED - broker forced connection closure with reason 'shutdown'" || !e.Server {
			t.Fatalf("NotifyClose got %+v", e)
		}

		// The application's reconnect loop.
		refused := 0
		var again *amqp.Connection
		for again == nil {
			c, err := amqp.DialConfig(srv.URL(), amqp.Config{Dial: srv.Dial})
			switch {
			case err == nil:
				again = c
			case errors.Is(err, syscall.ECONNREFUSED) && refused < 60:
				refused++
				time.Sleep(time.Second)
			default:
				t.Fatalf("dial after %d refusals: %v", refused, err)
			}
		}
		defer again.Close()
		if refused != 5 {
			t.Errorf("%d dials refused, want 5 (one a second for the 5 s downtime)", refused)
		}
		ch2 := channel(t, again)
		q, err := ch2.QueueDeclarePassive("orders", true, false, false, false, nil)
		if err != nil || q.Messages != 1 {
			t.Fatalf("orders after the restart: %+v %v, want the one persistent message", q, err)
		}
		if d, ok, err := ch2.Get("orders", true); err != nil || !ok || string(d.Body) != "kept" {
			t.Errorf("get from orders: %q %v %v", d.Body, ok, err)
		}
		_, err = ch2.QueueDeclarePassive("scratch", false, false, false, false, nil)
		var ae *amqp.Error
		if !errors.As(err, &ae) || ae.Code != amqp.NotFound {
			t.Errorf("the transient queue after the restart: %v, want 404", err)
		}
	})
}

// TestDropConnection: a connection dropped without a close frame reaches
// amqp091-go as 501 "EOF", and the broker requeues its unacked delivery.
func TestDropConnection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := amqptest.NewServer(t)
		conn := named(t, srv, "worker", "")
		closed := conn.NotifyClose(make(chan *amqp.Error, 1))
		ch := channel(t, conn)
		declare(t, ch, "jobs")
		ds, err := ch.Consume("jobs", "", false, false, false, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		publish(t, ch, "jobs", "j1")
		recv(t, ds)
		if err := srv.DropConnection("worker"); err != nil {
			t.Fatal(err)
		}
		e := recv(t, closed)
		if e == nil || e.Code != amqp.FrameError || e.Reason != "EOF" {
			t.Fatalf("NotifyClose got %+v, want 501 EOF", e)
		}
		srv.WaitConnections(t, 0)
		if st := stats(t, srv, "jobs"); st.Ready != 1 || st.Unacked != 0 {
			t.Errorf("after the drop %+v, want the delivery requeued", st)
		}
		if err := srv.DropConnection("worker"); err == nil {
			t.Error("dropping a gone connection succeeded")
		}
	})
}

// TestStallWithoutHeartbeats: while a connection is stalled nothing the
// client writes reaches the broker, and nothing the broker pushes reaches
// the client; on release both flow again, in order.
func TestStallWithoutHeartbeats(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// No heartbeats: the server offers none, and the client asks for
		// none (amqp091-go takes the server's offer when it asks for 0).
		srv := amqptest.NewServer(t, amqptest.WithHeartbeat(-1))
		conn := named(t, srv, "app", "?heartbeat=0")
		ch := channel(t, conn)
		declare(t, ch, "in")
		declare(t, ch, "out")
		ds, err := ch.Consume("out", "", true, false, false, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		release, err := srv.StallConnection("app")
		if err != nil {
			t.Fatal(err)
		}
		if err := ch.Publish("", "in", false, false, amqp.Publishing{Body: []byte("stuck")}); err != nil {
			t.Fatal(err)
		}
		if err := srv.Broker().Publish("/", "", "out", sim.Message{Body: []byte("held")}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		if st := stats(t, srv, "in"); st.Ready != 0 {
			t.Errorf("ready in %q during the stall = %d, want 0", "in", st.Ready)
		}
		none(t, ds)
		release()
		if d := recv(t, ds); string(d.Body) != "held" {
			t.Errorf("delivery %q after the release", d.Body)
		}
		srv.WaitQueue(t, "in", func(s sim.QueueStats) bool { return s.Ready == 1 })
	})
}

// TestStallWithHeartbeats: over a stalled connection with amqp091-go's
// 10 s heartbeat, the server gives up on its second silent look (the
// broker forgets the connection) and the client on its 30 s read
// deadline, with 501 "i/o timeout"; the client never sees a close frame.
func TestStallWithHeartbeats(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := amqptest.NewServer(t, amqptest.WithWaitTimeout(time.Minute))
		conn := named(t, srv, "app", "")
		closed := conn.NotifyClose(make(chan *amqp.Error, 1))
		channel(t, conn)
		start := time.Now()
		if _, err := srv.StallConnection("app"); err != nil {
			t.Fatal(err)
		}
		srv.WaitConnections(t, 0)
		if got := time.Since(start); got < 10*time.Second || got > 30*time.Second {
			t.Errorf("the broker dropped the stalled connection after %v, want 10-30 s", got)
		}
		e := recv(t, closed)
		if e == nil || e.Code != amqp.FrameError || !strings.Contains(e.Reason, "i/o timeout") {
			t.Fatalf("NotifyClose got %+v, want 501 i/o timeout", e)
		}
		if got := time.Since(start); got > 30*time.Second {
			t.Errorf("the client gave up after %v, want at most 30 s", got)
		}
	})
}

// TestCloseWithStalledConnection: Close does not wait out its grace
// period for the close-ok of a stalled connection; it drops it.
func TestCloseWithStalledConnection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := amqptest.NewServer(t)
		conn := named(t, srv, "app", "")
		closed := conn.NotifyClose(make(chan *amqp.Error, 1))
		if _, err := srv.StallConnection("app"); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		srv.Close()
		if got := time.Since(start); got >= time.Second {
			t.Errorf("Close took %v with a stalled connection, want far less than its 2 s grace", got)
		}
		if e := recv(t, closed); e == nil || e.Code != amqp.FrameError {
			t.Errorf("NotifyClose got %+v, want 501 (dropped)", e)
		}
	})
}

// TestForceConsumerTimeout: the forced timeout reaches amqp091-go as the
// real one does (the text of TestConsumerTimeoutThroughClient), the
// delivery is requeued, and a channel holding nothing refuses it.
func TestForceConsumerTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := amqptest.NewServer(t)
		conn := named(t, srv, "worker", "")
		ch := channel(t, conn)
		closed := ch.NotifyClose(make(chan *amqp.Error, 1))
		ch.QueueDeclare("jobs", false, false, false, false, nil)
		if err := srv.ForceConsumerTimeout("worker", 1); err == nil {
			t.Error("timed out a channel with nothing unacked")
		}
		srv.Broker().Publish("/", "", "jobs", sim.Message{Body: []byte("slow")})
		if _, ok, err := ch.Get("jobs", false); !ok || err != nil {
			t.Fatalf("get: %v %v", ok, err)
		}
		if err := srv.ForceConsumerTimeout("worker", 1); err != nil {
			t.Fatal(err)
		}
		e := recv(t, closed)
		want := "PRECONDITION_FAILED - delivery acknowledgement on channel 1 timed out. Timeout value used: 1800000 ms. This timeout value can be configured, see consumers doc guide to learn more"
		if e == nil || e.Code != 406 || e.Reason != want {
			t.Errorf("closed with %v", e)
		}
		srv.WaitQueue(t, "jobs", func(s sim.QueueStats) bool { return s.Ready == 1 && s.Unacked == 0 })
		if err := srv.ForceConsumerTimeout("worker", 1); err == nil {
			t.Error("timed out a closed channel")
		}
	})
}

// TestNackPublishes: the next n confirmed publishes reach amqp091-go as
// nacks and are not routed; the ones after are acked.
func TestNackPublishes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := amqptest.NewServer(t)
		ch := channel(t, named(t, srv, "publisher", ""))
		ch.QueueDeclare("jobs", false, false, false, false, nil)
		if err := ch.Confirm(false); err != nil {
			t.Fatal(err)
		}
		srv.Broker().NackPublishes(2)
		var acked []bool
		for i := range 3 {
			c, err := ch.PublishWithDeferredConfirm("", "jobs", false, false, amqp.Publishing{Body: []byte{byte('a' + i)}})
			if err != nil {
				t.Fatal(err)
			}
			acked = append(acked, confirmed(t, c))
		}
		if acked[0] || acked[1] || !acked[2] {
			t.Errorf("acked %v, want [false false true]", acked)
		}
		srv.CheckQueue(t, "jobs", "c")
	})
}

// TestCloseAtDelivery: each of the three closes of a delivery's channel
// or connection lands right behind the nth delivery of the broker (a
// basic.get counts), and reaches amqp091-go as RabbitMQ's close: nothing
// is delivered after it, and every unacked delivery is requeued.
func TestCloseAtDelivery(t *testing.T) {
	for _, tc := range []struct {
		kind      amqptest.FaultKind
		code      int
		reason    string
		wholeConn bool // the connection closes, not only the channel
	}{
		{amqptest.FaultCloseChannel, 406, "PRECONDITION_FAILED - fault injected by amqptest", false},
		{amqptest.FaultCloseConnection, 320, "CONNECTION_FORCED - fault injected by amqptest", true},
		{amqptest.FaultConsumerTimeout,
			406, "PRECONDITION_FAILED - delivery acknowledgement on channel 1 timed out. Timeout value used: 1800000 ms. This timeout value can be configured, see consumers doc guide to learn more", false},
	} {
		t.Run(tc.kind.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := amqptest.NewServer(t)
				conn := named(t, srv, "worker", "")
				connClosed := conn.NotifyClose(make(chan *amqp.Error, 1))
				ch := channel(t, conn)
				chClosed := ch.NotifyClose(make(chan *amqp.Error, 1))
				ch.QueueDeclare("jobs", false, false, false, false, nil)
				for _, body := range []string{"j1", "j2", "j3", "j4"} {
					srv.Broker().Publish("/", "", "jobs", sim.Message{Body: []byte(body)})
				}
				if _, err := srv.StartSchedule(amqptest.Schedule{{AfterDeliveries: 3, Kind: tc.kind}}); err != nil {
					t.Fatal(err)
				}
				d, ok, err := ch.Get("jobs", false) // delivery 1
				if !ok || err != nil {
					t.Fatalf("get: %v %v", ok, err)
				}
				d.Ack(false)
				if _, err := ch.Consume("jobs", "w", false, false, false, false, nil); err != nil {
					t.Fatal(err)
				}
				closed := chClosed
				if tc.wholeConn {
					closed = connClosed
				}
				if e := recv(t, closed); e == nil || e.Code != tc.code || e.Reason != tc.reason {
					t.Errorf("closed with %v, want %d %s", e, tc.code, tc.reason)
				}
				// amqp091-go drops the deliveries it has not handed over when
				// the channel closes: the broker's trace says what it sent.
				var pushes []string
				for _, e := range srv.Broker().Trace() {
					if e.Kind == sim.EventPush && e.Conn == "worker" {
						pushes = append(pushes, strings.TrimSpace(e.Method.String()+" "+string(e.Body)))
					}
				}
				want := []string{"basic.get-ok j1", "basic.deliver j2", "basic.deliver j3", "channel.close"}
				if tc.wholeConn {
					want[3] = "connection.close"
				}
				if !slices.Equal(pushes, want) {
					t.Errorf("pushes %q, want %q", pushes, want)
				}
				srv.WaitQueue(t, "jobs", func(s sim.QueueStats) bool { return s.Ready == 3 && s.Unacked == 0 })
			})
		})
	}
}
