package sim_test

import (
	"testing"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// routes publishes one message per key to exchange x on e.ch and returns, for each queue, the keys it received.
func (e *env) routes(x string, queues []string, keys ...string) map[string][]string {
	e.t.Helper()
	for _, k := range keys {
		e.must(e.ch.Publish(x, k, sim.PublishOptions{}, sim.Message{Body: []byte(k)}))
	}
	out := map[string][]string{}
	for _, q := range queues {
		out[q] = e.ready(q)
		if _, err := e.ch.QueuePurge(q); err != nil {
			e.t.Fatal(err)
		}
	}
	return out
}

// The default exchange routes to the queue named by the routing key, and nowhere else.
func TestDefaultExchangeRoutesByQueueName(t *testing.T) {
	e := newEnv(t)
	e.declare("a", sim.QueueOptions{})
	e.declare("b", sim.QueueOptions{})
	diff(t, "routes", map[string][]string{"a": {"a"}, "b": {"b"}}, e.routes("", []string{"a", "b"}, "a", "b", "c"))
}

// A direct exchange routes on exact key equality; a queue bound twice gets one copy.
func TestDirectExchange(t *testing.T) {
	e := newEnv(t)
	e.must(e.ch.ExchangeDeclare("x", "direct", sim.ExchangeOptions{}))
	e.declare("a", sim.QueueOptions{})
	e.declare("b", sim.QueueOptions{})
	e.must(e.ch.QueueBind("a", "k1", "x", nil))
	e.must(e.ch.QueueBind("a", "k2", "x", nil))
	e.must(e.ch.QueueBind("b", "k1", "x", nil))
	diff(t, "routes", map[string][]string{"a": {"k1", "k2"}, "b": {"k1"}}, e.routes("x", []string{"a", "b"}, "k1", "k2", "k3"))
	e.must(e.ch.QueueUnbind("b", "k1", "x", nil))
	diff(t, "after unbind", map[string][]string{"a": {"k1"}, "b": {}}, e.routes("x", []string{"a", "b"}, "k1"))
}

// A fanout exchange copies every message to every bound queue, whatever the key.
func TestFanoutExchange(t *testing.T) {
	e := newEnv(t)
	e.declare("a", sim.QueueOptions{})
	e.declare("b", sim.QueueOptions{})
	e.must(e.ch.QueueBind("a", "", "amq.fanout", nil))
	e.must(e.ch.QueueBind("b", "ignored", "amq.fanout", nil))
	diff(t, "routes", map[string][]string{"a": {"x", "y"}, "b": {"x", "y"}}, e.routes("amq.fanout", []string{"a", "b"}, "x", "y"))
}

// Topic patterns: "*" is exactly one word, "#" zero or more; an empty key has no words (table checked against RabbitMQ 3.10.8).
func TestTopicExchange(t *testing.T) {
	keys := []string{"", "a", "a.b", "a.b.c", "b", "a.x.b", ".", "a."}
	tests := []struct {
		pattern string
		want    []string
	}{
		{"*", []string{"a", "b"}},
		{"#", keys},
		{"a.*", []string{"a.b", "a."}},
		{"a.#", []string{"a", "a.b", "a.b.c", "a.x.b", "a."}},
		{"#.b", []string{"a.b", "b", "a.x.b"}},
		{"a.*.#", []string{"a.b", "a.b.c", "a.x.b", "a."}},
		{"*.*", []string{"a.b", ".", "a."}},
		{"a.#.b", []string{"a.b", "a.x.b"}},
		{"#.#", keys},
		{"", []string{""}},
	}
	for _, tt := range tests {
		t.Run(tt.pattern, func(t *testing.T) {
			e := newEnv(t)
			e.declare("q", sim.QueueOptions{})
			e.must(e.ch.QueueBind("q", tt.pattern, "amq.topic", nil))
			diff(t, "matched keys", map[string][]string{"q": tt.want}, e.routes("amq.topic", []string{"q"}, keys...))
		})
	}
}

// Headers exchange: x-match all (the default) or any; x- keys are ignored; integer types compare by value (checked against RabbitMQ 3.10.8).
func TestHeadersExchange(t *testing.T) {
	headers := []sim.Table{{"a": int32(1), "b": "x"}, {"a": int32(1)}, {"a": int64(1)}, {"b": "x"}, {}, {"a": "1"}}
	tests := []struct {
		name    string
		binding sim.Table
		want    []string // indexes into headers
	}{
		{"all", sim.Table{"x-match": "all", "a": int32(1), "b": "x"}, []string{"0"}},
		{"any", sim.Table{"x-match": "any", "a": int32(1), "b": "x"}, []string{"0", "1", "2", "3"}},
		{"default is all", sim.Table{"a": int32(1)}, []string{"0", "1", "2"}},
		{"default is all, with two keys", sim.Table{"a": int32(1), "b": "x"}, []string{"0"}}, // any would match 0-3
		{"any without keys", sim.Table{"x-match": "any"}, []string{}},
		{"all without keys", sim.Table{"x-match": "all"}, []string{"0", "1", "2", "3", "4", "5"}},
		{"void matches presence", sim.Table{"a": nil}, []string{"0", "1", "2", "5"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.declare("q", sim.QueueOptions{})
			e.must(e.ch.QueueBind("q", "", "amq.headers", tt.binding))
			for i, h := range headers {
				m := sim.Message{Body: []byte{byte('0' + i)}}
				m.Headers = h
				e.must(e.ch.Publish("amq.headers", "", sim.PublishOptions{}, m))
			}
			diff(t, "matched", tt.want, e.ready("q"))
		})
	}
}

// Every vhost has the predeclared exchanges: the default one and amq.direct/fanout/topic/headers/match.
func TestPredeclaredExchanges(t *testing.T) {
	e := newEnv(t)
	for _, x := range []struct{ name, kind string }{
		{"amq.direct", "direct"}, {"amq.fanout", "fanout"}, {"amq.topic", "topic"},
		{"amq.headers", "headers"}, {"amq.match", "headers"},
	} {
		if err := e.ch.ExchangeDeclare(x.name, x.kind, sim.ExchangeOptions{Passive: true}); err != nil {
			t.Fatalf("%s: %v", x.name, err)
		}
		// A redeclare with the same type and durable=true is fine.
		if err := e.ch.ExchangeDeclare(x.name, x.kind, sim.ExchangeOptions{Durable: true}); err != nil {
			t.Fatalf("redeclare %s: %v", x.name, err)
		}
	}
}

// exchange.declare errors, with their codes, texts and scopes (checked against RabbitMQ 3.10.8).
func TestExchangeDeclareErrors(t *testing.T) {
	tests := []struct {
		name, x, kind string
		o             sim.ExchangeOptions
		code          int
		text          string
	}{
		{"default exchange", "", "direct", sim.ExchangeOptions{}, 403, "ACCESS_REFUSED - operation not permitted on the default exchange"},
		{"reserved prefix", "amq.mine", "direct", sim.ExchangeOptions{}, 403, "ACCESS_REFUSED - exchange name 'amq.mine' contains reserved prefix 'amq.*'"},
		{"unknown type", "y", "bogus", sim.ExchangeOptions{}, 503, "COMMAND_INVALID - unknown exchange type 'bogus'"},
		{"other type", "x", "fanout", sim.ExchangeOptions{}, 406, "PRECONDITION_FAILED - inequivalent arg 'type' for exchange 'x' in vhost '/': received 'fanout' but current is 'direct'"},
		{"other durable", "x", "direct", sim.ExchangeOptions{Durable: true}, 406, "PRECONDITION_FAILED - inequivalent arg 'durable' for exchange 'x' in vhost '/': received 'true' but current is 'false'"},
		{"passive missing", "nope", "direct", sim.ExchangeOptions{Passive: true}, 404, "NOT_FOUND - no exchange 'nope' in vhost '/'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// 3.10: from 3.13 an unknown type is 406 on the channel
			// (TestUnknownExchangeTypeChannelError313).
			e := newEnvOn(t, sim.V3_10)
			e.must(e.ch.ExchangeDeclare("x", "direct", sim.ExchangeOptions{}))
			err := e.ch.ExchangeDeclare(tt.x, tt.kind, tt.o)
			wantErr(t, err, tt.code, tt.text, protocol.Method{Class: 40, ID: 10})
		})
	}
}

// exchange.delete: a missing exchange is fine, if-unused refuses one with bindings, system exchanges cannot be deleted.
func TestExchangeDelete(t *testing.T) {
	e := newEnv(t)
	e.must(e.ch.ExchangeDelete("missing", sim.ExchangeDeleteOptions{}))
	e.must(e.ch.ExchangeDeclare("x", "fanout", sim.ExchangeOptions{}))
	e.declare("q", sim.QueueOptions{})
	e.must(e.ch.QueueBind("q", "", "x", nil))
	err := e.ch.ExchangeDelete("x", sim.ExchangeDeleteOptions{IfUnused: true})
	wantErr(t, err, 406, "PRECONDITION_FAILED - exchange 'x' in vhost '/' in use", protocol.Method{Class: 40, ID: 20})

	ch := e.channel(e.conn)
	e.must(ch.ExchangeDelete("x", sim.ExchangeDeleteOptions{}))
	err = ch.ExchangeDeclare("x", "fanout", sim.ExchangeOptions{Passive: true})
	wantErr(t, err, 404, "NOT_FOUND - no exchange 'x' in vhost '/'", protocol.ExchangeDeclare)
}

// Deleting the default exchange or an amq.* one is 403 (texts checked against RabbitMQ 3.10.8).
func TestExchangeDeleteSystemExchangeRefused(t *testing.T) {
	tests := []struct{ x, text string }{
		{"", "ACCESS_REFUSED - operation not permitted on the default exchange"},
		{"amq.direct", "ACCESS_REFUSED - deletion of system exchange 'amq.direct' in vhost '/' not allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.x, func(t *testing.T) {
			e := newEnv(t)
			wantErr(t, e.ch.ExchangeDelete(tt.x, sim.ExchangeDeleteOptions{}), 403, tt.text, protocol.ExchangeDelete)
			ch := e.channel(e.conn)
			if err := ch.ExchangeDeclare("amq.direct", "direct", sim.ExchangeOptions{Passive: true}); err != nil {
				t.Errorf("amq.direct gone: %v", err)
			}
		})
	}
}

// Publishing to a missing exchange is 404, closing the channel.
func TestPublishToMissingExchangeClosesChannel(t *testing.T) {
	e := newEnv(t)
	err := e.ch.Publish("nope", "k", sim.PublishOptions{}, sim.Message{})
	wantErr(t, err, 404, "NOT_FOUND - no exchange 'nope' in vhost '/'", protocol.Method{Class: 60, ID: 40})
	wantClosed(t, e.ch.Err(), asError(err))
	if e.conn.Err() != nil {
		t.Errorf("connection closed: %v", e.conn.Err())
	}
}

// A mandatory message that reaches no queue comes back as basic.return 312 NO_ROUTE; a non-mandatory one is dropped.
func TestMandatoryUnroutableReturned(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{})
	m := sim.Message{Body: []byte("lost")}
	e.must(e.ch.Publish("amq.direct", "nobody", sim.PublishOptions{Mandatory: true}, m))
	e.must(e.ch.Publish("amq.direct", "nobody", sim.PublishOptions{}, m))
	e.must(e.ch.Publish("", "q", sim.PublishOptions{Mandatory: true}, m))
	want := []sim.Return{{ReplyCode: 312, ReplyText: "NO_ROUTE", Exchange: "amq.direct", RoutingKey: "nobody", Message: m}}
	diff(t, "returns", want, e.ch.Returns())
}

// Publisher confirms: tags count from 1 per channel, and a return comes before the ack of the same publish.
func TestPublisherConfirms(t *testing.T) {
	b := sim.New(sim.Config{})
	conn, _ := b.Dial(sim.ConnectOptions{})
	ch, _ := conn.Channel()
	if _, err := ch.QueueDeclare("q", sim.QueueOptions{}); err != nil {
		t.Fatal(err)
	}
	ch.Publish("", "q", sim.PublishOptions{}, sim.Message{}) // before confirm.select: no confirm
	if err := ch.Confirm(); err != nil {
		t.Fatal(err)
	}
	ch.Publish("", "q", sim.PublishOptions{}, sim.Message{})
	ch.Publish("", "missing", sim.PublishOptions{Mandatory: true}, sim.Message{})
	want := []sim.Push{
		{Method: protocol.BasicAck, Channel: 1, Delivery: sim.Delivery{DeliveryTag: 1}},
		{Method: protocol.BasicReturn, Channel: 1, ReplyCode: 312, ReplyText: "NO_ROUTE", Delivery: sim.Delivery{RoutingKey: "missing"}},
		{Method: protocol.BasicAck, Channel: 1, Delivery: sim.Delivery{DeliveryTag: 2}},
	}
	diff(t, "pushes", want, conn.Drain(nil))
	if s := ch.Stats(); !s.Confirming || s.LastPublishTag != 2 {
		t.Errorf("stats: %+v", s)
	}
}

// Sender-selected distribution: the CC and BCC headers add routing keys, a
// queue reached twice gets one copy, and BCC is not delivered (checked
// against RabbitMQ 3.10.8: CC [b, a], BCC [c] to "a" gives one copy each,
// with CC and without BCC).
func TestPublishRoutesByCCAndBCCHeaders(t *testing.T) {
	e := newEnv(t)
	for _, q := range []string{"a", "b", "c"} {
		e.declare(q, sim.QueueOptions{})
	}
	m := sim.Message{Body: []byte("m")}
	m.Headers = sim.Table{"CC": []any{"b", "a"}, "BCC": []any{"c"}}
	e.must(e.ch.Publish("", "a", sim.PublishOptions{}, m))
	for _, q := range []string{"a", "b", "c"} {
		msgs, err := e.b.QueueMessages("/", q)
		e.must(err)
		if len(msgs) != 1 {
			t.Fatalf("queue %s holds %d copies, want 1", q, len(msgs))
		}
		if _, ok := msgs[0].Headers["BCC"]; ok {
			t.Errorf("queue %s: BCC header delivered", q)
		}
		if _, ok := msgs[0].Headers["CC"]; !ok {
			t.Errorf("queue %s: CC header lost", q)
		}
	}
}
