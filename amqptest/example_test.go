package amqptest_test

import (
	"context"
	"fmt"
	"log"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/amqpsim/amqpsim/amqptest"
)

// The one-line switch: dial the simulator with amqp.DialConfig and the
// server's Dial instead of amqp.Dial(realURL). Everything after it is
// ordinary amqp091-go code. The broker's virtual clock moves only when
// told: here past RabbitMQ's 30-minute consumer_timeout, on a quorum queue.
// From 4.3, the default release, the quorum queue times the delivery out
// itself: it takes m1 back and the channel, which stays open, sends
// basic.cancel; the consumer stays registered (declare-ok counts it)
// and takes nothing until the client settles m1's old tag. Before 4.3
// the channel closed with 406 instead
// (amqptest.WithConfig(sim.Config{Version: sim.V4_0})). Publish without
// confirms returns once the client has written the frames, so Applied
// waits for the broker to have applied them (m2 queued) before the clock
// moves. The waits are bounded so that a broker that never answers fails
// the example instead of hanging it.
func Example() {
	srv, err := amqptest.Start() // in a test: srv := amqptest.NewServer(t)
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	// Instead of: conn, err := amqp.Dial("amqp://guest:guest@localhost:5672/")
	conn, err := amqp.DialConfig(srv.URL(), amqp.Config{Dial: srv.Dial})
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()

	ch, _ := conn.Channel()
	cancels := ch.NotifyCancel(make(chan string, 1))
	ch.QueueDeclare("orders", true, false, false, false, amqp.Table{"x-queue-type": "quorum"})
	ch.Qos(1, 0, false)
	deliveries, _ := ch.Consume("orders", "worker", false, false, false, false, nil)
	for _, body := range []string{"m1", "m2"} {
		ch.Publish("", "orders", false, false, amqp.Publishing{Body: []byte(body)})
	}
	select {
	case d := <-deliveries:
		fmt.Printf("got %s, tag %d\n", d.Body, d.DeliveryTag)
	case <-time.After(10 * time.Second):
		fmt.Println("timed out waiting for m1")
		return
	}

	// Never acknowledged: once m2 is in, advance the broker's clock past
	// consumer_timeout.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Applied(ctx); err != nil { // in a test: srv.WaitApplied(t)
		fmt.Println(err)
		return
	}
	srv.Broker().Advance(31 * time.Minute)
	select {
	case tag := <-cancels:
		fmt.Println("basic.cancel of", tag)
	case <-time.After(10 * time.Second):
		fmt.Println("timed out waiting for the consumer's cancel")
		return
	}

	s, _ := srv.Broker().QueueStats("/", "orders")
	fmt.Printf("ready %d, unacked %d, consumers %d, channel open %t\n", s.Ready, s.Unacked, s.Consumers, !ch.IsClosed())
	// Output:
	// got m1, tag 1
	// basic.cancel of worker
	// ready 2, unacked 0, consumers 1, channel open true
}
