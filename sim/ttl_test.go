package sim_test

import (
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// The TTL tests pin the simulator to RabbitMQ 3.10.8 observed through
// amqp091-go v1.16.0; queue names drop the measurement's unique prefix.

// deathsOf returns a message's x-death entries with their "time" removed,
// and the times. Timestamps cannot be compared with the broker's literally;
// their AMQP type (amqp091-go decodes 'T' as time.Time) and whole seconds
// are checked here.
func deathsOf(t *testing.T, h sim.Table) ([]sim.Table, []time.Time) {
	t.Helper()
	raw, ok := h["x-death"].([]any)
	if !ok {
		t.Fatalf("x-death is %T, want []any", h["x-death"])
	}
	var out []sim.Table
	var times []time.Time
	for _, r := range raw {
		d, ok := r.(sim.Table)
		if !ok {
			t.Fatalf("x-death entry is %T, want a table", r)
		}
		ts, ok := d["time"].(time.Time)
		if !ok {
			t.Fatalf("x-death time is %T, want time.Time", d["time"])
		}
		if ts.Nanosecond() != 0 {
			t.Errorf("x-death time %v is not whole seconds", ts)
		}
		d = maps.Clone(d)
		delete(d, "time")
		out = append(out, d)
		times = append(times, ts)
	}
	return out, times
}

// death is an x-death entry as RabbitMQ 3.10.8 sent it, without its time.
func death(count int64, reason, queue, exchange string, keys ...any) sim.Table {
	return sim.Table{"count": count, "reason": reason, "queue": queue, "exchange": exchange, "routing-keys": keys}
}

// withExp adds original-expiration to an entry.
func withExp(d sim.Table, exp string) sim.Table {
	d["original-expiration"] = exp
	return d
}

// firstDeath is the x-first-death-* headers.
func firstDeath(reason, queue, exchange string) sim.Table {
	return sim.Table{"x-first-death-reason": reason, "x-first-death-queue": queue, "x-first-death-exchange": exchange}
}

// checkDeadLettered compares a dead-lettered message's headers with the
// broker's, field by field: x-death entries (time aside) and every other
// header.
func checkDeadLettered(t *testing.T, h sim.Table, deaths []sim.Table, others sim.Table) {
	t.Helper()
	got, _ := deathsOf(t, h)
	diff(t, "x-death", deaths, got)
	rest := maps.Clone(h)
	delete(rest, "x-death")
	if others == nil {
		others = sim.Table{}
	}
	diff(t, "other headers", others, rest)
}

// publishExp publishes body to queue q with an expiration property.
func (e *env) publishExp(q, body, expiration string) {
	e.t.Helper()
	e.must(e.b.Publish("/", "", q, sim.Message{Properties: sim.Properties{Expiration: expiration}, Body: []byte(body)}))
}

// dl is a queue argument table dead-lettering to queue target through the
// default exchange, plus kv.
func dl(target string, kv ...any) sim.Table {
	t := sim.Table{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": target}
	for i := 0; i < len(kv); i += 2 {
		t[kv[i].(string)] = kv[i+1]
	}
	return t
}

// maxGets bounds getAll: the tests queue a few messages, so a queue that
// keeps answering get-ok is a bug, not a long queue.
const maxGets = 1000

// getAll drains q with no-ack basic.get.
func (e *env) getAll(q string) []sim.Delivery {
	e.t.Helper()
	var out []sim.Delivery
	for range maxGets {
		d, ok, err := e.ch.Get(q, true)
		e.must(err)
		if !ok {
			return out
		}
		out = append(out, d)
	}
	e.t.Fatalf("%s still gave a message after %d no-ack gets", q, maxGets)
	return nil
}

// Every text below is RabbitMQ 3.10.8's, verbatim: rabbit_basic:
// parse_expiration is Erlang's string:to_integer and the reason is printed
// with ~p, which breaks a tuple past column 78 and prints a non-printable
// Latin-1 string as a list of bytes. The publish closes the channel with
// class 60 method 40.
func TestExpirationInvalidTexts(t *testing.T) {
	pre := "PRECONDITION_FAILED - invalid expiration "
	for _, tc := range []struct{ exp, text string }{
		{"abc", "'abc': no_integer"},
		{"-1", "'-1': {value_negative,-1}"},
		{"1.5", `'1.5': {leftover_string,".5"}`},
		{" 5", "' 5': no_integer"},
		{"0x10", `'0x10': {leftover_string,"x10"}`},
		{"1e3", `'1e3': {leftover_string,"e3"}`},
		{"315360000001", "'315360000001': {value_too_large,315360000001}"},
		{"9999999999999999999", "'9999999999999999999': {value_too_large,\n                                           9999999999999999999}"},
		{"99999999999999999999", "'99999999999999999999': {value_too_large,\n                                            99999999999999999999}"},
		{"999999999999999999999", "'999999999999999999999': {value_too_large,\n                                             999999999999999999999}"},
		{"-999999999999999999", "'-999999999999999999': {value_negative,-999999999999999999}"},
		{"-9999999999999999999", "'-9999999999999999999': {value_negative,\n                                            -9999999999999999999}"},
		{"-99999999999999999999", "'-99999999999999999999': {value_negative,\n                                             -99999999999999999999}"},
		{"-", "'-': no_integer"},
		{"5 ", `'5 ': {leftover_string," "}`},
		{"1é", `'1é': {leftover_string,"é"}`},
		{"1\"x", `'1"x': {leftover_string,"\"x"}`},
		{`1\x`, `'1\x': {leftover_string,"\\x"}`},
		{"1\x01", "'1\x01': {leftover_string,[1]}"},
		{"1a\x01", "'1a\x01': {leftover_string,[97,1]}"},
		{"1\t", "'1\t': {leftover_string,\"\\t\"}"},
		{"1\n", "'1\n': {leftover_string,\"\\n\"}"},
		{"1\x1b", "'1\x1b': {leftover_string,\"\\e\"}"},
		{"1\x7f", "'1\x7f': {leftover_string,[127]}"},
		{"1\xe9", "'1\xe9': {leftover_string,\"\xe9\"}"},
		{"1\xa0", "'1\xa0': {leftover_string,\"\xa0\"}"},
		{"1\x9f", "'1\x9f': {leftover_string,[159]}"},
		{"1" + strings.Repeat("a", 17), "'1aaaaaaaaaaaaaaaaa': {leftover_string,\"aaaaaaaaaaaaaaaaa\"}"},
		{"1" + strings.Repeat("a", 18), "'1aaaaaaaaaaaaaaaaaa': {leftover_string,\n                                           \"aaaaaaaaaaaaaaaaaa\"}"},
		{"1" + strings.Repeat("\xe9", 18), "'1" + strings.Repeat("\xe9", 18) + "': {leftover_string,\n                                           \"" + strings.Repeat("\xe9", 18) + "\"}"},
		{"12345678901234567" + strings.Repeat("\x01", 8), "'12345678901234567\x01\x01\x01\x01\x01\x01\x01\x01': {leftover_string,\n                                                 [1,1,1,1,1,1,1,1]}"},
		{"1" + strings.Repeat("a", 40), "'1" + strings.Repeat("a", 40) + "': {leftover_string,\n" + strings.Repeat(" ", 65) + `"` + strings.Repeat("a", 40) + `"}`},
		{"999999999999999999999999999999999999999999999999999999999999", "'999999999999999999999999999999999999999999999999999999999999': {value_too_large,\n                                                                                    999999999999999999999999999999999999999999999..."},
	} {
		t.Run(tc.exp, func(t *testing.T) {
			e := newEnv(t)
			e.declare("q", sim.QueueOptions{})
			ch2 := e.channel(e.conn)
			err := ch2.Publish("", "q", sim.PublishOptions{}, sim.Message{Properties: sim.Properties{Expiration: tc.exp}, Body: []byte("x")})
			wantErr(t, err, 406, pre+tc.text, protocol.BasicPublish)
			if ch2.Err() == nil || e.conn.Err() != nil {
				t.Errorf("want only the channel closed: ch=%v conn=%v", ch2.Err(), e.conn.Err())
			}
			wantErr(t, e.b.Publish("/", "", "q", sim.Message{Properties: sim.Properties{Expiration: tc.exp}}), 406, pre+tc.text, protocol.BasicPublish)
			if n := e.stats("q").Ready; n != 0 {
				t.Errorf("%d messages enqueued", n)
			}
		})
	}
}

// Accepted expirations, in the order the broker got them: "" (amqp091-go
// sends no property), "+5", "007", "315360000000". Measured: 4 messages in
// the queue 1.2 s later, because "+5" (5 ms) sits behind the message without
// expiry and expiry happens only at the head. "-0", "-00" and a 41-digit 1
// are accepted too.
func TestExpirationAccepted(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{})
	for _, exp := range []string{"", "+5", "007", "315360000000"} {
		e.must(e.ch.Publish("", "q", sim.PublishOptions{}, sim.Message{Properties: sim.Properties{Expiration: exp}, Body: []byte("x")}))
		e.b.Advance(300 * time.Millisecond)
	}
	e.b.Advance(300 * time.Millisecond)
	if got := e.stats("q").Ready; got != 4 {
		t.Errorf("ready = %d, want 4", got)
	}
	for _, exp := range []string{"-0", "-00", "00000000000000000000000000000000000000001"} {
		e.must(e.ch.Publish("", "q", sim.PublishOptions{}, sim.Message{Properties: sim.Properties{Expiration: exp}}))
	}
	if e.ch.Err() != nil {
		t.Fatal(e.ch.Err())
	}
}

// The effective TTL is the smaller of x-message-ttl and the expiration.
// Measured: a queue with TTL 1000 and a message with expiration 300, and a
// queue with TTL 300 and a message with expiration 1000, both dead-lettered
// 0.31 s after the publish; a message without expiration behind the first
// at 1.01 s. The dead-lettered copies, field by field.
func TestMessageTTLIsTheMinimum(t *testing.T) {
	// 3.10: from 3.13 a dead letter also carries x-last-death-*
	// (TestLastDeathHeaders313).
	e := newEnvOn(t, sim.V3_10)
	e.declare("ttlmin-dlq", sim.QueueOptions{})
	e.declare("ttlmin-q1000", sim.QueueOptions{Args: dl("ttlmin-dlq", "x-message-ttl", int32(1000))})
	e.declare("ttlmin-q300", sim.QueueOptions{Args: dl("ttlmin-dlq", "x-message-ttl", int32(300))})
	c := e.consume(e.ch, "ttlmin-dlq", "", sim.ConsumeOptions{NoAck: true})
	e.publishExp("ttlmin-q1000", "q1000-exp300", "300")
	e.publishExp("ttlmin-q300", "q300-exp1000", "1000")
	e.publish("ttlmin-q1000", "q1000-noexp")

	e.b.Advance(299 * time.Millisecond)
	diff(t, "at 299ms", []string{}, bodies(c.Deliveries()))
	e.b.Advance(time.Millisecond)
	at300 := c.Deliveries()
	diff(t, "at 300ms", []string{"q1000-exp300", "q300-exp1000"}, bodies(at300))
	e.b.Advance(699 * time.Millisecond)
	diff(t, "at 999ms", []string{}, bodies(c.Deliveries()))
	e.b.Advance(time.Millisecond)
	at1000 := c.Deliveries()
	diff(t, "at 1s", []string{"q1000-noexp"}, bodies(at1000))

	all := append(at300, at1000...)
	for i, want := range []struct {
		queue, exp string
	}{{"ttlmin-q1000", "300"}, {"ttlmin-q300", "1000"}, {"ttlmin-q1000", ""}} {
		d := all[i]
		if d.Exchange != "" || d.RoutingKey != "ttlmin-dlq" || d.Redelivered || d.Expiration != "" {
			t.Errorf("%s: exchange=%q key=%q redelivered=%t expiration=%q", d.Body, d.Exchange, d.RoutingKey, d.Redelivered, d.Expiration)
		}
		entry := death(1, "expired", want.queue, "", want.queue)
		if want.exp != "" {
			withExp(entry, want.exp)
		}
		checkDeadLettered(t, d.Headers, []sim.Table{entry}, firstDeath("expired", want.queue, ""))
	}
}

// Expiry happens only at the head. Measured: "long" (2000) then "short"
// (200): both still queued at 0.7 s, both dead-lettered at 2.0 s, in queue
// order, each with its original-expiration.
func TestExpiryOnlyAtTheHead(t *testing.T) {
	// 3.10: from 3.13 a dead letter also carries x-last-death-*
	// (TestLastDeathHeaders313).
	e := newEnvOn(t, sim.V3_10)
	e.declare("head-dlq", sim.QueueOptions{})
	e.declare("head-q", sim.QueueOptions{Args: dl("head-dlq")})
	e.publishExp("head-q", "long", "2000")
	e.publishExp("head-q", "short", "200")
	e.b.Advance(700 * time.Millisecond)
	if q, d := e.stats("head-q").Ready, e.stats("head-dlq").Ready; q != 2 || d != 0 {
		t.Errorf("at 0.7s: q=%d dlq=%d, want 2 0", q, d)
	}
	e.b.Advance(1299 * time.Millisecond)
	if q := e.stats("head-q").Ready; q != 2 {
		t.Errorf("at 1.999s: q=%d, want 2", q)
	}
	e.b.Advance(time.Millisecond)
	ds := e.getAll("head-dlq")
	diff(t, "dead-lettered", []string{"long", "short"}, bodies(ds))
	for i, exp := range []string{"2000", "200"} {
		checkDeadLettered(t, ds[i].Headers, []sim.Table{withExp(death(1, "expired", "head-q", "", "head-q"), exp)}, firstDeath("expired", "head-q", ""))
	}
	if q := e.stats("head-q").Ready; q != 0 {
		t.Errorf("q=%d", q)
	}
}

// Unacked messages never expire; requeued ones keep the expiry set at
// publish. Measured on a queue with TTL 500: m1 and m2 (expiration 5000) got
// unacked, still 0/0 at 1 s; each requeue at 1.1 s and 1.2 s dead-letters
// it at once (m2's expiry is min(500, 5000)); r1 (expiration 800) requeued
// 300 ms after its publish is dead-lettered 500 ms (0.51 s) after the
// requeue, and the message behind it stays.
func TestUnackedNeverExpireRequeuedKeepExpiry(t *testing.T) {
	// 3.10: from 3.13 a dead letter also carries x-last-death-*
	// (TestLastDeathHeaders313).
	e := newEnvOn(t, sim.V3_10)
	e.declare("unack-dlq", sim.QueueOptions{})
	e.declare("unack-q", sim.QueueOptions{Args: dl("unack-dlq", "x-message-ttl", int32(500))})
	e.publish("unack-q", "m1")
	e.publishExp("unack-q", "m2", "5000")
	d1, _, _ := e.ch.Get("unack-q", false)
	d2, _, _ := e.ch.Get("unack-q", false)
	diff(t, "got", []dv{{1, "m1", false}, {2, "m2", false}}, brief([]sim.Delivery{d1, d2}))
	diff(t, "get-ok message counts", []int{1, 0}, []int{d1.MessageCount, d2.MessageCount})
	e.b.Advance(time.Second)
	if s, d := e.stats("unack-q"), e.stats("unack-dlq"); s.Ready != 0 || s.Unacked != 2 || d.Ready != 0 {
		t.Errorf("at 1s: q=%+v dlq=%+v", s, d)
	}
	e.must(e.ch.Nack(d1.DeliveryTag, false, true))
	e.b.Advance(100 * time.Millisecond)
	if q, d := e.stats("unack-q").Ready, e.stats("unack-dlq").Ready; q != 0 || d != 1 {
		t.Errorf("after m1's requeue: q=%d dlq=%d, want 0 1", q, d)
	}
	e.must(e.ch.Nack(d2.DeliveryTag, false, true))
	e.b.Advance(100 * time.Millisecond)
	if q, d := e.stats("unack-q").Ready, e.stats("unack-dlq").Ready; q != 0 || d != 2 {
		t.Errorf("after m2's requeue: q=%d dlq=%d, want 0 2", q, d)
	}
	ds := e.getAll("unack-dlq")
	diff(t, "dead-lettered", []dv{{3, "m1", false}, {4, "m2", false}}, brief(ds))
	checkDeadLettered(t, ds[0].Headers, []sim.Table{death(1, "expired", "unack-q", "", "unack-q")}, firstDeath("expired", "unack-q", ""))
	checkDeadLettered(t, ds[1].Headers, []sim.Table{withExp(death(1, "expired", "unack-q", "", "unack-q"), "5000")}, firstDeath("expired", "unack-q", ""))

	e.declare("unack-q2", sim.QueueOptions{Args: dl("unack-dlq")})
	e.publishExp("unack-q2", "r1", "800")
	e.publish("unack-q2", "r2")
	dr, _, _ := e.ch.Get("unack-q2", false)
	e.b.Advance(300 * time.Millisecond)
	e.must(e.ch.Nack(dr.DeliveryTag, false, true))
	e.b.Advance(499 * time.Millisecond)
	if d := e.stats("unack-dlq").Ready; d != 0 {
		t.Errorf("r1 dead-lettered before its expiry")
	}
	e.b.Advance(time.Millisecond)
	ds = e.getAll("unack-dlq")
	diff(t, "r1", []string{"r1"}, bodies(ds))
	checkDeadLettered(t, ds[0].Headers, []sim.Table{withExp(death(1, "expired", "unack-q2", "", "unack-q2"), "800")}, firstDeath("expired", "unack-q2", ""))
	diff(t, "q2", []string{"r2"}, e.ready("unack-q2"))
}

// x-message-ttl 0 without a dead-letter exchange discards what cannot be
// delivered at once; a message's own expiration "0" does not (it is
// enqueued and expires at the head). Measured: TTL-0 queue without
// consumers: 0; with a prefetch-1 consumer, b is delivered, c discarded and
// nothing follows the ack; expiration 0 behind a message: 3 queued, the get
// of "first" reports message_count 1 (the expired one dropped after the
// fetch), then "third" with 0; expiration 0 into an empty queue: 0; queue
// TTL 1000 and expiration 0 behind a message: 2; TTL 0 with a DLX: both
// messages dead-lettered (reason expired, no original-expiration).
func TestMessageTTLZero(t *testing.T) {
	// 3.10: from 3.13 a dead letter also carries x-last-death-*
	// (TestLastDeathHeaders313).
	e := newEnvOn(t, sim.V3_10)
	e.declare("ttl0-q", sim.QueueOptions{Args: sim.Table{"x-message-ttl": int32(0)}})
	e.publish("ttl0-q", "a")
	if n := e.stats("ttl0-q").Ready; n != 0 {
		t.Errorf("TTL 0 without consumers: %d queued", n)
	}
	cch := e.channel(e.conn)
	e.qos(cch, 1, false)
	c := e.consume(cch, "ttl0-q", "c", sim.ConsumeOptions{})
	e.publish("ttl0-q", "b", "c")
	e.b.Advance(100 * time.Millisecond)
	if n := e.stats("ttl0-q").Ready; n != 0 {
		t.Errorf("TTL 0 with a full consumer: %d queued", n)
	}
	ds := c.Deliveries()
	diff(t, "delivered", []dv{{1, "b", false}}, brief(ds))
	e.must(cch.Ack(ds[0].DeliveryTag, false))
	e.b.Advance(200 * time.Millisecond)
	diff(t, "after the ack", []string{}, bodies(c.Deliveries()))
	e.must(cch.Close())

	e.declare("exp0-q", sim.QueueOptions{})
	e.publish("exp0-q", "first")
	e.publishExp("exp0-q", "zero", "0")
	e.publish("exp0-q", "third")
	e.b.Advance(100 * time.Millisecond)
	if n := e.stats("exp0-q").Ready; n != 3 {
		t.Errorf("expiration 0 behind a message: %d queued, want 3", n)
	}
	var got []string
	for range 2 {
		d, ok, err := e.ch.Get("exp0-q", true)
		e.must(err)
		got = append(got, fmt.Sprintf("%s ok=%t count=%d", d.Body, ok, d.MessageCount))
	}
	diff(t, "gets", []string{"first ok=true count=1", "third ok=true count=0"}, got)

	e.declare("exp0-empty", sim.QueueOptions{})
	e.publishExp("exp0-empty", "zero", "0")
	if n := e.stats("exp0-empty").Ready; n != 0 {
		t.Errorf("expiration 0 into an empty queue: %d queued", n)
	}
	e.declare("ttl1000-exp0", sim.QueueOptions{Args: sim.Table{"x-message-ttl": int32(1000)}})
	e.publish("ttl1000-exp0", "first")
	e.publishExp("ttl1000-exp0", "zero", "0")
	if n := e.stats("ttl1000-exp0").Ready; n != 2 {
		t.Errorf("queue TTL 1000, expiration 0 behind: %d queued, want 2", n)
	}

	e.declare("ttl0-dlq", sim.QueueOptions{})
	e.declare("ttl0-dlx", sim.QueueOptions{Args: dl("ttl0-dlq", "x-message-ttl", int32(0))})
	e.publish("ttl0-dlx", "z1", "z2")
	if q, d := e.stats("ttl0-dlx").Ready, e.stats("ttl0-dlq").Ready; q != 0 || d != 2 {
		t.Errorf("TTL 0 with a DLX: q=%d dlq=%d, want 0 2", q, d)
	}
	ds = e.getAll("ttl0-dlq")
	diff(t, "dead-lettered", []string{"z1", "z2"}, bodies(ds))
	for _, d := range ds {
		checkDeadLettered(t, d.Headers, []sim.Table{death(1, "expired", "ttl0-dlx", "", "ttl0-dlx")}, firstDeath("expired", "ttl0-dlx", ""))
	}
}

// The queue's timer removes expired messages with nobody looking. Measured
// (rabbitmqctl list_queues, which does not touch the queue): TTL 500, three
// messages and one with expiration 100000, 1 s later: messages 0, ready 0,
// unacked 0, bytes 0, consumers 0.
func TestExpiredRemovedByTheTimer(t *testing.T) {
	e := newEnv(t)
	e.declare("timer-q", sim.QueueOptions{Args: sim.Table{"x-message-ttl": int32(500)}})
	e.publish("timer-q", "m", "m", "m")
	e.publishExp("timer-q", "long", "100000")
	e.b.Advance(time.Second)
	diff(t, "stats", sim.QueueStats{Vhost: "/", Name: "timer-q"}, e.stats("timer-q"))
}

// x-expires deletes a queue, messages included, after the given time
// without consumers. Measured with x-expires 1500 (deletion polled with
// rabbitmqctl list_queues, ±0.3 s): plain: gone at 1.7 s; publish at 1.0 s:
// gone at 2 s (not restarted); passive declare at 1.0 s: 2.6 s; empty
// basic.get at 1.0 s: 2.5 s; redeclare at 1.0 s: 2.6 s; a consumer: still
// there at 2.5 s, gone 1.6 s after basic.cancel; gone 1.5 s after the
// consumer's channel closed; unacked get at 0 and ack at 1.0 s: gone at 2 s
// (an ack does not restart it); unacked deliveries do not hold it: 1.6 s.
func TestQueueExpires(t *testing.T) {
	args := sim.Table{"x-expires": int32(1500)}
	ms := time.Millisecond
	for _, tc := range []struct {
		name string
		act  func(e *env) // at 1 s
		gone time.Duration
	}{
		{"plain", func(e *env) {}, 1500 * ms},
		{"publish does not restart", func(e *env) { e.publish("q", "m") }, 1500 * ms},
		{"passive declare restarts", func(e *env) {
			_, err := e.ch.QueueDeclare("q", sim.QueueOptions{Passive: true})
			e.must(err)
		}, 2500 * ms},
		{"basic.get restarts", func(e *env) { _, _, err := e.ch.Get("q", true); e.must(err) }, 2500 * ms},
		{"redeclare restarts", func(e *env) { e.declare("q", sim.QueueOptions{Args: args}) }, 2500 * ms},
		{"ack does not restart", nil, 1500 * ms},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.declare("q", sim.QueueOptions{Args: args})
			e.publish("q", "m")
			var tag uint64
			if tc.act == nil {
				d, _, _ := e.ch.Get("q", false) // restarts at 0
				tag = d.DeliveryTag
				tc.act = func(e *env) { e.must(e.ch.Ack(tag, false)) }
			}
			e.b.Advance(time.Second)
			tc.act(e)
			e.b.Advance(tc.gone - time.Second - ms)
			if !e.exists("q") {
				t.Fatalf("gone before %v", tc.gone)
			}
			e.b.Advance(ms)
			if e.exists("q") {
				t.Fatalf("still there at %v", tc.gone)
			}
		})
	}
	t.Run("consumers hold it; cancel and channel close restart", func(t *testing.T) {
		e := newEnv(t)
		e.declare("q", sim.QueueOptions{Args: args})
		e.declare("q2", sim.QueueOptions{Args: args})
		cch := e.channel(e.conn)
		e.consume(cch, "q", "c1", sim.ConsumeOptions{})
		e.consume(cch, "q2", "c2", sim.ConsumeOptions{})
		e.b.Advance(2500 * ms)
		if s := e.stats("q"); s.Consumers != 1 {
			t.Fatalf("at 2.5s: %+v", s)
		}
		e.must(cch.Cancel("c1"))
		e.b.Advance(1499 * ms)
		if !e.exists("q") {
			t.Fatal("gone before 1.5s after the cancel")
		}
		e.b.Advance(ms)
		if e.exists("q") {
			t.Fatal("still there 1.5s after the cancel")
		}
		e.must(cch.Close())
		e.b.Advance(1499 * ms)
		if !e.exists("q2") {
			t.Fatal("gone before 1.5s after the channel close")
		}
		e.b.Advance(ms)
		if e.exists("q2") {
			t.Fatal("still there 1.5s after the channel close")
		}
	})
	t.Run("unacked deliveries do not hold it", func(t *testing.T) {
		e := newEnv(t)
		e.declare("q", sim.QueueOptions{Args: args})
		e.publish("q", "m")
		gch := e.channel(e.conn)
		if _, ok, _ := gch.Get("q", false); !ok {
			t.Fatal("get")
		}
		e.b.Advance(1500 * ms)
		if e.exists("q") {
			t.Fatal("still there")
		}
		// Settling a delivery of the deleted queue is not an error
		// (measured: the ack left the channel open).
		e.must(gch.Ack(1, false))
	})
	t.Run("x-expires 0", func(t *testing.T) {
		e := newEnv(t)
		_, err := e.ch.QueueDeclare("exp-zero", sim.QueueOptions{Args: sim.Table{"x-expires": int32(0)}})
		wantErr(t, err, 406, "PRECONDITION_FAILED - invalid arg 'x-expires' for queue 'exp-zero' in vhost '/': {value_zero,0}", protocol.QueueDeclare)
	})
}

// Of a priority queue only the head expires: the head of the highest
// priority that has messages (rabbit_priority_queue:dropwhile goes through
// the levels from the highest and stops at the first it does not empty).
// Measured with x-max-priority 2 and a DLX: A (priority 2, expiration
// 60000) then B (priority 0, expiration 100): both queued 0.5 s later; a
// no-ack basic.get took A with message count 0 (B dropped after the fetch)
// and B was dead-lettered. B (priority 0, expiration 300) then A (priority
// 2, expiration 60000): both queued 0.7 s later.
func TestExpiryOnlyAtTheHeadOfAPriorityQueue(t *testing.T) {
	e := newEnv(t)
	e.declare("prio-dlq", sim.QueueOptions{})
	pub := func(q, body string, prio uint8, exp string) {
		e.must(e.b.Publish("/", "", q, sim.Message{Properties: sim.Properties{Priority: prio, Expiration: exp}, Body: []byte(body)}))
	}
	for _, q := range []string{"prio-q", "prio-q2"} {
		e.declare(q, sim.QueueOptions{Args: dl("prio-dlq", "x-max-priority", int32(2))})
	}
	pub("prio-q", "A", 2, "60000")
	pub("prio-q", "B", 0, "100")
	pub("prio-q2", "B", 0, "300")
	pub("prio-q2", "A", 2, "60000")
	e.b.Advance(700 * time.Millisecond)
	diff(t, "prio-q", []string{"A", "B"}, e.ready("prio-q"))
	diff(t, "prio-q2", []string{"A", "B"}, e.ready("prio-q2"))
	diff(t, "dead-lettered", []string{}, e.ready("prio-dlq"))
	d := e.getOne(e.ch, "prio-q", true)
	if string(d.Body) != "A" || d.MessageCount != 0 {
		t.Errorf("got %s with message count %d, want A and 0", d.Body, d.MessageCount)
	}
	diff(t, "dead-lettered after the get", []string{"B"}, e.ready("prio-dlq"))
}

// A priority queue's TTL timer is set where RabbitMQ runs drop_expired_msgs
// and only ever moves earlier: a publish checks the head only when it
// leaves one message queued, so a new higher-priority head is not looked
// at. Measured on RabbitMQ 3.10.8, x-max-priority 2: B (priority 0,
// expiration 5000) then A (priority 2, expiration 100): A stayed queued
// until the timer set for B fired at 5 s, then both went. The simulator
// used to drop A at 100 ms.
func TestTTLPriorityHeadWaitsForTimer(t *testing.T) {
	e := newEnv(t)
	e.declare("prio-dlq", sim.QueueOptions{})
	e.declare("prio-q", sim.QueueOptions{Args: dl("prio-dlq", "x-max-priority", int32(2))})
	pub := func(body string, prio uint8, exp string) {
		e.must(e.b.Publish("/", "", "prio-q", sim.Message{Properties: sim.Properties{Priority: prio, Expiration: exp}, Body: []byte(body)}))
	}
	pub("B", 0, "5000")
	pub("A", 2, "100")
	e.b.Advance(4999 * time.Millisecond)
	diff(t, "queued at 4.999 s", []string{"A", "B"}, e.ready("prio-q"))
	diff(t, "dead-lettered at 4.999 s", []string{}, e.ready("prio-dlq"))
	e.b.Advance(time.Millisecond)
	diff(t, "queued at 5 s", []string{}, e.ready("prio-q"))
	diff(t, "dead-lettered at 5 s", []string{"A", "B"}, e.ready("prio-dlq"))
}

// In the same situation a basic.get at 1 s is handed the expired A:
// RabbitMQ's fetch takes the head before dropping expired messages
// (rabbit_amqqueue_process:fetch/2), and B, not yet expired, is left.
// Measured on RabbitMQ 3.10.8 (no DLX): 2 messages queued at 1 s, the
// no-ack get returned A with message count 1, and the queue was empty
// 5.5 s after the publishes.
func TestTTLGetTakesExpiredPriorityHead(t *testing.T) {
	e := newEnv(t)
	e.declare("prio-q", sim.QueueOptions{Args: sim.Table{"x-max-priority": int32(2)}})
	pub := func(body string, prio uint8, exp string) {
		e.must(e.b.Publish("/", "", "prio-q", sim.Message{Properties: sim.Properties{Priority: prio, Expiration: exp}, Body: []byte(body)}))
	}
	pub("B", 0, "5000")
	pub("A", 2, "100")
	e.b.Advance(time.Second)
	d := e.getOne(e.ch, "prio-q", true)
	if string(d.Body) != "A" || d.MessageCount != 1 {
		t.Errorf("got %s with message count %d, want A and 1", d.Body, d.MessageCount)
	}
	e.b.Advance(4 * time.Second)
	diff(t, "queued at 5 s", []string{}, e.ready("prio-q"))
}
