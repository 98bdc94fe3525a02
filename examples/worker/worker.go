// Package worker is an example of the code amqpsim exists to test: an
// amqp091-go consumer with a prefetch window, manual acks, a dead-letter
// path for messages it cannot handle, and a reconnect loop with back-off.
// worker_test.go property-tests it against fault schedules with rapid.
package worker

import (
	"context"
	"net"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// Worker consumes Queue and hands each body to Handle: acked when Handle
// returns nil, rejected without requeue (to the queue's dead-letter
// exchange) when it returns an error.
type Worker struct {
	URL      string
	Dial     func(network, addr string) (net.Conn, error) // nil: amqp091-go's default
	Queue    string
	Prefetch int
	Backoff  time.Duration // between reconnects
	Handle   func(body []byte) error
}

// Run consumes until ctx is done, reconnecting after every failure.
func (w *Worker) Run(ctx context.Context) {
	for ctx.Err() == nil {
		w.session(ctx)
		select {
		case <-ctx.Done():
		case <-time.After(w.Backoff):
		}
	}
}

// session runs one connection until it fails or ctx is done.
func (w *Worker) session(ctx context.Context) {
	conn, err := amqp.DialConfig(w.URL, amqp.Config{
		Dial:       w.Dial,
		Properties: amqp.Table{"connection_name": "worker"},
	})
	if err != nil {
		return
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return
	}
	// Qos before Consume: a consumer created first keeps an unlimited window.
	if err := ch.Qos(w.Prefetch, 0, false); err != nil {
		return
	}
	deliveries, err := ch.Consume(w.Queue, "", false, false, false, false, nil)
	if err != nil {
		return
	}
	for {
		select {
		case <-ctx.Done():
			return
		case d, ok := <-deliveries:
			if !ok {
				return // the channel or the connection closed
			}
			if w.Handle(d.Body) != nil {
				d.Reject(false)
			} else {
				d.Ack(false)
			}
		}
	}
}
