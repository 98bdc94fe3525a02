package amqptest_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/amqpsim/amqpsim/amqptest"
	"github.com/amqpsim/amqpsim/definitions"
	"github.com/amqpsim/amqpsim/sim"
)

// sim.Config's default user replaces guest: URL() carries its
// credentials, and it gets full permissions in "/" and in the WithVhosts
// vhosts. In a bubble: a refused login holds the socket for RabbitMQ's
// 3 s.
func TestDefaultUserIsTheURLs(t *testing.T) {
	synctest.Test(t, testDefaultUserIsTheURLs)
}

func testDefaultUserIsTheURLs(t *testing.T) {
	srv := amqptest.NewServer(t, amqptest.WithConfig(sim.Config{DefaultUser: "admin", DefaultPass: "pw"}), amqptest.WithVhosts("extra"))
	if !strings.HasPrefix(srv.URL(), "amqp://admin:pw@") {
		t.Fatalf("URL %s", srv.URL())
	}
	for _, vhost := range []string{"/", "extra"} {
		conn, err := amqp.DialConfig(srv.URL()+"/"+strings.TrimPrefix(vhost, "/"), amqp.Config{Dial: srv.Dial})
		if err != nil {
			t.Fatalf("admin to %q: %v", vhost, err)
		}
		conn.Close()
	}
	if _, err := amqp.DialConfig("amqp://guest:guest@amqpsim/", amqp.Config{Dial: srv.Dial}); !errors.Is(err, amqp.ErrCredentials) {
		t.Fatalf("guest: %v, want refused", err)
	}
	if u, ok := srv.Broker().User("admin"); !ok || !u.HasTag(sim.TagAdministrator) {
		t.Fatalf("admin: %+v", u)
	}
}

// WithBroker serves the broker as it was configured: URL() carries its
// default user's credentials. WithConfig beside it, which would configure
// another broker, is refused.
func TestWithBrokerKeepsItsConfig(t *testing.T) {
	b := sim.New(sim.Config{DefaultUser: "app", DefaultPass: "pw"})
	srv := amqptest.NewServer(t, amqptest.WithBroker(b))
	if !strings.HasPrefix(srv.URL(), "amqp://app:pw@") {
		t.Fatalf("URL %s, want the broker's default user's", srv.URL())
	}
	conn, err := amqp.DialConfig(srv.URL(), amqp.Config{Dial: srv.Dial})
	if err != nil {
		t.Fatal(err)
	}
	conn.Close()
	if _, err := amqptest.Start(amqptest.WithBroker(b), amqptest.WithConfig(sim.Config{})); err == nil || !strings.Contains(err.Error(), "give one of them") {
		t.Fatalf("Start with WithBroker and WithConfig: %v, want refused", err)
	}
}

func TestDefinitionsThatDoNotImportFailStart(t *testing.T) {
	defs, err := definitions.Parse([]byte(`{"queues":[{"name":"q","vhost":"nosuch","durable":true,"arguments":{}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := amqptest.Start(amqptest.WithConfig(sim.Config{Definitions: defs})); err == nil || !strings.Contains(err.Error(), `queues[0] "q"`) {
		t.Fatalf("Start: %v", err)
	}
}

// WithLogf gets the server's log lines: a refused login is one, as it is
// in RabbitMQ's log.
func TestWithLogf(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var lines []string
		srv := amqptest.NewServer(t, amqptest.WithLogf(func(format string, args ...any) {
			mu.Lock()
			defer mu.Unlock()
			lines = append(lines, fmt.Sprintf(format, args...))
		}))
		if _, err := amqp.DialConfig("amqp://guest:wrong@amqpsim/", amqp.Config{Dial: srv.Dial}); !errors.Is(err, amqp.ErrCredentials) {
			t.Fatalf("a wrong password: %v, want refused", err)
		}
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		if len(lines) != 1 || !strings.HasSuffix(lines[0], "PLAIN login refused: user 'guest' - invalid credentials") {
			t.Errorf("logged %q, want the refused login", lines)
		}
	})
}
