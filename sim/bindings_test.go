package sim_test

import (
	"testing"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// Exchange bindings' and alternate exchanges' conversations are library
// scenarios (exchange-bind-chain.txt, alternate-exchange.txt and others);
// what stays is routing's guard against cycles, an internal.

// exchange declares an exchange on e.ch, failing the test on error.
func (e *env) exchange(name, kind string, o sim.ExchangeOptions) {
	e.t.Helper()
	if err := e.ch.ExchangeDeclare(name, kind, o); err != nil {
		e.t.Fatalf("declare exchange %q: %v", name, err)
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
