package amqptest_test

import (
	"errors"
	"fmt"
	"log"
	"syscall"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/amqpsim/amqpsim/amqptest"
)

// A broker restart as the client sees it: RabbitMQ's shutdown close, dials
// refused while the node is down (here 5 s of the broker's manual clock),
// then the durable queue with its persistent message only.
func ExampleServer_Restart() {
	srv, err := amqptest.Start()
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	conn, err := amqp.DialConfig(srv.URL(), amqp.Config{Dial: srv.Dial})
	if err != nil {
		log.Fatal(err)
	}
	closed := conn.NotifyClose(make(chan *amqp.Error, 1))
	ch, _ := conn.Channel()
	ch.QueueDeclare("orders", true, false, false, false, nil)
	ch.Publish("", "orders", false, false, amqp.Publishing{DeliveryMode: amqp.Persistent, Body: []byte("kept")})
	ch.Publish("", "orders", false, false, amqp.Publishing{Body: []byte("lost")})
	ch.QueueDeclarePassive("orders", true, false, false, false, nil) // a round trip: both publishes are in

	srv.Restart(5 * time.Second)
	e := <-closed
	fmt.Println(e.Code, e.Reason)

	_, err = amqp.DialConfig(srv.URL(), amqp.Config{Dial: srv.Dial})
	fmt.Println("refused:", errors.Is(err, syscall.ECONNREFUSED))

	srv.Broker().Advance(5 * time.Second) // the node is back
	conn, err = amqp.DialConfig(srv.URL(), amqp.Config{Dial: srv.Dial})
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	ch, _ = conn.Channel()
	q, _ := ch.QueueDeclarePassive("orders", true, false, false, false, nil)
	fmt.Println("messages after the restart:", q.Messages)
	// Output:
	// 320 CONNECTION_FORCED - broker forced connection closure with reason 'shutdown'
	// refused: true
	// messages after the restart: 1
}
