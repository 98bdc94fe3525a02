package amqptest_test

import (
	"errors"
	"fmt"
	"log"
	"syscall"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/amqpsim/amqpsim/amqptest"
	"github.com/amqpsim/amqpsim/sim"
)

// A client of a 3-node cluster is given the nodes' URLs, as it would be
// given a real cluster's hosts, and dials them in turn. Node 1, which
// leads the quorum queue, stops: the client's dial to it is refused, node
// 2 answers, and the confirmed message is there, the queue's leadership
// handed over at the stop (to node 3: the broker's choice among the
// survivors, from its seed).
func ExampleServer_NodeURLs() {
	srv, err := amqptest.Start(amqptest.WithConfig(sim.Config{Nodes: 3}))
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	urls := srv.NodeURLs()
	for _, u := range urls {
		fmt.Println(u)
	}

	// A publisher on node 1 declares the queue (so node 1 leads it) and
	// publishes one message, confirmed.
	conn, err := amqp.DialConfig(urls[0], amqp.Config{Dial: srv.Dial})
	if err != nil {
		log.Fatal(err)
	}
	ch, _ := conn.Channel()
	ch.Confirm(false)
	ch.QueueDeclare("orders", true, false, false, false, amqp.Table{"x-queue-type": "quorum"})
	dc, _ := ch.PublishWithDeferredConfirm("", "orders", false, false,
		amqp.Publishing{DeliveryMode: amqp.Persistent, Body: []byte("order 1")})
	fmt.Println("confirmed:", dc.Wait())

	srv.Broker().StopNode(1) // its clients get 320 CONNECTION_FORCED

	// The client's reconnect: each URL in turn, until one answers.
	for _, u := range urls {
		conn, err = amqp.DialConfig(u, amqp.Config{Dial: srv.Dial})
		if errors.Is(err, syscall.ECONNREFUSED) {
			fmt.Println("refused:", u)
			continue
		}
		if err != nil {
			log.Fatal(err)
		}
		break
	}
	defer conn.Close()
	ch, _ = conn.Channel()
	m, _, _ := ch.Get("orders", true)
	leader, _, _ := srv.Broker().QueueLeader("/", "orders")
	fmt.Printf("got %q; the queue's leader: %s\n", m.Body, leader)
	// Output:
	// amqp://guest:guest@amqpsim
	// amqp://guest:guest@amqpsim-2
	// amqp://guest:guest@amqpsim-3
	// confirmed: true
	// refused: amqp://guest:guest@amqpsim
	// got "order 1"; the queue's leader: rabbit@node2
}
