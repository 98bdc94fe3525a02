package sim_test

import (
	"testing"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// The exchange-binding and alternate-exchange tests follow RabbitMQ 3.10.8,
// measured with amqp091-go on the local broker.

func (e *env) exchange(name, kind string, o sim.ExchangeOptions) {
	e.t.Helper()
	if err := e.ch.ExchangeDeclare(name, kind, o); err != nil {
		e.t.Fatalf("declare exchange %q: %v", name, err)
	}
}

func (e *env) exchangeExists(name string) bool {
	e.t.Helper()
	ch := e.channel(e.conn)
	err := ch.ExchangeDeclare(name, "fanout", sim.ExchangeOptions{Passive: true})
	if err == nil {
		ch.Close()
	}
	return err == nil
}

// A message goes through a chain of exchanges; a cycle ends, and a queue
// reached twice gets one copy.
func TestExchangeBindRoutesThroughChainsAndCycles(t *testing.T) {
	e := newEnv(t)
	e.exchange("x1", "fanout", sim.ExchangeOptions{})
	e.exchange("x2", "direct", sim.ExchangeOptions{})
	e.declare("q", sim.QueueOptions{})
	e.must(e.ch.ExchangeBind("x2", "k", "x1", nil))
	e.must(e.ch.ExchangeBind("x1", "k", "x2", nil)) // a cycle
	e.must(e.ch.QueueBind("q", "k", "x2", nil))
	e.must(e.ch.QueueBind("q", "", "x1", nil)) // reached twice
	e.must(e.ch.Publish("x1", "k", sim.PublishOptions{}, sim.Message{Body: []byte("m1")}))
	e.must(e.ch.Publish("x1", "other", sim.PublishOptions{}, sim.Message{Body: []byte("m2")}))
	diff(t, "ready", []string{"m1", "m2"}, e.ready("q"))
}

// RabbitMQ's errors: the default exchange is neither end (403); a missing
// source is reported before a missing destination (404); unbinding what
// does not exist is fine.
func TestExchangeBindErrors(t *testing.T) {
	e := newEnv(t)
	e.exchange("x1", "fanout", sim.ExchangeOptions{})
	for _, tc := range []struct {
		name     string
		dst, src string
		code     int
		text     string
	}{
		{"missing source", "x1", "nosrc", 404, "NOT_FOUND - no exchange 'nosrc' in vhost '/'"},
		{"missing destination", "nodst", "x1", 404, "NOT_FOUND - no exchange 'nodst' in vhost '/'"},
		{"both missing", "nodst", "nosrc", 404, "NOT_FOUND - no exchange 'nosrc' in vhost '/'"},
		{"default as source", "x1", "", 403, "ACCESS_REFUSED - operation not permitted on the default exchange"},
		{"default as destination", "", "x1", 403, "ACCESS_REFUSED - operation not permitted on the default exchange"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ch := e.channel(e.conn)
			wantErr(t, ch.ExchangeBind(tc.dst, "k", tc.src, nil), tc.code, tc.text, protocol.ExchangeBind)
		})
	}
	e.must(e.ch.ExchangeUnbind("x1", "zz", "amq.direct", nil))
	e.must(e.ch.ExchangeUnbind("x1", "zz", "nosrc", nil))
}

// An auto-delete exchange goes when it loses its last binding as a source,
// also when that binding goes with its deleted destination; one that is
// only a destination stays; exchange.delete if-unused counts the bindings
// an exchange is the source of.
func TestExchangeBindAutoDeleteAndIfUnused(t *testing.T) {
	e := newEnv(t)
	e.exchange("x1", "fanout", sim.ExchangeOptions{})
	e.exchange("src", "fanout", sim.ExchangeOptions{AutoDelete: true})
	e.must(e.ch.ExchangeBind("x1", "", "src", nil))
	e.must(e.ch.ExchangeUnbind("x1", "", "src", nil))
	if e.exchangeExists("src") {
		t.Error("an auto-delete source survived its last binding")
	}
	e.exchange("dst", "fanout", sim.ExchangeOptions{AutoDelete: true})
	e.must(e.ch.ExchangeBind("dst", "", "x1", nil))
	e.must(e.ch.ExchangeUnbind("dst", "", "x1", nil))
	if !e.exchangeExists("dst") {
		t.Error("an auto-delete exchange that was only a destination was deleted")
	}
	e.exchange("src2", "fanout", sim.ExchangeOptions{AutoDelete: true})
	e.must(e.ch.ExchangeBind("x1", "", "src2", nil))
	wantErr(t, e.ch.ExchangeDelete("src2", sim.ExchangeDeleteOptions{IfUnused: true}), 406,
		"PRECONDITION_FAILED - exchange 'src2' in vhost '/' in use", protocol.ExchangeDelete)
	ch := e.channel(e.conn)
	e.must(ch.ExchangeDelete("x1", sim.ExchangeDeleteOptions{IfUnused: true})) // a destination only: unused
	if e.exchangeExists("src2") {
		t.Error("an auto-delete source survived the deletion of its binding's destination")
	}
}

// A message its exchange routes nowhere goes to the alternate exchange; a
// mandatory one comes back only when the alternate routes it nowhere too,
// with the original exchange and key; a missing alternate routes nowhere.
func TestAlternateExchange(t *testing.T) {
	e := newEnv(t)
	e.exchange("ae", "fanout", sim.ExchangeOptions{})
	e.exchange("main", "direct", sim.ExchangeOptions{Args: sim.Table{"alternate-exchange": "ae"}})
	e.exchange("lost", "direct", sim.ExchangeOptions{Args: sim.Table{"alternate-exchange": "nosuchae"}})
	e.declare("q", sim.QueueOptions{})
	e.declare("k", sim.QueueOptions{})
	e.must(e.ch.QueueBind("k", "k", "main", nil))
	e.must(e.ch.Publish("main", "nokey", sim.PublishOptions{Mandatory: true}, sim.Message{Body: []byte("nowhere")}))
	if r := e.ch.Returns(); len(r) != 1 || r[0].Exchange != "main" || r[0].RoutingKey != "nokey" || r[0].ReplyCode != 312 {
		t.Errorf("returns = %+v", r)
	}
	e.must(e.ch.QueueBind("q", "", "ae", nil))
	e.must(e.ch.Publish("main", "nokey", sim.PublishOptions{Mandatory: true}, sim.Message{Body: []byte("to ae")}))
	e.must(e.ch.Publish("main", "k", sim.PublishOptions{Mandatory: true}, sim.Message{Body: []byte("bound")}))
	if r := e.ch.Returns(); len(r) != 0 {
		t.Errorf("returned %+v", r)
	}
	diff(t, "alternate", []string{"to ae"}, e.ready("q"))
	diff(t, "bound", []string{"bound"}, e.ready("k"))
	e.must(e.ch.Publish("lost", "k", sim.PublishOptions{Mandatory: true}, sim.Message{Body: []byte("x")}))
	if r := e.ch.Returns(); len(r) != 1 {
		t.Errorf("missing alternate: returns = %+v", r)
	}
	wantErr(t, e.ch.ExchangeDeclare("bad", "direct", sim.ExchangeOptions{Args: sim.Table{"alternate-exchange": int32(5)}}), 406,
		"PRECONDITION_FAILED - invalid type 'signedint' for arg 'alternate-exchange' in exchange 'bad' in vhost '/'", protocol.ExchangeDeclare)
}

// A redeclaration compares alternate-exchange as queues compare their
// arguments (measured texts).
func TestAlternateExchangeInequivalent(t *testing.T) {
	e := newEnv(t)
	e.exchange("a", "direct", sim.ExchangeOptions{Args: sim.Table{"alternate-exchange": "ae1"}})
	for _, tc := range []struct {
		args sim.Table
		text string
	}{
		{sim.Table{"alternate-exchange": "ae2"}, "PRECONDITION_FAILED - inequivalent arg 'alternate-exchange' for exchange 'a' in vhost '/': received 'ae2' but current is 'ae1'"},
		{nil, "PRECONDITION_FAILED - inequivalent arg 'alternate-exchange' for exchange 'a' in vhost '/': received none but current is the value 'ae1' of type 'longstr'"},
	} {
		ch := e.channel(e.conn)
		wantErr(t, ch.ExchangeDeclare("a", "direct", sim.ExchangeOptions{Args: tc.args}), 406, tc.text, protocol.ExchangeDeclare)
	}
}

// Every way into routing ends a cycle after one visit of each exchange:
// a publish through Broker.Publish, in a transaction, and a dead-lettered
// message, through exchange bindings and alternate exchanges in a loop
// (a routes nokey nowhere, so on to its alternate b, which fans out back
// to a). Routing's guard turns a broken visited set into a loud 541
// instead of a walk round the cycle until memory runs out; with the set
// intact no route comes near it.
func TestRoutingCyclesEndEverywhere(t *testing.T) {
	e := newEnv(t)
	e.exchange("a", "direct", sim.ExchangeOptions{Args: sim.Table{"alternate-exchange": "b"}})
	e.exchange("b", "fanout", sim.ExchangeOptions{})
	e.must(e.ch.ExchangeBind("a", "", "b", nil))
	e.declare("q", sim.QueueOptions{})
	e.must(e.ch.QueueBind("q", "k", "a", nil))
	for _, key := range []string{"k", "nokey"} {
		e.declare("dead-"+key, sim.QueueOptions{Args: sim.Table{"x-dead-letter-exchange": "a", "x-dead-letter-routing-key": key}})
	}

	for _, key := range []string{"k", "nokey"} {
		if err := e.b.Publish("/", "a", key, sim.Message{Body: []byte("direct-" + key)}); err != nil {
			t.Fatalf("Broker.Publish %s: %v", key, err)
		}
	}
	tx := e.channel(e.conn)
	e.must(tx.Tx())
	for _, key := range []string{"k", "nokey"} {
		e.must(tx.Publish("a", key, sim.PublishOptions{}, sim.Message{Body: []byte("tx-" + key)}))
	}
	e.must(tx.TxCommit())
	for _, key := range []string{"k", "nokey"} {
		e.publish("dead-"+key, "dlx-"+key)
		g, ok, err := e.ch.Get("dead-"+key, false)
		if err != nil || !ok {
			t.Fatalf("get: %v %v", ok, err)
		}
		e.must(e.ch.Reject(g.DeliveryTag, false))
	}
	diff(t, "q", []string{"direct-k", "tx-k", "dlx-k"}, e.ready("q"))
	for _, ev := range e.b.Trace() {
		if ev.Err != nil && ev.Err.Code == protocol.InternalError {
			t.Errorf("routing failed: %v", ev)
		}
	}
}
