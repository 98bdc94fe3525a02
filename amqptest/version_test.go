package amqptest_test

import (
	"errors"
	"fmt"
	"log"
	"testing"
	"testing/synctest"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/amqpsim/amqpsim/amqptest"
	"github.com/amqpsim/amqpsim/sim"
)

// sim.Config.Version picks the release: the client sees its version, and
// its rules (3.10 takes basic.qos global=true as a channel-wide limit,
// which a quorum queue refuses with 540, closing the connection; 4.3 takes
// it per consumer).
func TestConfigVersion(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := amqptest.NewServer(t, amqptest.WithConfig(sim.Config{Version: sim.V3_10}))
		conn := dial(t, srv)
		if v := conn.Properties["version"]; v != "3.10.8" {
			t.Errorf("version %v, want 3.10.8", v)
		}
		ch := channel(t, conn)
		declareQuorum(t, ch, "jobs")
		if err := ch.Qos(1, 0, true); err != nil {
			t.Fatal(err)
		}
		_, err := ch.Consume("jobs", "", false, false, false, false, nil)
		var aerr *amqp.Error
		if !errors.As(err, &aerr) || aerr.Code != 540 {
			t.Errorf("consume under a global qos: %v, want 540", err)
		}
	})
}

// A test can run against the release production runs: here RabbitMQ 4.0
// (the default is 4.3), where basic.qos global=true is a channel-wide
// limit, which a quorum queue refuses, closing the connection.
func ExampleWithConfig_version() {
	srv, err := amqptest.Start(amqptest.WithConfig(sim.Config{Version: sim.V4_0}))
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	conn, err := amqp.DialConfig(srv.URL(), amqp.Config{Dial: srv.Dial})
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	fmt.Println("RabbitMQ", conn.Properties["version"])
	ch, _ := conn.Channel()
	ch.QueueDeclare("jobs", true, false, false, false, amqp.Table{"x-queue-type": "quorum"})
	ch.Qos(5, 0, true) // global: a per-consumer prefetch from 4.3
	if _, err := ch.Consume("jobs", "worker", false, false, false, false, nil); err != nil {
		fmt.Println("consume:", err)
		return
	}
	st, _ := srv.Broker().QueueStats("/", "jobs")
	fmt.Println("consumers:", st.Consumers)
	// Output:
	// RabbitMQ 4.0.5
	// consume: Exception (540) Reason: "NOT_IMPLEMENTED - queue 'jobs' in vhost '/' does not support global qos"
}
