package main

import (
	"fmt"
	"slices"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// TestServeClusterOutcomeIsStable: the same client program against serve
// --nodes 3 gets the same outcome on every run, and RabbitMQ's: two
// consumers of a quorum queue led by node 1, on nodes 1 and 3, node 3 cut
// off and healed, seven publishes; which consumer gets each message is
// what a real 4.3.6 cluster answered (partition-heal-next-consumer.txt).
// The program waits for each publish's confirm and delivery, and moves
// the clock only by POST /api/sim/advance (--clock manual): with the wall
// clock a program whose steps race the broker's timers (a 400 ms
// election) may see either side of the race, as against RabbitMQ.
func TestServeClusterOutcomeIsStable(t *testing.T) {
	want := []string{"A m1", "B m2", "A m3", "A m4", "A m5", "B m6", "A m7"}
	for run := 1; run <= 3; run++ {
		if got := clusterProgram(t); !slices.Equal(got, want) {
			t.Fatalf("run %d: %v, want %v", run, got, want)
		}
	}
}

// clusterProgram runs the program on a fresh serve --nodes 3 and returns
// who got each message, in publish order.
func clusterProgram(t *testing.T) []string {
	t.Helper()
	urls, api := startServeNodes(t, "--addr", "127.0.0.1:0", "--nodes", "3", "--http", "127.0.0.1:0", "--clock", "manual")
	control := func(path string) {
		t.Helper()
		if code := getJSON(t, "POST", api+path, nil); code != 200 {
			t.Fatalf("POST %s: %d", path, code)
		}
	}
	channel := func(n int) *amqp.Channel {
		t.Helper()
		conn, err := amqp.Dial(urls[n-1])
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { closeConn(t, conn) })
		ch, err := conn.Channel()
		if err != nil {
			t.Fatal(err)
		}
		return ch
	}
	ch1 := channel(1)
	if _, err := ch1.QueueDeclare("qq", true, false, false, false, amqp.Table{"x-queue-type": "quorum"}); err != nil {
		t.Fatal(err)
	}
	consume := func(ch *amqp.Channel, tag string) <-chan amqp.Delivery {
		t.Helper()
		ds, err := ch.Consume("qq", tag, false, false, false, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		return ds
	}
	a, b := consume(ch1, "A"), consume(channel(3), "B")
	pub := channel(1)
	if err := pub.Confirm(false); err != nil {
		t.Fatal(err)
	}
	var got []string
	publish := func(body string) {
		t.Helper()
		dc, err := pub.PublishWithDeferredConfirm("", "qq", false, false, amqp.Publishing{Body: []byte(body)})
		if err != nil || !confirmed(t, dc) {
			t.Fatalf("publish %s: %v, not confirmed", body, err)
		}
		select {
		case d := <-a:
			got = append(got, "A "+string(d.Body))
		case d := <-b:
			got = append(got, "B "+string(d.Body))
		case <-time.After(bound):
			t.Fatalf("no delivery of %s within %v", body, bound)
		}
	}
	publish("m1")
	publish("m2")
	control("/api/sim/partition?group=3")
	control("/api/sim/advance?by=1s")
	publish("m3")
	publish("m4")
	control("/api/sim/heal")
	for i := 5; i <= 7; i++ {
		publish(fmt.Sprintf("m%d", i))
	}
	return got
}
