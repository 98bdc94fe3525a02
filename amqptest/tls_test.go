package amqptest_test

import (
	"crypto/tls"
	"fmt"
	"log"
	"strings"
	"testing"
	"testing/synctest"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/amqpsim/amqpsim/amqptest"
)

// roundTrip publishes and gets one message over conn.
func roundTrip(t *testing.T, conn *amqp.Connection) {
	t.Helper()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	ch.QueueDeclare("tls", false, false, false, false, nil)
	ch.Publish("", "tls", false, false, amqp.Publishing{Body: []byte("sealed")})
	d, ok, err := ch.Get("tls", true)
	if err != nil || !ok || string(d.Body) != "sealed" {
		t.Fatalf("get: %v %v %q", ok, err, d.Body)
	}
}

// TestTLSInMemory: amqps over the in-memory transport, in a synctest
// bubble, with the generated certificate verified by the client.
func TestTLSInMemory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := amqptest.NewServer(t, amqptest.WithTLS())
		if !strings.HasPrefix(srv.URL(), "amqps://") {
			t.Fatalf("URL %s", srv.URL())
		}
		conn, err := amqp.DialConfig(srv.URL(), amqp.Config{Dial: srv.Dial, TLSClientConfig: srv.TLSConfig()})
		if err != nil {
			t.Fatal(err)
		}
		defer closeConn(t, conn)
		if st := conn.ConnectionState(); !st.HandshakeComplete || st.Version < tls.VersionTLS12 {
			t.Fatalf("TLS state %+v", st)
		}
		roundTrip(t, conn)

		// DropConnection still cuts the transport under TLS.
		closed := conn.NotifyClose(make(chan *amqp.Error, 1))
		name := srv.Broker().Connections()[0].Name()
		if _, err := srv.StallConnection(name); err == nil {
			t.Error("a TLS connection stalled")
		}
		if err := srv.DropConnection(name); err != nil {
			t.Fatal(err)
		}
		if e := recv(t, closed); e == nil || e.Code != 501 {
			t.Errorf("closed with %v, want 501", e)
		}
	})
}

// TestTLSOverTCP: amqp.DialTLS dials the server's address; a client that
// does not trust the certificate, or speaks plain AMQP, is refused.
func TestTLSOverTCP(t *testing.T) {
	srv := amqptest.NewServer(t, amqptest.WithTLS(), amqptest.WithTCP(), amqptest.WithHeartbeat(-1))
	conn, err := amqp.DialTLS(srv.URL(), srv.TLSConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer closeConn(t, conn)
	roundTrip(t, conn)

	if _, err := amqp.DialTLS(srv.URL(), &tls.Config{ServerName: "amqpsim"}); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("untrusted dial: %v, want a certificate error", err)
	}
	plainURL := "amqp://" + strings.TrimPrefix(srv.URL(), "amqps://")
	if c, err := amqp.Dial(plainURL); err == nil {
		c.Close()
		t.Error("a plain AMQP dial was served by the TLS listener")
	}
	if amqptest.NewServer(t).TLSConfig() != nil {
		t.Error("TLSConfig without WithTLS")
	}
}

// Code that dials amqps:// runs unchanged: the server's generated
// certificate is trusted through TLSConfig.
func ExampleWithTLS() {
	srv, err := amqptest.Start(amqptest.WithTLS(), amqptest.WithTCP())
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	conn, err := amqp.DialTLS(srv.URL(), srv.TLSConfig()) // as with a real amqps:// broker
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	fmt.Println(strings.SplitN(srv.URL(), ":", 2)[0], conn.ConnectionState().HandshakeComplete)
	// Output: amqps true
}
