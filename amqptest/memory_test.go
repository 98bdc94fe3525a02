package amqptest_test

import (
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/amqpsim/amqpsim/amqptest"
	"github.com/amqpsim/amqpsim/internal/memwatch"
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

// TestIdleChannelsLetTheMemoryAlarmClear is issue 27's: 40 channels each
// publish one 8 MiB message, which raises the memory alarm (a watermark
// 256 MiB above what the process held before: the queue holds 320 MiB);
// another publisher is blocked; the 40 messages are consumed and the 40
// channels go idle. The alarm must then clear, as nothing holds the
// messages any more, the blocked publisher's message must arrive, and
// every message must have been delivered whole. The channels kept their
// last message's frames (320 MiB), so the alarm stayed up until they
// closed. The monitor is stepped by hand (memwatch.Monitor.Step, which
// collects garbage before it looks), in a synctest bubble: nothing waits
// on the wall clock.
func TestIdleChannelsLetTheMemoryAlarmClear(t *testing.T) {
	const channels, size = 40, 8 << 20
	synctest.Test(t, func(t *testing.T) {
		srv := amqptest.NewServer(t, amqptest.WithConfig(sim.Config{NoTrace: true}))
		b := srv.Broker()
		dial := func() *amqp.Connection {
			conn, err := amqp.DialConfig(srv.URL(), amqp.Config{Dial: srv.Dial})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { closeConn(t, conn) })
			return conn
		}
		channel := func(conn *amqp.Connection) *amqp.Channel {
			ch, err := conn.Channel()
			if err != nil {
				t.Fatal(err)
			}
			return ch
		}
		runtime.GC()
		monitor := &memwatch.Monitor{Limit: memwatch.HeapInUse() + 256<<20, Logf: t.Logf}

		publishers := dial()
		admin := channel(publishers)
		for _, q := range []string{"big", "small"} {
			if _, err := admin.QueueDeclare(q, false, false, false, false, nil); err != nil {
				t.Fatal(err)
			}
		}
		body := make([]byte, size)
		for i := range channels {
			ch := channel(publishers)
			if err := ch.Confirm(false); err != nil {
				t.Fatal(err)
			}
			body[0] = byte(i)
			dc, err := ch.PublishWithDeferredConfirm("", "big", false, false, amqp.Publishing{Body: body})
			if err != nil || !dc.Wait() {
				t.Fatalf("publish %d: %v", i, err)
			}
		}
		body = nil
		if !monitor.Step(b) {
			t.Fatalf("320 MiB queued did not raise the memory alarm (limit %d bytes)", monitor.Limit)
		}

		other := dial()
		blocked := other.NotifyBlocked(make(chan amqp.Blocking, 4))
		och := channel(other)
		if err := och.Confirm(false); err != nil {
			t.Fatal(err)
		}
		dc, err := och.PublishWithDeferredConfirm("", "small", false, false, amqp.Publishing{Body: []byte("held")})
		if err != nil {
			t.Fatal(err)
		}
		if bl := recv(t, blocked); !bl.Active {
			t.Fatalf("the other publisher got %+v, want connection.blocked", bl)
		}

		consumer := channel(dial())
		deliveries, err := consumer.Consume("big", "", false, false, false, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[byte]bool{}
		for range channels {
			d := recv(t, deliveries)
			if len(d.Body) != size || seen[d.Body[0]] {
				t.Fatalf("delivery of %d bytes, marked %d (seen %t)", len(d.Body), d.Body[0], seen[d.Body[0]])
			}
			seen[d.Body[0]] = true
			if err := d.Ack(false); err != nil {
				t.Fatal(err)
			}
		}
		synctest.Wait() // the acks are applied (WaitApplied would wait for the blocked connection too)

		// The monitor collects garbage at most every fourth look while
		// the alarm it raised is up.
		for look := 1; monitor.Step(b); look++ {
			if look == 8 {
				runtime.GC()
				t.Fatalf("the memory alarm stays up with the 40 messages consumed: %d bytes in use, limit %d", memwatch.HeapInUse(), monitor.Limit)
			}
		}
		if bl := recv(t, blocked); bl.Active {
			t.Fatalf("the other publisher got %+v, want connection.unblocked", bl)
		}
		if !dc.Wait() {
			t.Fatal("the held publish was nacked")
		}
		if s, _ := b.QueueStats("/", "small"); s.Ready != 1 {
			t.Errorf("small: %d ready, want the held message", s.Ready)
		}
		if s, _ := b.QueueStats("/", "big"); s.Ready+s.Unacked != 0 {
			t.Errorf("big: %+v, want it drained", s)
		}
	})
}
