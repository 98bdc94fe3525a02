package sim_test

import (
	"strings"
	"testing"

	"github.com/amqpsim/amqpsim/sim"
)

// Direct reply-to as RabbitMQ 3.10.8 does it (measured with amqp091-go): a
// request's reply_to becomes a name of the requesting channel's own, a
// reply published to it reaches the reply consumer (consumer tag, the
// channel's next delivery tag, exchange "", the name as routing key), and a
// mandatory reply also comes back as basic.return, as 3.10 counts it
// unrouted.
func TestReplyToRoundTrip(t *testing.T) {
	// 3.10: from 4.2 a mandatory reply counts as routed (TestReplyToMandatoryRouted42).
	e := newEnvOn(t, sim.V3_10)
	e.declare("rpc", sim.QueueOptions{})
	replies := e.consume(e.ch, sim.ReplyTo, "rc", sim.ConsumeOptions{NoAck: true})
	server := e.channel(e.conn)
	requests := e.consume(server, "rpc", "srv", sim.ConsumeOptions{NoAck: true})
	e.must(e.ch.Publish("", "rpc", sim.PublishOptions{}, sim.Message{Properties: sim.Properties{ReplyTo: sim.ReplyTo}, Body: []byte("req")}))
	req, ok := requests.Next()
	if !ok || !strings.HasPrefix(req.ReplyTo, sim.ReplyTo+".") {
		t.Fatalf("request reply_to %q", req.ReplyTo)
	}
	if info, err := server.QueueDeclare(req.ReplyTo, sim.QueueOptions{Passive: true}); err != nil || info.Ready != 0 || info.Consumers != 1 {
		t.Errorf("declare of the reply name: %+v %v", info, err)
	}
	e.must(server.Publish("", req.ReplyTo, sim.PublishOptions{Mandatory: true}, sim.Message{Body: []byte("resp")}))
	d, ok := replies.Next()
	if !ok || string(d.Body) != "resp" || d.ConsumerTag != "rc" || d.DeliveryTag != 1 || d.RoutingKey != req.ReplyTo || d.Redelivered {
		t.Errorf("reply = %+v (%t)", d, ok)
	}
	if r := server.Returns(); len(r) != 1 || r[0].ReplyCode != 312 {
		t.Errorf("returns of the mandatory reply: %+v", r)
	}
	e.must(server.Publish("", sim.ReplyTo+".bogus", sim.PublishOptions{}, sim.Message{Body: []byte("lost")}))
	if _, ok := replies.Next(); ok {
		t.Error("a bogus reply name was delivered")
	}
}

// A reply is the broker's own copy, as a queued message is: the publisher
// may reuse its body buffer and headers map once Publish returns.
func TestReplyToOwnsItsCopy(t *testing.T) {
	e := newEnv(t)
	e.declare("rpc", sim.QueueOptions{})
	replies := e.consume(e.ch, sim.ReplyTo, "rc", sim.ConsumeOptions{NoAck: true})
	server := e.channel(e.conn)
	requests := e.consume(server, "rpc", "srv", sim.ConsumeOptions{NoAck: true})
	e.must(e.ch.Publish("", "rpc", sim.PublishOptions{}, sim.Message{Properties: sim.Properties{ReplyTo: sim.ReplyTo}}))
	req, ok := requests.Next()
	if !ok {
		t.Fatal("no request")
	}
	body, headers := []byte("resp"), sim.Table{"k": "v"}
	e.must(server.Publish("", req.ReplyTo, sim.PublishOptions{}, sim.Message{Properties: sim.Properties{Headers: headers}, Body: body}))
	headers["k"], body[0] = "changed", 'X'
	d, ok := replies.Next()
	if !ok || string(d.Body) != "resp" || d.Headers["k"] != "v" {
		t.Errorf("reply = %q headers %v (%t), want the message as published", d.Body, d.Headers, ok)
	}
}
