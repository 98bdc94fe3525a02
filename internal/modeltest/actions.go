package modeltest

import (
	"fmt"
	"maps"
	"slices"

	"github.com/amqpsim/amqpsim/scenarios"
	"pgregory.net/rapid"
)

// baseActions are rapid's actions, one per kind of operation, each with
// weight 1 (see weights).
func (h *harness) baseActions() map[string]func(*rapid.T) {
	return map[string]func(*rapid.T){
		"Connect": func(t *rapid.T) {
			if len(h.openConns()) >= maxOpenConns {
				t.Skip("enough connections")
			}
			h.connect()
		},
		"CloseConnection": func(t *rapid.T) {
			destructive(t)
			var conns []string
			for _, c := range h.model.conns {
				if c.name != BrokerConn {
					conns = append(conns, c.name)
				}
			}
			h.step(scenarios.Close{Name: rapid.SampledFrom(conns).Draw(t, "conn")})
		},
		"OpenChannel": func(t *rapid.T) {
			conns := h.openConns()
			if len(conns) == 0 || len(h.userChans(true)) >= maxOpenChannels {
				t.Skip("no connection or enough channels")
			}
			h.openChannel(rapid.SampledFrom(names(conns, connName)).Draw(t, "conn"))
			if rapid.Bool().Draw(t, "qos?") {
				h.qos(t, h.model.chans[len(h.model.chans)-1])
			}
		},
		"CloseChannel": func(t *rapid.T) {
			destructive(t)
			h.step(scenarios.Close{Name: h.channel(t).name})
		},
		"QueueDeclare": func(t *rapid.T) {
			h.declare(t, h.channel(t), rapid.SampledFrom(queueNames).Draw(t, "queue"))
		},
		"BrokerPublish":  func(t *rapid.T) { h.publish(t, true) },
		"ChannelPublish": func(t *rapid.T) { h.publish(t, false) },
		"ConfirmSelect": func(t *rapid.T) {
			h.step(scenarios.Confirm{Channel: h.channel(t).name})
		},
		"Qos": func(t *rapid.T) { h.qos(t, h.channel(t)) },
		"Consume": func(t *rapid.T) {
			if len(h.liveCons()) >= maxLiveCons {
				t.Skip("enough consumers")
			}
			ch := h.channel(t)
			h.consume(t, ch, h.queue(t))
		},
		// ConsumeEach consumes from every queue on one channel, and
		// PublishEach sends a message to every queue: they make channels
		// whose global limit spans several queues common.
		"ConsumeEach": func(t *rapid.T) {
			ch := h.channel(t)
			for _, q := range slices.Sorted(maps.Keys(h.model.queues)) {
				if len(h.liveCons()) < maxLiveCons && !ch.closed {
					h.consume(t, ch, q)
				}
			}
		},
		"PublishEach": func(t *rapid.T) {
			qs := slices.Sorted(maps.Keys(h.model.queues))
			if len(qs) > 0 {
				h.publisherChannel()
			}
			for _, q := range qs {
				h.msgs++
				h.step(scenarios.Publish{Channel: BrokerChannel, Key: q, Bodies: []string{fmt.Sprintf("m%d", h.msgs)}})
			}
		},
		"Cancel": func(t *rapid.T) {
			live := h.liveCons()
			if len(live) == 0 || oneIn(t, 10, "unknownTag?") {
				h.step(scenarios.Cancel{Channel: h.channel(t).name, Tag: "nosuch"})
				return
			}
			c := live[rapid.IntRange(0, len(live)-1).Draw(t, "consumer")]
			h.step(scenarios.Cancel{Channel: c.ch.name, Tag: c.tag})
		},
		"Get": func(t *rapid.T) {
			ch := h.channel(t)
			h.step(scenarios.Get{Channel: ch.name, Queue: h.queue(t), NoAck: oneIn(t, 4, "noAck?")})
		},
		"Ack":    func(t *rapid.T) { h.settle(t, "ack") },
		"Nack":   func(t *rapid.T) { h.settle(t, "nack") },
		"Reject": func(t *rapid.T) { h.settle(t, "reject") },
		"Recover": func(t *rapid.T) {
			h.step(scenarios.Recover{Channel: h.channel(t).name, Requeue: !oneIn(t, 20, "requeueFalse?")})
		},
		"QueuePurge": func(t *rapid.T) {
			ch := h.channel(t)
			h.step(scenarios.Purge{Channel: ch.name, Queue: h.queue(t)})
		},
		"QueueDelete": func(t *rapid.T) {
			destructive(t)
			ch := h.channel(t)
			h.step(scenarios.DeleteQueue{Channel: ch.name, Queue: h.queue(t),
				IfUnused: oneIn(t, 4, "ifUnused?"), IfEmpty: oneIn(t, 4, "ifEmpty?")})
		},
		"Advance": func(t *rapid.T) {
			h.step(scenarios.Advance{D: rapid.SampledFrom(advances).Draw(t, "duration")})
		},
	}
}
