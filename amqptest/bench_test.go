package amqptest_test

import (
	"fmt"
	"github.com/amqpsim/amqpsim/internal/bubble"
	"os"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/amqpsim/amqpsim/amqptest"
	"github.com/amqpsim/amqpsim/sim"
)

// TestCloseLeavesNoGoroutine: Close ends every server goroutine, and the
// connection.close it sends lets the clients' goroutines end too. In a
// synctest bubble, synctest.Wait returns once every other goroutine of the
// bubble has exited or is blocked for good, so one count after it is exact.
func TestCloseLeavesNoGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		before, _ := bubble.Goroutines()
		srv, err := amqptest.Start()
		if err != nil {
			t.Fatal(err)
		}
		for range 3 {
			conn, err := amqp.DialConfig(srv.URL(), amqp.Config{Dial: srv.Dial})
			if err != nil {
				t.Fatal(err)
			}
			ch, _ := conn.Channel()
			ch.QueueDeclare("", false, false, true, false, nil)
			ch.Consume("", "", false, false, false, false, nil)
		}
		srv.Close()
		srv.Close()
		synctest.Wait()
		if n, dump := bubble.Goroutines(); n > before {
			t.Fatalf("%d goroutines, %d before:\n%s", n, before, dump)
		}
	})
}

// benchPublishConsume publishes b.N 128-byte messages with publisher
// confirms on one channel, then consumes them with 4 consumers (prefetch
// 100 each, acking every message), and reports messages per second for
// each phase and overall.
func benchPublishConsume(b *testing.B, dial func() (*amqp.Connection, error)) {
	conn, err := dial()
	if err != nil {
		b.Fatal(err)
	}
	defer closeConn(b, conn)
	ch, err := conn.Channel()
	if err != nil {
		b.Fatal(err)
	}
	q := fmt.Sprintf("amqpsim-bench-%d-%d", os.Getpid(), time.Now().UnixNano())
	if _, err := ch.QueueDeclare(q, false, true, false, false, nil); err != nil {
		b.Fatal(err)
	}
	defer ch.QueueDelete(q, false, false, false)
	if err := ch.Confirm(false); err != nil {
		b.Fatal(err)
	}
	body := make([]byte, 128)
	b.ResetTimer()
	start := time.Now()
	confirms := make([]*amqp.DeferredConfirmation, 0, 1000)
	for i := 0; i < b.N; i++ {
		dc, err := ch.PublishWithDeferredConfirm("", q, false, false, amqp.Publishing{Body: body})
		if err != nil {
			b.Fatal(err)
		}
		confirms = append(confirms, dc)
		if len(confirms) == cap(confirms) {
			for _, dc := range confirms {
				if !confirmed(b, dc) {
					b.Fatal("nack")
				}
			}
			confirms = confirms[:0]
		}
	}
	for _, dc := range confirms {
		if !confirmed(b, dc) {
			b.Fatal("nack")
		}
	}
	published := time.Since(start)

	var wg sync.WaitGroup
	var mu sync.Mutex
	left := b.N
	done := make(chan struct{})
	for i := range 4 {
		cch, err := conn.Channel()
		if err != nil {
			b.Fatal(err)
		}
		if err := cch.Qos(100, 0, false); err != nil {
			b.Fatal(err)
		}
		ds, err := cch.Consume(q, fmt.Sprintf("bench-%d", i), false, false, false, false, nil)
		if err != nil {
			b.Fatal(err)
		}
		wg.Go(func() {
			for {
				select {
				case d := <-ds:
					d.Ack(false)
					mu.Lock()
					left--
					if left == 0 {
						close(done)
					}
					mu.Unlock()
				case <-done:
					return
				}
			}
		})
	}
	// Bounded by progress: the consumers must take a message every wait.
	for seen := -1; ; {
		mu.Lock()
		now := left
		mu.Unlock()
		if now == seen {
			b.Fatalf("no delivery for %v, %d of %d messages left", wait, now, b.N)
		}
		seen = now
		select {
		case <-done:
		case <-time.After(wait):
			continue
		}
		break
	}
	waitGroup(b, &wg, "the consumers to return")
	total := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/published.Seconds(), "pub-msgs/s")
	b.ReportMetric(float64(b.N)/(total-published).Seconds(), "consume-msgs/s")
	b.ReportMetric(float64(b.N)/total.Seconds(), "msgs/s")
}

func BenchmarkPublishConsume(b *testing.B) {
	b.Run("memory", func(b *testing.B) {
		srv := amqptest.NewServer(b, amqptest.WithConfig(sim.Config{NoTrace: true}))
		benchPublishConsume(b, func() (*amqp.Connection, error) {
			return amqp.DialConfig(srv.URL(), amqp.Config{Dial: srv.Dial})
		})
	})
	b.Run("tcp", func(b *testing.B) {
		srv := amqptest.NewServer(b, amqptest.WithTCP(), amqptest.WithConfig(sim.Config{NoTrace: true}))
		benchPublishConsume(b, func() (*amqp.Connection, error) { return amqp.Dial(srv.URL()) })
	})
	b.Run("rabbitmq", func(b *testing.B) {
		url := os.Getenv("AMQP_URL")
		if url == "" {
			b.Skip("set AMQP_URL (e.g. amqp://guest:guest@127.0.0.1:5672/) to compare with a real RabbitMQ")
		}
		benchPublishConsume(b, func() (*amqp.Connection, error) { return amqp.Dial(url) })
	})
}

// BenchmarkConnect measures the time from nothing to a connected
// amqp091-go client on the in-memory transport: a new broker and server,
// the AMQP handshake, and a channel.
func BenchmarkConnect(b *testing.B) {
	for i := 0; i < b.N; i++ {
		srv, err := amqptest.Start(amqptest.WithConfig(sim.Config{NoTrace: true}))
		if err != nil {
			b.Fatal(err)
		}
		conn, err := amqp.DialConfig(srv.URL(), amqp.Config{Dial: srv.Dial})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := conn.Channel(); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		conn.Close()
		srv.Close()
		b.StartTimer()
	}
}
