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

// WithUser makes that user the broker's default user, in place of guest,
// with full permissions in "/" and in the WithVhosts vhosts. In a bubble:
// a refused login holds the socket for RabbitMQ's 3 s.
func TestWithUserReplacesGuest(t *testing.T) {
	synctest.Test(t, testWithUserReplacesGuest)
}

func testWithUserReplacesGuest(t *testing.T) {
	srv := amqptest.NewServer(t, amqptest.WithUser("admin", "pw"), amqptest.WithVhosts("extra"))
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

// WithBroker and WithUser add the user to the given broker.
func TestWithUserOnExistingBroker(t *testing.T) {
	b := sim.New(sim.Config{})
	srv := amqptest.NewServer(t, amqptest.WithBroker(b), amqptest.WithUser("app", "pw"))
	conn, err := amqp.DialConfig(srv.URL(), amqp.Config{Dial: srv.Dial})
	if err != nil {
		t.Fatal(err)
	}
	conn.Close()
}

func TestWithDefinitionsRefusesABadFile(t *testing.T) {
	defs, err := definitions.Parse([]byte(`{"queues":[{"name":"q","vhost":"nosuch","durable":true,"arguments":{}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := amqptest.Start(amqptest.WithDefinitions(defs)); err == nil || !strings.Contains(err.Error(), `queues[0] "q"`) {
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
