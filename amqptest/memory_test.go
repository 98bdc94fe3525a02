package amqptest_test

import (
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/amqpsim/amqpsim/amqptest"
	"github.com/amqpsim/amqpsim/sim"
)

// TestMemoryWatermark: WithMemoryWatermark blocks a publisher once the
// process's heap, collected, is above the limit (connection.blocked "low
// on memory") and unblocks it once a purge lets the heap fall back. The
// publisher waits for each confirm: over the in-memory transport, which
// never blocks a client's write, what it wrote and the broker has not read
// stays in the heap. The test waits for the broker's signals, each within
// a generous bound that fails loudly.
func TestMemoryWatermark(t *testing.T) {
	// The trace keeps every body: off, or the heap never falls back.
	srv := amqptest.NewServer(t, amqptest.WithMemoryWatermark(96<<20), amqptest.WithLogf(t.Logf),
		amqptest.WithConfig(sim.Config{NoTrace: true}))
	conn, err := amqp.DialConfig(srv.URL(), amqp.Config{Dial: srv.Dial})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	blocked := conn.NotifyBlocked(make(chan amqp.Blocking, 4))
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDeclare("flood", false, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if err := ch.Confirm(false); err != nil {
		t.Fatal(err)
	}
	wait := func(what string, want bool) {
		t.Helper()
		select {
		case b := <-blocked:
			if b.Active != want || (want && b.Reason != "low on memory") {
				t.Fatalf("%s: connection.blocked active=%t reason %q", what, b.Active, b.Reason)
			}
		case <-time.After(60 * time.Second):
			t.Fatalf("%s: no connection.blocked change within 60 s", what)
		}
	}
	body := make([]byte, 1<<20)
	go func() {
		for i := 0; i < 1000; i++ {
			dc, err := ch.PublishWithDeferredConfirm("", "flood", false, false, amqp.Publishing{Body: body})
			if err != nil || !dc.Wait() {
				return
			}
		}
	}()
	wait("flooding", true)
	admin, err := srv.Broker().Dial(sim.ConnectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ach, err := admin.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ach.QueuePurge("flood"); err != nil {
		t.Fatal(err)
	}
	wait("purged", false)
}
