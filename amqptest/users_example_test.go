package amqptest_test

import (
	"errors"
	"fmt"
	"log"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/amqpsim/amqpsim/amqptest"
	"github.com/amqpsim/amqpsim/definitions"
	"github.com/amqpsim/amqpsim/sim"
)

// A service whose RabbitMQ is set up by a definitions file (as
// rabbitmqctl export_definitions writes it) is tested against the same
// file: its user logs in with the password behind the file's hash, and the
// permissions in the file apply to every method.
func ExampleWithConfig_definitions() {
	defs, err := definitions.Parse([]byte(`{
		"users": [{"name": "orders-svc", "password_hash": "1s00h6Nz9olUa+BVEXVsxKyuyoMJqaUF7IDs4GcIcXwS8rRG",
		           "hashing_algorithm": "rabbit_password_hashing_sha256", "tags": []}],
		"permissions": [{"user": "orders-svc", "vhost": "/", "configure": "^orders", "write": ".*", "read": "^orders"}],
		"queues": [{"name": "orders", "vhost": "/", "durable": true, "auto_delete": false, "arguments": {"x-max-length": 1000}}]
	}`))
	if err != nil {
		log.Fatal(err)
	}
	srv, err := amqptest.Start(amqptest.WithConfig(sim.Config{Definitions: defs}))
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	// The hash above is of the password "guest".
	conn, err := amqp.DialConfig("amqp://orders-svc:guest@amqpsim/", amqp.Config{Dial: srv.Dial})
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	ch, _ := conn.Channel()
	q, _ := ch.QueueDeclarePassive("orders", true, false, false, false, nil)
	fmt.Println("declared", q.Name)
	_, err = ch.QueueDeclare("billing", true, false, false, false, nil)
	var aerr *amqp.Error
	if errors.As(err, &aerr) {
		fmt.Println(aerr.Code, aerr.Reason)
	}
	// Output:
	// declared orders
	// 403 ACCESS_REFUSED - configure access to queue 'billing' in vhost '/' refused for user 'orders-svc'
}
