package fuzz

import (
	"strings"
	"time"

	"github.com/amqpsim/amqpsim/protocol"
)

// topicWords are the words of topic keys and patterns.
var topicWords = []string{"a", "b", "c", "orders", ""}

// topicPattern returns a topic binding pattern, with the edge cases
// RabbitMQ's trie has to get right: '#' alone, several wildcards in a row,
// empty words, a leading or trailing dot, long patterns.
func (g *gen) topicPattern() string {
	switch n := g.r.IntN(100); {
	case n < 8:
		return oneOf(g, "#", "*", "", "#.#", "*.#", "#.*", "a..b", ".a", "a.", ".", "#.a.#")
	case n < 10:
		// Many wildcards: RabbitMQ 4.3 limits the '#' words of a pattern
		// (and closes the channel: rarely, or little else happens).
		var w []string
		for range 3 + g.r.IntN(4) {
			w = append(w, "#", oneOf(g, "a", "b"))
		}
		return strings.Join(w, ".")
	case n < 13:
		w := make([]string, 20+g.r.IntN(20))
		for i := range w {
			w[i] = oneOf(g, "a", "b", "*")
		}
		return strings.Join(w, ".")
	}
	w := make([]string, 1+g.r.IntN(4))
	for i := range w {
		w[i] = oneOf(g, append(topicWords, "*", "*", "#")...)
	}
	return strings.Join(w, ".")
}

// routingKey returns a publish's key for an exchange: usually one its
// bindings match (a topic pattern with its wildcards filled in), else a
// word of the vocabulary.
func (g *gen) routingKey(x *gexchange) string {
	if len(x.keys) == 0 || g.chance(20) {
		if x.kind == "topic" && g.chance(30) {
			return g.topicKey("#")
		}
		return oneOf(g, "a", "b", "info", "a.b", "", "orders.a")
	}
	k := oneOf(g, x.keys...)
	if x.kind == "topic" {
		return g.topicKey(k)
	}
	return k
}

// topicKey fills a pattern's wildcards: '*' with a word, '#' with zero to
// two words (or many, now and then).
func (g *gen) topicKey(pattern string) string {
	var out []string
	for _, w := range strings.Split(pattern, ".") {
		switch w {
		case "*":
			out = append(out, oneOf(g, topicWords...))
		case "#":
			n := g.r.IntN(3)
			if g.chance(5) {
				n = 30 + g.r.IntN(20)
			}
			for range n {
				out = append(out, oneOf(g, "a", "b", "c"))
			}
		default:
			out = append(out, w)
		}
	}
	return strings.Join(out, ".")
}

// headerNames are the names of headers exchanges match on.
var headerNames = []string{"kind", "level", "n", "x-tag"}

// headersMatch returns a headers binding's arguments: x-match and one to
// three values to match.
func (g *gen) headersMatch() protocol.Table {
	t := protocol.Table{}
	if g.chance(85) {
		t["x-match"] = oneOf(g, "all", "any", "all", "any", "all-with-x", "any-with-x")
		if g.chance(3) {
			t["x-match"] = oneOf[any](g, "some", int32(1))
		}
	}
	for range 1 + g.r.IntN(3) {
		t[oneOf(g, headerNames...)] = g.headerValue()
	}
	return t
}

// headers returns a message's headers: for a headers exchange, values its
// bindings may match; else values of every simple field type.
func (g *gen) headers(x *gexchange) protocol.Table {
	t := protocol.Table{}
	for range 1 + g.r.IntN(3) {
		t[oneOf(g, headerNames...)] = g.headerValue()
	}
	if x == nil && g.chance(50) {
		t["trace"] = g.anyValue()
	}
	return t
}

// headerValue is a value headers bindings match on: a small vocabulary, so
// that matches happen.
func (g *gen) headerValue() any {
	return oneOf[any](g, "new", "old", int32(1), int32(2), true, int64(1), "1")
}

// anyValue is a value of any AMQP field type: tables and arrays (nested
// a little) too.
func (g *gen) anyValue() any {
	switch g.r.IntN(10) {
	case 0:
		t := protocol.Table{}
		for range 1 + g.r.IntN(3) {
			t[oneOf(g, "a", "b", "count", "x-y")] = g.scalar()
		}
		if g.chance(20) {
			t["nested"] = protocol.Table{"deep": []any{g.scalar()}}
		}
		return t
	case 1:
		a := make([]any, g.r.IntN(4))
		for i := range a {
			a[i] = g.scalar()
		}
		if g.chance(20) {
			a = append(a, protocol.Table{"k": g.scalar()})
		}
		return a
	}
	return g.scalar()
}

// scalar is a value of a simple AMQP field type.
func (g *gen) scalar() any {
	return oneOf[any](g, "text", int32(-5), int64(1)<<40, true, false, 1.5, float32(2.5), int8(-3), uint8(200),
		int16(-300), uint16(60000), uint32(4000000000), nil, time.Unix(1700000000, 0).UTC(), "",
		protocol.Decimal{Scale: 2, Value: 12345}, []byte("bin"))
}

// ccHeaders adds CC or BCC routing keys to a publish's headers: keys the
// exchange's bindings may match, or queue names through the default
// exchange. BCC is removed from the message RabbitMQ delivers.
func (g *gen) ccHeaders(h protocol.Table, x *gexchange) protocol.Table {
	if h == nil {
		h = protocol.Table{}
	}
	keys := make([]any, 1+g.r.IntN(3))
	for i := range keys {
		if x == nil {
			keys[i] = g.someQueueName()
		} else {
			keys[i] = g.routingKey(x)
		}
	}
	if g.chance(5) {
		h[oneOf(g, "CC", "BCC")] = "not-an-array" // RabbitMQ ignores a CC that is not an array
		return h
	}
	h[oneOf(g, "CC", "CC", "BCC")] = keys
	return h
}
