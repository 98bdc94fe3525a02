package amqptest_test

import (
	"errors"
	"fmt"
	"log"
	"syscall"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/amqpsim/amqpsim/amqptest"
	"github.com/amqpsim/amqpsim/sim"
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
	e, ok := within(closed)
	if !ok {
		fmt.Println("timed out waiting for the connection's close")
		return
	}
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

// A memory alarm as a publisher sees it: connection.blocked when it
// publishes, the message held until the alarm clears.
func ExampleServer_alarm() {
	srv, err := amqptest.Start()
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	conn, err := amqp.DialConfig(srv.URL(), amqp.Config{Dial: srv.Dial})
	if err != nil {
		log.Fatal(err)
	}
	// No conn.Close: amqp091-go's waits for close-ok without a deadline,
	// which a connection still held by an alarm never sends; srv.Close
	// closes it, bounded.
	blocked := conn.NotifyBlocked(make(chan amqp.Blocking, 2))
	ch, _ := conn.Channel()
	ch.QueueDeclare("orders", false, false, false, false, nil)

	srv.Broker().SetAlarm(sim.AlarmMemory, true)
	ch.Publish("", "orders", false, false, amqp.Publishing{Body: []byte("held")})
	b, ok := within(blocked)
	if !ok {
		fmt.Println("timed out waiting for connection.blocked")
		return
	}
	fmt.Println(b.Active, b.Reason)
	st, _ := srv.Broker().QueueStats("/", "orders")
	fmt.Println("queued during the alarm:", st.Ready)

	srv.Broker().SetAlarm(sim.AlarmMemory, false)
	if b, ok = within(blocked); !ok {
		fmt.Println("timed out waiting for connection.unblocked")
		return
	}
	fmt.Println(b.Active)
	// Output:
	// true low on memory
	// queued during the alarm: 0
	// false
}

// A fault at an exact point of the delivery stream: the channel that
// receives the second delivery is closed right after it, whatever the
// client does meanwhile, and both deliveries are requeued.
func ExampleServer_StartSchedule() {
	srv, err := amqptest.Start()
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	conn, err := amqp.DialConfig(srv.URL(), amqp.Config{Dial: srv.Dial})
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	ch, _ := conn.Channel()
	closed := ch.NotifyClose(make(chan *amqp.Error, 1))
	ch.QueueDeclare("jobs", false, false, false, false, nil)
	for _, body := range []string{"j1", "j2", "j3"} {
		ch.Publish("", "jobs", false, false, amqp.Publishing{Body: []byte(body)})
	}
	srv.StartSchedule(amqptest.Schedule{{AfterDeliveries: 2, Kind: amqptest.FaultCloseChannel}})
	ch.Consume("jobs", "worker", false, false, false, false, nil)
	e, ok := within(closed)
	if !ok {
		fmt.Println("timed out waiting for the channel's close")
		return
	}
	fmt.Println(e.Reason)

	s, _ := srv.Broker().QueueStats("/", "jobs")
	fmt.Printf("ready %d, consumers %d\n", s.Ready, s.Consumers)
	// Output:
	// PRECONDITION_FAILED - fault injected by amqptest
	// ready 3, consumers 0
}

// within receives from c, or gives up after 10 s: the examples bound
// their waits, so that a broker that never answers fails them (their
// output says what they waited for) instead of hanging go test.
func within[T any](c <-chan T) (T, bool) {
	select {
	case v, ok := <-c:
		return v, ok
	case <-time.After(10 * time.Second):
		var zero T
		return zero, false
	}
}
