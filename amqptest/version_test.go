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

// WithVersion picks the release: the client sees its version, and its
// rules (4.3 refuses a transient non-exclusive queue with 541).
func TestWithVersion(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := amqptest.NewServer(t, amqptest.WithVersion(sim.V4_3), amqptest.WithConfig(sim.Config{Version: sim.V3_12}))
		conn := dial(t, srv)
		if v := conn.Properties["version"]; v != "4.3.5" {
			t.Errorf("version %v, want 4.3.5 (WithVersion overrides WithConfig)", v)
		}
		ch, err := conn.Channel()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ch.QueueDeclare("durable", true, false, false, false, nil); err != nil {
			t.Fatal(err)
		}
		_, err = ch.QueueDeclare("transient", false, false, false, false, nil)
		var aerr *amqp.Error
		if !errors.As(err, &aerr) || aerr.Code != 541 {
			t.Errorf("transient declare: %v, want 541", err)
		}
	})
}

// A test can run against the release production runs: here RabbitMQ 4.3,
// where basic.qos global=true is a per-consumer prefetch, so a quorum
// queue accepts the consumer.
func ExampleWithVersion() {
	srv, err := amqptest.Start(amqptest.WithVersion(sim.V4_3))
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
	ch.Qos(5, 0, true) // global: refused by quorum queues before 4.3
	if _, err := ch.Consume("jobs", "worker", false, false, false, false, nil); err != nil {
		fmt.Println("consume:", err)
		return
	}
	st, _ := srv.Broker().QueueStats("/", "jobs")
	fmt.Println("consumers:", st.Consumers)
	// Output:
	// RabbitMQ 4.3.5
	// consumers: 1
}
