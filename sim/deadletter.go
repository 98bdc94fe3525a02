package sim

import (
	"maps"
	"time"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/queue"
)

// deadLetter republishes a message that left q for reason ("rejected",
// "expired" or "maxlen") to q's dead-letter exchange, as RabbitMQ 3.10's
// rabbit_dead_letter does: at most once (a quorum queue's at-least-once
// strategy asks again, see took), no confirms, the expiration
// property moved to the x-death entry, the x-death header updated, and
// queues that would close a cycle of automatic deaths skipped. Without a
// dead-letter exchange, or when it does not exist, the message is dropped.
// With took not nil it is a quorum queue's at-least-once forward: queues
// named in took are skipped, those that take the message are added, and it
// reports whether every routed queue took it (false when none was routed).
// Caller holds the lock.
func (b *Broker) deadLetter(q *brokerQueue, m *queue.Message, reason string, took map[string]bool) bool {
	l := q.Limits()
	v := b.vhosts[q.Vhost()]
	x, ok := v.exchanges[l.DeadLetterExchange]
	ok = ok && l.HasDeadLetterExchange
	if b.tracing() {
		e := q.event(EventDeadLetter, m)
		e.Reason, e.Dropped = reason, !ok
		if ok {
			e.Exchange = x.name
		}
		b.record(e)
	}
	if !ok {
		return false
	}
	var props protocol.Properties
	if m.Properties != nil {
		props = *m.Properties
	}
	headers := maps.Clone(props.Headers)
	if headers == nil {
		headers = protocol.Table{}
	}
	// The routing keys of the death are the publish key and the CC header's
	// keys; with x-dead-letter-routing-key the message is routed by that
	// key alone, and before 3.13 loses its CC header
	// (Profile.DeadLetterKeepsCC).
	deathKeys := []any{m.RoutingKey}
	if cc, ok := headers["CC"].([]any); ok {
		for _, k := range cc {
			if s, ok := k.(string); ok {
				deathKeys = append(deathKeys, s)
			}
		}
	}
	routeKeys := make([]string, 0, len(deathKeys))
	if l.HasDeadLetterRoutingKey {
		routeKeys = append(routeKeys, l.DeadLetterRoutingKey)
	} else {
		for _, k := range deathKeys {
			routeKeys = append(routeKeys, k.(string))
		}
	}
	entry := protocol.Table{
		"reason":       reason,
		"queue":        q.Name(),
		"time":         b.now.Truncate(time.Second).UTC(),
		"exchange":     m.Exchange,
		"routing-keys": deathKeys,
	}
	if props.Expiration != "" {
		entry["original-expiration"] = props.Expiration
	}
	if b.profile.IgnorePublisherDeaths && !m.Dead {
		// 4.0 keeps deaths as the message's annotations: what a
		// publisher wrote in x-death is overwritten, not extended.
		for _, h := range deathHeaders {
			delete(headers, h)
		}
	}
	recordDeath(headers, entry)
	if b.profile.LastDeathHeaders {
		// mc_amqpl:deaths_to_headers/2 (3.13+) also names the latest
		// death, at every death.
		headers["x-last-death-reason"] = reason
		headers["x-last-death-queue"] = q.Name()
		headers["x-last-death-exchange"] = m.Exchange
	}
	if l.HasDeadLetterRoutingKey && !b.profile.DeadLetterKeepsCC {
		delete(headers, "CC")
	}
	props.Headers = headers
	props.Expiration = ""

	body := m.Body
	// A queue reached by several keys gets one copy: RabbitMQ routes a
	// message's keys to a set of queues (measured on 3.10.8: CC [dlq, dlq]
	// through the default exchange delivers once).
	targets, err := b.route(v, x, routeKeys, headers, nil)
	if err != nil {
		// Routing's guard tripped (a broken visited set): the message is
		// dropped, loudly, in the trace (check.NoLoss reports it).
		if b.tracing() {
			e := q.event(EventDeadLetter, m)
			e.Reason, e.Dropped = reason, true
			e.Err, _ = err.(*Error)
			b.record(e)
		}
		return false
	}
	deaths, _ := headers["x-death"].([]any)
	storedSize := m.StoredPropertiesSize()
	// The dead-lettered message is a new one: a new identity, shared by
	// its copies.
	b.nextMessageID++
	id := b.nextMessageID
	routed, all := 0, true
	for _, t := range targets {
		if isDeathCycle(t.Name(), deaths) {
			if b.tracing() {
				e := q.event(EventDeadLetterCycle, m)
				e.Target = t.Name()
				b.record(e)
			}
			continue
		}
		routed++
		if took != nil && took[t.Name()] {
			continue
		}
		if took == nil && t.caps.StoresAMQP10 && !b.profile.StreamTakesDeadLetters {
			// 3.10's rabbit_stream_queue:deliver ignores a delivery
			// without a queue state, which is how an at-most-once dead
			// letter comes (dlx-to-stream.txt).
			continue
		}
		p := props
		// The failed deliveries go along (4.3's delivery-count
		// annotation), and the size of the properties RabbitMQ stores,
		// those published (a 4.3 quorum queue counts them).
		dl := &queue.Message{ID: id, Exchange: x.name, RoutingKey: routeKeys[0], Properties: &p, Body: body, Dead: true,
			Failures: m.Failures, PropertiesSize: storedSize}
		if t.Publish(dl, 0, false) {
			if took != nil {
				took[t.Name()] = true
			}
		} else {
			all = false
		}
		b.markDirty(t)
	}
	return routed > 0 && all
}

// deathHeaders are the headers dead-lettering writes.
var deathHeaders = []string{"x-death", "x-first-death-reason", "x-first-death-queue", "x-first-death-exchange",
	"x-last-death-reason", "x-last-death-queue", "x-last-death-exchange"}

// recordDeath updates the x-death header in place as RabbitMQ 3.10 does:
// entries are keyed by (queue, reason); a repeat increments the count of the
// existing entry, keeps its other fields (first time, exchange, routing
// keys) and moves it to the front; a new entry with count 1 goes to the
// front. The x-first-death-* headers are set at the first death only.
func recordDeath(headers protocol.Table, entry protocol.Table) {
	old, _ := headers["x-death"].([]any)
	// An x-death header of another type (a publisher's) is replaced
	// by a fresh array, and the x-first-death-* headers are set only when
	// there was no x-death header at all (update_x_death_header; measured
	// on RabbitMQ 3.10.8 with x-death = "nonsense": no x-first-death-*).
	if _, present := headers["x-death"]; !present {
		headers["x-first-death-reason"] = entry["reason"]
		headers["x-first-death-queue"] = entry["queue"]
		headers["x-first-death-exchange"] = entry["exchange"]
	}
	deaths := make([]any, 0, len(old)+1)
	count := int64(1)
	for _, d := range old {
		t, ok := d.(protocol.Table)
		if ok && count == 1 && t["queue"] == entry["queue"] && t["reason"] == entry["reason"] {
			n, _ := protocol.Int(t["count"])
			count = n + 1
			entry = maps.Clone(t)
			continue
		}
		deaths = append(deaths, d)
	}
	entry["count"] = count
	headers["x-death"] = append([]any{entry}, deaths...)
}

// isDeathCycle reports whether dead-lettering into queue would close a
// cycle RabbitMQ drops: the queue already appears in x-death and no death
// up to and including its latest one there was a rejection.
func isDeathCycle(queue string, deaths []any) bool {
	for _, d := range deaths {
		t, _ := d.(protocol.Table)
		if t["reason"] == "rejected" {
			return false
		}
		if t["queue"] == queue {
			return true
		}
	}
	return false
}
