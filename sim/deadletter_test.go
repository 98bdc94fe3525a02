package sim_test

import (
	"testing"

	"github.com/amqpsim/amqpsim/sim"
)

// The dead-letter tests pin the simulator to RabbitMQ 3.10.8 observed through
// amqp091-go v1.16.0 (the dl-* queues of the measurement). amqp091-go
// decodes x-death as []interface{} of amqp.Table with count int64, time
// time.Time, routing-keys []interface{} of string and the other fields
// string; the simulator's headers have the same Go types. The
// conversations are library scenarios (scenarios/library/dlx-*.txt); what
// stays is a rule the library leaves out because the simulator differs
// from 4.0 on (dlx-cc-routing.txt says which).

// getOne gets one message from q, failing when there is none.
func (e *env) getOne(ch *sim.Channel, q string, noAck bool) sim.Delivery {
	e.t.Helper()
	d, ok, err := ch.Get(q, noAck)
	e.must(err)
	if !ok {
		e.t.Fatalf("queue %q is empty", q)
	}
	return d
}

// x-dead-letter-routing-key replaces the routing keys and drops the CC
// header; x-death keeps the original keys. Measured: only k2's queue got
// it, key k2, x-death routing-keys [kk k1], no CC header. Unlike RabbitMQ
// 4.0.5 and 4.3.6, which keep the CC header (recorded), the simulator
// drops it on every release.
func TestDeadLetterRoutingKeyDropsCC(t *testing.T) {
	// 3.10: from 3.13 a dead letter also carries x-last-death-*
	// (TestLastDeathHeaders313).
	e := newEnvOn(t, sim.V3_10)
	for _, x := range []string{"dl-src", "dl-dlx"} {
		e.must(e.ch.ExchangeDeclare(x, "direct", sim.ExchangeOptions{}))
	}
	for _, k := range []string{"k1", "k2"} {
		e.declare("dl-"+k, sim.QueueOptions{})
		e.must(e.ch.QueueBind("dl-"+k, k, "dl-dlx", nil))
	}
	e.declare("dl-q-rk", sim.QueueOptions{Args: sim.Table{"x-dead-letter-exchange": "dl-dlx", "x-dead-letter-routing-key": "k2"}})
	e.must(e.ch.QueueBind("dl-q-rk", "kk", "dl-src", nil))
	e.must(e.ch.Publish("dl-src", "kk", sim.PublishOptions{}, sim.Message{Properties: sim.Properties{Headers: sim.Table{"CC": []any{"k1"}}}, Body: []byte("rk")}))
	d := e.getOne(e.ch, "dl-q-rk", false)
	e.must(e.ch.Nack(d.DeliveryTag, false, false))
	diff(t, "dl-k1", []string{}, bodies(e.getAll("dl-k1")))
	got := e.getAll("dl-k2")
	diff(t, "dl-k2", []string{"rk"}, bodies(got))
	if got[0].Exchange != "dl-dlx" || got[0].RoutingKey != "k2" {
		t.Errorf("exchange=%q key=%q", got[0].Exchange, got[0].RoutingKey)
	}
	checkDeadLettered(t, got[0].Headers, []sim.Table{death(1, "rejected", "dl-q-rk", "dl-src", "kk", "k1")}, firstDeath("rejected", "dl-q-rk", "dl-src"))
}
