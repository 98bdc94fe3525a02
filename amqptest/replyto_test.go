package amqptest_test

import (
	"strings"
	"testing"
	"testing/synctest"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/amqpsim/amqpsim/amqptest"
)

// An RPC over direct reply-to through amqp091-go, as the RabbitMQ tutorial
// writes it: the client consumes amq.rabbitmq.reply-to with no-ack and
// publishes its request with that reply_to; the server answers to the name
// the request carries.
func TestClientDirectReplyTo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := amqptest.NewServer(t)
		conn := dial(t, srv)
		client, server := channel(t, conn), channel(t, conn)
		declare(t, server, "rpc")
		requests, err := server.Consume("rpc", "srv", true, false, false, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		replies, err := client.Consume("amq.rabbitmq.reply-to", "rc", true, false, false, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := client.Publish("", "rpc", false, false, amqp.Publishing{ReplyTo: "amq.rabbitmq.reply-to", CorrelationId: "7", Body: []byte("2+2")}); err != nil {
			t.Fatal(err)
		}
		req := recv(t, requests)
		if !strings.HasPrefix(req.ReplyTo, "amq.rabbitmq.reply-to.") {
			t.Fatalf("reply_to %q", req.ReplyTo)
		}
		if err := server.Publish("", req.ReplyTo, false, false, amqp.Publishing{CorrelationId: req.CorrelationId, Body: []byte("4")}); err != nil {
			t.Fatal(err)
		}
		if r := recv(t, replies); string(r.Body) != "4" || r.CorrelationId != "7" || r.ConsumerTag != "rc" {
			t.Errorf("reply %q correlation %q tag %q", r.Body, r.CorrelationId, r.ConsumerTag)
		}
	})
}
