package sim_test

import (
	"testing"
	"time"

	"github.com/amqpsim/amqpsim/sim"
)

// The dead-letter tests pin the simulator to RabbitMQ 3.10.8 observed through
// amqp091-go v1.16.0 (the dl-* queues of the measurement). amqp091-go
// decodes x-death as []interface{} of amqp.Table with count int64, time
// time.Time, routing-keys []interface{} of string and the other fields
// string; the simulator's headers have the same Go types.

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

// A rejected message through direct exchanges, with a CC header and no
// x-dead-letter-routing-key: it is routed by its publish key and its CC
// keys, so both k1's and k2's queues get it; its properties survive, its
// expiration moves to the x-death entry, its CC header stays.
func TestDeadLetterRejectedWithCC(t *testing.T) {
	// 3.10: from 3.13 a dead letter also carries x-last-death-*
	// (TestLastDeathHeaders313).
	e := newEnvOn(t, sim.V3_10)
	for _, x := range []string{"dl-src", "dl-dlx"} {
		e.must(e.ch.ExchangeDeclare(x, "direct", sim.ExchangeOptions{}))
	}
	e.declare("dl-q", sim.QueueOptions{Args: sim.Table{"x-dead-letter-exchange": "dl-dlx"}})
	e.must(e.ch.QueueBind("dl-q", "k1", "dl-src", nil))
	for _, k := range []string{"k1", "k2"} {
		e.declare("dl-"+k, sim.QueueOptions{})
		e.must(e.ch.QueueBind("dl-"+k, k, "dl-dlx", nil))
	}
	props := sim.Properties{Expiration: "60000", Headers: sim.Table{"CC": []any{"k2"}, "app": "v"}, Priority: 3, CorrelationID: "cid", Type: "t"}
	e.must(e.ch.Publish("dl-src", "k1", sim.PublishOptions{}, sim.Message{Properties: props, Body: []byte("r")}))
	d := e.getOne(e.ch, "dl-q", false)
	if d.Exchange != "dl-src" || d.RoutingKey != "k1" || d.Expiration != "60000" {
		t.Fatalf("in dl-q: %+v", d)
	}
	e.must(e.ch.Reject(d.DeliveryTag, false))
	for _, q := range []string{"dl-k1", "dl-k2"} {
		d := e.getOne(e.ch, q, true)
		if string(d.Body) != "r" || d.Exchange != "dl-dlx" || d.RoutingKey != "k1" || d.Redelivered || d.Expiration != "" {
			t.Errorf("%s: body=%s exchange=%q key=%q redelivered=%t expiration=%q", q, d.Body, d.Exchange, d.RoutingKey, d.Redelivered, d.Expiration)
		}
		if d.Priority != 3 || d.CorrelationID != "cid" || d.Type != "t" {
			t.Errorf("%s: properties lost: %+v", q, d.Properties)
		}
		others := firstDeath("rejected", "dl-q", "dl-src")
		others["CC"] = []any{"k2"}
		others["app"] = "v"
		checkDeadLettered(t, d.Headers, []sim.Table{withExp(death(1, "rejected", "dl-q", "dl-src", "k1", "k2"), "60000")}, others)
	}
	if n := len(e.getAll("dl-k1")) + len(e.getAll("dl-k2")); n != 0 {
		t.Errorf("%d extra copies", n)
	}
}

// x-dead-letter-routing-key replaces the routing keys and drops the CC
// header; x-death keeps the original keys. Measured: only k2's queue got
// it, key k2, x-death routing-keys [kk k1], no CC header.
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

// A queue reached by several routing keys gets one copy. Measured: key s
// with CC [dlq dlq] dead-lettered through the default exchange without a
// routing key: one copy, key s, routing-keys [s dlq dlq].
func TestDeadLetterOneCopyPerQueue(t *testing.T) {
	// 3.10: from 3.13 a dead letter also carries x-last-death-*
	// (TestLastDeathHeaders313).
	e := newEnvOn(t, sim.V3_10)
	e.must(e.ch.ExchangeDeclare("dl2-x", "direct", sim.ExchangeOptions{}))
	e.declare("dl2-dlq", sim.QueueOptions{})
	e.declare("dl2-s", sim.QueueOptions{Args: sim.Table{"x-dead-letter-exchange": ""}})
	e.must(e.ch.QueueBind("dl2-s", "s", "dl2-x", nil))
	cc := []any{"dl2-dlq", "dl2-dlq"}
	e.must(e.ch.Publish("dl2-x", "s", sim.PublishOptions{}, sim.Message{Properties: sim.Properties{Headers: sim.Table{"CC": cc}}, Body: []byte("dup")}))
	d := e.getOne(e.ch, "dl2-s", false)
	e.must(e.ch.Reject(d.DeliveryTag, false))
	got := e.getAll("dl2-dlq")
	diff(t, "dlq", []string{"dup"}, bodies(got))
	if got[0].Exchange != "" || got[0].RoutingKey != "s" {
		t.Errorf("exchange=%q key=%q", got[0].Exchange, got[0].RoutingKey)
	}
	others := firstDeath("rejected", "dl2-s", "dl2-x")
	others["CC"] = cc
	checkDeadLettered(t, got[0].Headers, []sim.Table{death(1, "rejected", "dl2-s", "dl2-x", "s", "dl2-dlq", "dl2-dlq")}, others)
}

// A missing dead-letter exchange drops the message (measured: the queue
// with TTL 50 and DLX "dl-none" was empty 200 ms later).
func TestDeadLetterMissingExchangeDrops(t *testing.T) {
	e := newEnv(t)
	e.declare("dl-q-missing", sim.QueueOptions{Args: sim.Table{"x-dead-letter-exchange": "dl-none", "x-message-ttl": int32(50)}})
	e.publish("dl-q-missing", "gone")
	e.b.Advance(200 * time.Millisecond)
	diff(t, "stats", sim.QueueStats{Vhost: "/", Name: "dl-q-missing"}, e.stats("dl-q-missing"))
	for _, q := range e.b.Queues() {
		if q.Ready != 0 {
			t.Errorf("message landed in %s", q.Name)
		}
	}
}

// Counts are per (queue, reason), the most recent death first, each entry
// keeping its first event's time, exchange, routing keys and
// original-expiration; x-first-death-* never change. Measured loop: A
// (rejected, DLRK B) -> B (TTL 100, DLRK A) -> A, three rounds 1.1 s apart:
//
//	round 2: [B expired 1 ("", [B]), A rejected 1 ("", [A], original-expiration 60000)]
//	round 3: [B expired 2, A rejected 2]; final: [B expired 3, A rejected 3]
func TestDeadLetterXDeathCountsAndOrder(t *testing.T) {
	// 3.10: from 3.13 a dead letter also carries x-last-death-*
	// (TestLastDeathHeaders313).
	e := newEnvOn(t, sim.V3_10)
	e.declare("dl-A", sim.QueueOptions{Args: dl("dl-B")})
	e.declare("dl-B", sim.QueueOptions{Args: dl("dl-A", "x-message-ttl", int32(100))})
	e.publishExp("dl-A", "loop", "60000")
	var firstTimes []time.Time
	for round := 1; round <= 4; round++ {
		d := e.getOne(e.ch, "dl-A", round == 4)
		if string(d.Body) != "loop" || d.Exchange != "" || d.RoutingKey != "dl-A" || d.Redelivered {
			t.Errorf("round %d: %+v", round, d)
		}
		if round == 1 {
			if d.Headers != nil || d.Expiration != "60000" {
				t.Errorf("round 1: headers %v expiration %q", d.Headers, d.Expiration)
			}
		} else {
			n := int64(round - 1)
			checkDeadLettered(t, d.Headers, []sim.Table{
				death(n, "expired", "dl-B", "", "dl-B"),
				withExp(death(n, "rejected", "dl-A", "", "dl-A"), "60000"),
			}, firstDeath("rejected", "dl-A", ""))
			_, times := deathsOf(t, d.Headers)
			if firstTimes == nil {
				firstTimes = times
			}
			diff(t, "times kept from the first deaths", firstTimes, times)
			if d.Expiration != "" {
				t.Errorf("round %d: expiration %q", round, d.Expiration)
			}
		}
		if round < 4 {
			e.must(e.ch.Reject(d.DeliveryTag, false))
			e.b.Advance(1100 * time.Millisecond)
		}
	}
	// The first B death was 100 ms after the first rejection, at Epoch.
	diff(t, "first times", []time.Time{sim.Epoch(), sim.Epoch()}, firstTimes)
}

// Between rejections an entry moves to the front: a message rejected twice
// on its own queue (DLX "" without a routing key) has one entry, count 2
// (measured), and a rejection is never a cycle.
func TestDeadLetterSelfReject(t *testing.T) {
	// 3.10: from 3.13 a dead letter also carries x-last-death-*
	// (TestLastDeathHeaders313).
	e := newEnvOn(t, sim.V3_10)
	e.declare("dl-F", sim.QueueOptions{Args: sim.Table{"x-dead-letter-exchange": ""}})
	e.publish("dl-F", "selfrej")
	for n := int64(1); n <= 2; n++ {
		d := e.getOne(e.ch, "dl-F", false)
		e.must(e.ch.Reject(d.DeliveryTag, false))
		d = e.getOne(e.ch, "dl-F", n == 2)
		checkDeadLettered(t, d.Headers, []sim.Table{death(n, "rejected", "dl-F", "", "dl-F")}, firstDeath("rejected", "dl-F", ""))
		if n == 1 {
			e.must(e.ch.Nack(d.DeliveryTag, false, true))
		}
	}
}

// Automatic deaths that come back to a queue already in x-death with no
// rejection in between are dropped. Measured: C (TTL 50) -> D (TTL 50) -> C:
// both empty 400 ms later; E (TTL 50, DLX "" without routing key) to itself:
// empty 300 ms later.
func TestDeadLetterCycleDropped(t *testing.T) {
	e := newEnv(t)
	e.declare("dl-C", sim.QueueOptions{Args: dl("dl-D", "x-message-ttl", int32(50))})
	e.declare("dl-D", sim.QueueOptions{Args: dl("dl-C", "x-message-ttl", int32(50))})
	e.declare("dl-E", sim.QueueOptions{Args: sim.Table{"x-dead-letter-exchange": "", "x-message-ttl": int32(50)}})
	e.publish("dl-C", "cyc")
	e.publish("dl-E", "self")
	e.b.Advance(75 * time.Millisecond)
	diff(t, "D holds it after C's expiry", []string{"cyc"}, e.ready("dl-D"))
	e.b.Advance(325 * time.Millisecond)
	for _, q := range []string{"dl-C", "dl-D", "dl-E"} {
		diff(t, q, sim.QueueStats{Vhost: "/", Name: q}, e.stats(q))
	}
}

// RabbitMQ 3.10 updates an x-death header the publisher supplied (4.0 no
// longer does). Measured: an entry for (G, rejected) with count 5, exchange
// "old", routing-keys [old], time 1000 s came out with count 6 and every
// other field kept, and no x-first-death-* headers. An x-death of another
// type is replaced by a fresh array, again without x-first-death-*.
func TestDeadLetterPublisherXDeath(t *testing.T) {
	// 3.10: from 3.13 a dead letter also carries x-last-death-*, and from 4.0
	// the publisher's x-death is ignored (TestPublisherDeathIgnored40).
	e := newEnvOn(t, sim.V3_10)
	e.declare("dl-Gd", sim.QueueOptions{})
	e.declare("dl-G", sim.QueueOptions{Args: dl("dl-Gd")})
	fake := sim.Table{"queue": "dl-G", "reason": "rejected", "count": int64(5), "exchange": "old", "routing-keys": []any{"old"}, "time": time.Unix(1000, 0)}
	e.must(e.b.Publish("/", "", "dl-G", sim.Message{Properties: sim.Properties{Headers: sim.Table{"x-death": []any{fake}}}, Body: []byte("fake")}))
	d := e.getOne(e.ch, "dl-G", false)
	e.must(e.ch.Reject(d.DeliveryTag, false))
	got := e.getOne(e.ch, "dl-Gd", true)
	checkDeadLettered(t, got.Headers, []sim.Table{death(6, "rejected", "dl-G", "old", "old")}, nil)
	if _, ts := deathsOf(t, got.Headers); !ts[0].Equal(time.Unix(1000, 0)) {
		t.Errorf("time %v, want the publisher's", ts[0])
	}

	e.declare("dl-G2", sim.QueueOptions{Args: dl("dl-Gd")})
	e.must(e.b.Publish("/", "", "dl-G2", sim.Message{Properties: sim.Properties{Headers: sim.Table{"x-death": "nonsense"}}, Body: []byte("bad")}))
	d = e.getOne(e.ch, "dl-G2", false)
	e.must(e.ch.Reject(d.DeliveryTag, false))
	got = e.getOne(e.ch, "dl-Gd", true)
	checkDeadLettered(t, got.Headers, []sim.Table{death(1, "rejected", "dl-G2", "", "dl-G2")}, nil)
}

// Through a fanout DLX an expired message keeps its key and CC header; the
// x-death routing keys are the key and the CC keys. Measured (the publish
// also had BCC [zz], which RabbitMQ strips at publish and so never shows;
// the simulator's publish does not model BCC, so it is left out here):
// exchange dl-fan, key dl-H, routing-keys [dl-H yy xx], CC [yy xx].
func TestDeadLetterExpiredThroughFanout(t *testing.T) {
	// 3.10: from 3.13 a dead letter also carries x-last-death-*
	// (TestLastDeathHeaders313).
	e := newEnvOn(t, sim.V3_10)
	e.must(e.ch.ExchangeDeclare("dl-fan", "fanout", sim.ExchangeOptions{}))
	e.declare("dl-Hd", sim.QueueOptions{})
	e.must(e.ch.QueueBind("dl-Hd", "", "dl-fan", nil))
	e.declare("dl-H", sim.QueueOptions{Args: sim.Table{"x-dead-letter-exchange": "dl-fan", "x-message-ttl": int32(50)}})
	cc := []any{"yy", "xx"}
	e.must(e.b.Publish("/", "", "dl-H", sim.Message{Properties: sim.Properties{Headers: sim.Table{"CC": cc}}, Body: []byte("bcc")}))
	e.b.Advance(200 * time.Millisecond)
	got := e.getOne(e.ch, "dl-Hd", true)
	if got.Exchange != "dl-fan" || got.RoutingKey != "dl-H" {
		t.Errorf("exchange=%q key=%q", got.Exchange, got.RoutingKey)
	}
	others := firstDeath("expired", "dl-H", "")
	others["CC"] = cc
	checkDeadLettered(t, got.Headers, []sim.Table{death(1, "expired", "dl-H", "", "dl-H", "yy", "xx")}, others)
	if _, ts := deathsOf(t, got.Headers); !ts[0].Equal(sim.Epoch()) {
		t.Errorf("time %v, want %v (50 ms after the start, whole seconds)", ts[0], sim.Epoch())
	}
}

// A drop-head death records the message's own expiration, not the queue's
// TTL (measured: x-message-ttl 100000, expiration 5000: original-expiration
// "5000").
func TestDeadLetterMaxlenOriginalExpiration(t *testing.T) {
	// 3.10: from 3.13 a dead letter also carries x-last-death-*
	// (TestLastDeathHeaders313).
	e := newEnvOn(t, sim.V3_10)
	e.declare("dl2-dlq", sim.QueueOptions{})
	e.declare("dl2-s3", sim.QueueOptions{Args: dl("dl2-dlq", "x-max-length", int32(1), "x-overflow", "drop-head", "x-message-ttl", int32(100000))})
	e.publishExp("dl2-s3", "first", "5000")
	e.publish("dl2-s3", "second")
	got := e.getAll("dl2-dlq")
	diff(t, "dlq", []string{"first"}, bodies(got))
	checkDeadLettered(t, got[0].Headers, []sim.Table{withExp(death(1, "maxlen", "dl2-s3", "", "dl2-s3"), "5000")}, firstDeath("maxlen", "dl2-s3", ""))
}
