package scenarios

import (
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// Cancel is basic.cancel: "cancel ch1 A".
type Cancel struct{ Channel, Tag string }

func init() {
	register(&verb{name: "cancel", usage: "cancel CHANNEL TAG", minPos: 2, maxPos: 2, method: protocol.BasicCancel,
		build:    func(a *argSet) (Op, error) { return Cancel{Channel: a.str(0), Tag: a.str(1)}, nil },
		fromCall: func(w *traceWriter, e sim.Event, ch string) Op { return Cancel{Channel: ch, Tag: w.tag(e.ConsumerTag)} }})
}

func (Cancel) isOp()             {}
func (o Cancel) channel() string { return o.Channel }

// String returns the Cancel step line.
func (o Cancel) String() string { return line("cancel", word(o.Channel), word(o.Tag)) }

func (o Cancel) runSim(ch *sim.Channel) (reply, error) { return reply{}, ch.Cancel(o.Tag) }

func (o Cancel) runAMQP(_ *amqpDriver, ch *amqp.Channel) (reply, error) {
	return reply{}, ch.Cancel(o.Tag, false)
}

// apply ends the consumer; what it holds stays held.
func (o Cancel) apply(r *runner, ch *rchan, _ reply) []string {
	if c := r.consumer(ch.name, o.Tag); c != nil {
		c.cancelled = true
		c.info.Until, c.info.How = r.step, "cancelled"
	}
	return nil
}
