package sim_test

import (
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// TTL's conversations are library scenarios (scenarios/library/ttl-*.txt,
// publish-expiration-texts.txt); this file keeps the expiration texts a
// scenario file cannot hold, and the helpers other tests share.

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
// class 60 method 40. The values here have bytes beyond ASCII, which a
// scenario file cannot keep (the others: publish-expiration-texts.txt).
// Pinned to 3.10: RabbitMQ 4.0.5 and 4.3.6 print "1é"'s leftover as
// "Ã©" (recorded), which the simulator does not.
func TestExpirationInvalidTexts(t *testing.T) {
	pre := "PRECONDITION_FAILED - invalid expiration "
	for _, tc := range []struct{ exp, text string }{
		{"1é", `'1é': {leftover_string,"é"}`},
		{"1\xe9", "'1\xe9': {leftover_string,\"\xe9\"}"},
		{"1\xa0", "'1\xa0': {leftover_string,\"\xa0\"}"},
		{"1\x9f", "'1\x9f': {leftover_string,[159]}"},
		{"1" + strings.Repeat("\xe9", 18), "'1" + strings.Repeat("\xe9", 18) + "': {leftover_string,\n                                           \"" + strings.Repeat("\xe9", 18) + "\"}"},
	} {
		t.Run(tc.exp, func(t *testing.T) {
			e := newEnvOn(t, sim.V3_10)
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
