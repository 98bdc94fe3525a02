package scenarios

import (
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// Consume is basic.consume with an explicit tag:
// "consume ch1 orders tag=A no-ack exclusive x-priority=5". An option
// x-NAME=V, or arg.NAME=V for a name without the x- prefix, is a consumer
// argument (likewise for queue, exchange and binding arguments).
type Consume struct {
	Channel, Queue, Tag string
	NoAck, Exclusive    bool
	Args                protocol.Table
}

func init() {
	register(&verb{name: "consume", usage: "consume CHANNEL QUEUE tag=TAG [no-ack] [exclusive] [x-ARG=V...]", minPos: 2, maxPos: 2,
		flags: []string{"no-ack", "exclusive"}, options: []string{"tag"}, args: true, method: protocol.BasicConsume,
		build: func(a *argSet) (Op, error) {
			t, ok := a.opt("tag")
			if !ok || t.val == "" {
				return nil, a.errAt(a.pos[1], "expected tag=TAG after the queue: scenarios use explicit consumer tags")
			}
			return Consume{Channel: a.str(0), Queue: a.str(1), Tag: t.val, NoAck: a.flags["no-ack"], Exclusive: a.flags["exclusive"], Args: a.args}, nil
		},
		fromCall: func(w *traceWriter, e sim.Event, ch string) Op {
			co, _ := e.Options.(sim.ConsumeOptions)
			return Consume{Channel: ch, Queue: e.Queue, Tag: w.tag(e.ConsumerTag), NoAck: co.NoAck, Exclusive: co.Exclusive, Args: co.Args}
		}})
}

func (Consume) isOp()             {}
func (o Consume) channel() string { return o.Channel }

// String returns the Consume step line.
func (o Consume) String() string {
	return line(append([]string{"consume", word(o.Channel), word(o.Queue), "tag=" + optWord(o.Tag),
		flagIf(o.NoAck, "no-ack"), flagIf(o.Exclusive, "exclusive")}, formatArgs(o.Args)...)...)
}

func (o Consume) runSim(ch *sim.Channel) (reply, error) {
	_, err := ch.Consume(o.Queue, sim.ConsumeOptions{Tag: o.Tag, NoAck: o.NoAck, Exclusive: o.Exclusive, Args: o.Args})
	return reply{}, err
}

func (o Consume) runAMQP(d *amqpDriver, ch *amqp.Channel) (reply, error) {
	dl, err := ch.Consume(d.p(o.Queue), o.Tag, o.NoAck, o.Exclusive, false, false, table(o.Args))
	if err == nil {
		// Deliveries are observed on the wire; the library's copies
		// are drained so that it never blocks.
		go func() {
			for range dl {
			}
		}()
	}
	return reply{}, err
}

// apply adds the consumer, with the channel's prefetch.
func (o Consume) apply(r *runner, ch *rchan, _ reply) []string {
	q := o.Queue
	if q == "" {
		q = ch.lastQueue
	}
	info := &Consumer{Label: r.label(ch.name, o.Tag), Channel: ch.name, Queue: q, NoAck: o.NoAck, From: r.step, Until: -1}
	if !o.NoAck {
		info.Prefetch = ch.prefetch
	}
	r.res.Consumers = append(r.res.Consumers, info)
	r.consumers = append(r.consumers, &rconsumer{ch: ch, tag: o.Tag, info: info})
	return nil
}
