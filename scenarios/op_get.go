package scenarios

import (
	"fmt"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// Get is basic.get: "get ch1 orders no-ack".
type Get struct {
	Channel, Queue string
	NoAck          bool
}

func init() {
	register(&verb{name: "get", usage: "get CHANNEL QUEUE [no-ack]", minPos: 2, maxPos: 2, flags: []string{"no-ack"}, method: protocol.BasicGet,
		build: func(a *argSet) (Op, error) {
			return Get{Channel: a.str(0), Queue: a.str(1), NoAck: a.flags["no-ack"]}, nil
		},
		fromCall: func(w *traceWriter, e sim.Event, ch string) Op {
			return Get{Channel: ch, Queue: e.Queue, NoAck: e.NoAck}
		}})
}

func (Get) isOp()             {}
func (o Get) channel() string { return o.Channel }

// String returns the Get step line.
func (o Get) String() string {
	return line("get", word(o.Channel), word(o.Queue), flagIf(o.NoAck, "no-ack"))
}

func (o Get) runSim(ch *sim.Channel) (reply, error) {
	dl, got, err := ch.Get(o.Queue, o.NoAck)
	return reply{got: got, get: event{kind: evDeliver, tag: dl.DeliveryTag, redelivered: dl.Redelivered, body: string(dl.Body), left: dl.MessageCount,
		exchange: dl.Exchange, key: dl.RoutingKey, headers: headers(dl.Headers)}}, err
}

func (o Get) runAMQP(d *amqpDriver, ch *amqp.Channel) (reply, error) {
	m, got, err := ch.Get(d.p(o.Queue), o.NoAck)
	return reply{got: got, get: event{kind: evDeliver, tag: m.DeliveryTag, redelivered: m.Redelivered, body: string(m.Body), left: int(m.MessageCount),
		exchange: d.unp(m.Exchange), key: d.unp(m.RoutingKey), headers: d.headers(protocol.Table(m.Headers))}}, err
}

// apply shows the get-ok or get-empty; the channel holds what it got
// unless no-ack settled it at once.
func (o Get) apply(r *runner, ch *rchan, rep reply) []string {
	if !rep.got {
		return []string{"get-empty"}
	}
	e := rep.get
	q := o.Queue
	if q == "" {
		q = ch.lastQueue
	}
	ch.lastTag[e.body] = e.tag
	ch.latest[e.body] = e
	h := &Holding{Consumer: ch.name + " get", Channel: ch.name, Queue: q, Msg: e.body, Tag: e.tag, Redelivered: e.redelivered,
		From: r.step, FromAt: r.now, Until: -1}
	r.res.Holdings = append(r.res.Holdings, h)
	if o.NoAck {
		h.Until, h.UntilAt, h.How = r.step, r.now, "no-ack"
	} else {
		ch.held = append(ch.held, h)
	}
	return []string{fmt.Sprintf("get-ok %s left=%d", describe(e.body, e.tag, e.redelivered), e.left)}
}
