package amqptest_test

import (
	"net"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/amqpsim/amqpsim/amqptest"
)

// TestSynctestVirtualHour runs amqp091-go inside a synctest bubble against
// the in-memory transport, heartbeats on (10 s, amqp091-go's default), with
// a consumer, through a virtual hour of time.Sleep: the client and the
// server exchange hundreds of heartbeats on the fake clock, the connection
// survives, and the test takes a fraction of a second of real time.
func TestSynctestVirtualHour(t *testing.T) {
	realStart := time.Now()
	synctest.Test(t, func(t *testing.T) {
		srv := amqptest.NewServer(t)
		conn, err := amqp.DialConfig(srv.URL(), amqp.Config{Dial: srv.Dial})
		if err != nil {
			t.Fatal(err)
		}
		defer closeConn(t, conn)
		closed := conn.NotifyClose(make(chan *amqp.Error, 1))
		ch, err := conn.Channel()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ch.QueueDeclare("jobs", false, false, false, false, nil); err != nil {
			t.Fatal(err)
		}
		if err := ch.Qos(1, 0, false); err != nil {
			t.Fatal(err)
		}
		ds, err := ch.Consume("jobs", "worker", false, false, false, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		time.Sleep(time.Hour)
		if got := time.Since(start); got != time.Hour {
			t.Errorf("virtual time passed: %v", got)
		}
		select {
		case e := <-closed:
			t.Fatalf("connection closed during the hour: %v", e)
		default:
		}
		if err := ch.Publish("", "jobs", false, false, amqp.Publishing{Body: []byte("after an hour")}); err != nil {
			t.Fatal(err)
		}
		select {
		case d := <-ds:
			if string(d.Body) != "after an hour" {
				t.Errorf("body %q", d.Body)
			}
			d.Ack(false)
		case <-time.After(time.Minute):
			t.Fatal("no delivery")
		}
		// The broker's clock is separate; move it explicitly.
		srv.Broker().Advance(time.Hour)
	})
	t.Logf("a virtual hour took %v of real time", time.Since(realStart))
}

// TestSynctestServerDetectsSilentClient: a client that stops sending
// (heartbeats included) is disconnected on the receiver's second silent
// look, two to three heartbeat intervals after its last bytes, as RabbitMQ
// 3.10.8 does, in virtual time.
func TestSynctestServerDetectsSilentClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := amqptest.NewServer(t)
		client, err := srv.Dial("", "")
		if err != nil {
			t.Fatal(err)
		}
		defer client.Close()
		// A client that completes the handshake with heartbeat 10 s, through
		// amqp.Open, then goes silent: wrap its writes to drop everything
		// after open.
		sc := &silencer{Conn: client}
		conn, err := amqp.Open(sc, amqp.Config{SASL: []amqp.Authentication{&amqp.PlainAuth{Username: "guest", Password: "guest"}},
			Vhost: "/", Heartbeat: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		closed := conn.NotifyClose(make(chan *amqp.Error, 1))
		start := time.Now()
		sc.silent.Store(true)
		select {
		case <-closed:
		case <-time.After(time.Hour):
			t.Fatal("the server never dropped the silent client")
		}
		if got := time.Since(start); got < 20*time.Second || got > 30*time.Second {
			t.Errorf("dropped after %v, want 20-30 s", got)
		}
	})
}

// silencer drops every write once silent is set.
type silencer struct {
	net.Conn
	silent atomic.Bool
}

func (s *silencer) Write(p []byte) (int, error) {
	if s.silent.Load() {
		return len(p), nil
	}
	return s.Conn.Write(p)
}

// TestHeartbeatAmqp091Negotiates pins what amqp091-go (v1.16.0)
// negotiates with the server's offer (connection.go's pick: the smaller
// of two non-zero values, else the non-zero one). With DialConfig its
// Config.Heartbeat of 0 means its default, 10 s; only "?heartbeat=0" in
// the URL asks for none, and then the client takes the server's offer (60
// s by default), so no heartbeats needs both the URL's 0 and
// WithHeartbeat(-1). amqp.Open, which reads no URL, asks for none with
// Config.Heartbeat 0. The server cannot refuse a client's own heartbeat.
func TestHeartbeatAmqp091Negotiates(t *testing.T) {
	for _, tc := range []struct {
		name   string
		offer  time.Duration // WithHeartbeat; 0: RabbitMQ's 60 s
		query  string
		config time.Duration // amqp.Config.Heartbeat
		want   time.Duration
	}{
		{"Config.Heartbeat 0 is the default", 0, "", 0, 10 * time.Second},
		{"?heartbeat=0 takes the offer", 0, "?heartbeat=0", 0, 60 * time.Second},
		{"?heartbeat=0 and no offer", -1, "?heartbeat=0", 0, 0},
		{"no offer, the client's own", -1, "", 0, 10 * time.Second},
		{"a shorter offer", 3 * time.Second, "", 0, 3 * time.Second},
		{"Config.Heartbeat 5 s", 0, "", 5 * time.Second, 5 * time.Second},
	} {
		synctest.Test(t, func(t *testing.T) {
			srv := amqptest.NewServer(t, amqptest.WithHeartbeat(tc.offer))
			conn, err := amqp.DialConfig(srv.URL()+tc.query, amqp.Config{Dial: srv.Dial, Heartbeat: tc.config})
			if err != nil {
				t.Fatal(err)
			}
			defer closeConn(t, conn)
			cs := srv.Broker().Connections()
			if len(cs) != 1 {
				t.Fatalf("%d connections", len(cs))
			}
			if got := cs[0].Info().Heartbeat; got != tc.want || conn.Config.Heartbeat != tc.want {
				t.Errorf("%s: the server has %v, the client %v; want %v", tc.name, got, conn.Config.Heartbeat, tc.want)
			}
		})
	}
	for _, offer := range []time.Duration{0, -1} {
		synctest.Test(t, func(t *testing.T) {
			srv := amqptest.NewServer(t, amqptest.WithHeartbeat(offer))
			nc, err := srv.Dial("", "")
			if err != nil {
				t.Fatal(err)
			}
			conn, err := amqp.Open(nc, amqp.Config{SASL: []amqp.Authentication{&amqp.PlainAuth{Username: "guest", Password: "guest"}}, Vhost: "/"})
			if err != nil {
				t.Fatal(err)
			}
			defer closeConn(t, conn)
			want := 60 * time.Second
			if offer < 0 {
				want = 0
			}
			if got := srv.Broker().Connections()[0].Info().Heartbeat; got != want {
				t.Errorf("amqp.Open with Config.Heartbeat 0, offer %v: %v, want %v", offer, got, want)
			}
		})
	}
}
