package scenarios

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/amqpsim/amqpsim/protocol"
)

// applyEvents renders the frames a step made the broker push, in a stable
// order, and applies them to the client's view.
//
// The order does not depend on how the broker interleaved frames for
// different channels, which a real broker does not fix: first the deliveries,
// grouped by consumer (in the order consumers were created) and in arrival
// order within a consumer; then, per channel in opening order, its returns,
// its publisher confirms (as sets of tags), broker cancels and channel.close;
// then, per connection, connection.close.
func (r *runner) applyEvents(evs []event) []string {
	var out []string
	// Deliveries, grouped by consumer.
	order := []string{}
	byLabel := map[string][]event{}
	for _, c := range r.consumers {
		if !slices.Contains(order, c.info.Label) {
			order = append(order, c.info.Label)
		}
	}
	for _, e := range evs {
		if e.kind != evDeliver {
			continue
		}
		l := r.label(e.ch, e.ctag)
		if !slices.Contains(order, l) {
			order = append(order, l)
		}
		byLabel[l] = append(byLabel[l], e)
	}
	for _, l := range order {
		for _, e := range byLabel[l] {
			out = append(out, fmt.Sprintf("%s <- %s", l, describe(e.body, e.tag, e.redelivered)))
			r.delivered(e, l)
		}
	}
	// Per channel: returns, confirms, cancels, close.
	for _, ch := range r.chans {
		var acked, nacked []uint64
		var closeLine string
		for _, e := range evs {
			if e.ch != ch.name {
				continue
			}
			switch e.kind {
			case evReturn:
				out = append(out, fmt.Sprintf("%s <- basic.return %s %d %s exchange=%s key=%s", ch.name, word(e.body), e.code, e.text, word(e.exchange), word(e.key)))
			case evConfirm:
				tags := ch.confirmed(e.tag, e.multiple)
				if e.nack {
					nacked = append(nacked, tags...)
				} else {
					acked = append(acked, tags...)
				}
			case evCancel:
				out = append(out, fmt.Sprintf("%s <- basic.cancel %s", ch.name, word(e.ctag)))
				if c := r.consumer(ch.name, e.ctag); c != nil && !c.cancelled {
					c.cancelled = true
					c.info.Until, c.info.How = r.step, "cancelled by broker"
				}
			case evChannelClose:
				closeLine = fmt.Sprintf("%s <- channel.close %d (%s): %s", ch.name, e.code, e.method, replyText(e.text))
			case evLate:
				out = append(out, fmt.Sprintf("%s <- late answer to %q", ch.name, e.text))
			}
		}
		if len(acked) > 0 {
			out = append(out, fmt.Sprintf("%s <- confirm ack %s", ch.name, ranges(acked)))
		}
		if len(nacked) > 0 {
			out = append(out, fmt.Sprintf("%s <- confirm nack %s", ch.name, ranges(nacked)))
		}
		if closeLine != "" {
			out = append(out, closeLine)
			r.closeChan(ch, "channel closed by broker")
		}
	}
	for _, c := range r.conns {
		for _, e := range evs {
			if e.conn != c.name {
				continue
			}
			switch e.kind {
			case evBlocked:
				out = append(out, fmt.Sprintf("%s <- connection.blocked %s", c.name, word(e.text)))
			case evUnblocked:
				out = append(out, c.name+" <- connection.unblocked")
			}
		}
		for _, e := range evs {
			switch {
			case e.kind == evConnClose && e.conn == c.name:
				out = append(out, fmt.Sprintf("%s <- connection.close %d (%s): %s", c.name, e.code, e.method, replyText(e.text)))
				r.closeConn(c, "connection closed by broker")
			case e.kind == evDropped && e.conn == c.name:
				out = append(out, c.name+" <- connection dropped")
				r.closeConn(c, "connection dropped")
			}
		}
	}
	return out
}

// delivered records a basic.deliver in the client's view.
func (r *runner) delivered(e event, label string) {
	ch := r.byChan[e.ch]
	if ch == nil {
		return
	}
	ch.lastTag[e.body] = e.tag
	ch.latest[e.body] = e
	c := r.consumer(e.ch, e.ctag)
	h := &Holding{Consumer: label, Channel: ch.name, Msg: e.body, Tag: e.tag, Redelivered: e.redelivered,
		From: r.step, FromAt: r.now, Until: -1}
	if c != nil {
		h.Queue = c.info.Queue
	}
	r.res.Holdings = append(r.res.Holdings, h)
	if c != nil && c.info.NoAck {
		h.Until, h.UntilAt, h.How = r.step, r.now, "no-ack"
		return
	}
	ch.held = append(ch.held, h)
}

// confirmed returns the publish tags a basic.ack or basic.nack confirms and
// forgets them: with multiple, every pending tag up to tag.
func (ch *rchan) confirmed(tag uint64, multiple bool) []uint64 {
	var out []uint64
	if !multiple {
		if ch.pending[tag] {
			delete(ch.pending, tag)
			out = append(out, tag)
		}
		return out
	}
	for t := range ch.pending {
		if t <= tag {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	for _, t := range out {
		delete(ch.pending, t)
	}
	return out
}

// ranges renders sorted tags compactly: "1-3,5".
func ranges(tags []uint64) string {
	slices.Sort(tags)
	var b strings.Builder
	for i := 0; i < len(tags); {
		j := i
		for j+1 < len(tags) && tags[j+1] == tags[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		if j > i {
			fmt.Fprintf(&b, "%d-%d", tags[i], tags[j])
		} else {
			fmt.Fprintf(&b, "%d", tags[i])
		}
		i = j + 1
	}
	return b.String()
}

var generated = regexp.MustCompile(`amq\.(gen|ctag)-[A-Za-z0-9_-]{22}`)

// normalizeNames replaces broker-generated names, random on a real broker,
// with "amq.gen-*" and "amq.ctag-*".
func normalizeNames(s string) string {
	return generated.ReplaceAllString(s, "amq.$1-*")
}

// replyText is a close's reply text on one result line: generated names
// normalised and a newline written as \n (RabbitMQ 4.3's deprecation
// texts have them).
func replyText(s string) string {
	return strings.ReplaceAll(normalizeNames(s), "\n", `\n`)
}

// headerLines renders a message's headers, one "NAME=VALUE" line per header
// in name order. Values are written as in steps; a table is {K=V ...}, an
// array [V ...], and a timestamp (x-death's time, from the broker's own
// clock) is normalised to timestamp(*).
func headerLines(t protocol.Table) []string {
	if len(t) == 0 {
		return []string{"no headers"}
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(t)) {
		out = append(out, normalizeNames(k+"="+headerValue(t[k])))
	}
	return out
}

func headerValue(v any) string { return valueText(v, true) }
