package scenarios

import (
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// Confirm is confirm.select: "confirm ch1".
type Confirm struct{ Channel string }

func init() {
	register(&verb{name: "confirm", usage: "confirm CHANNEL", minPos: 1, maxPos: 1, method: protocol.ConfirmSelect,
		build:    func(a *argSet) (Op, error) { return Confirm{Channel: a.str(0)}, nil },
		fromCall: func(w *traceWriter, e sim.Event, ch string) Op { return Confirm{Channel: ch} }})
}

func (Confirm) isOp()             {}
func (Confirm) silent()           {}
func (o Confirm) channel() string { return o.Channel }

// String returns the Confirm step line.
func (o Confirm) String() string { return line("confirm", word(o.Channel)) }

func (o Confirm) runSim(ch *sim.Channel) (reply, error) { return reply{}, ch.Confirm() }

func (o Confirm) runAMQP(_ *amqpDriver, ch *amqp.Channel) (reply, error) {
	return reply{}, ch.Confirm(false)
}

// apply has the channel count its publishes from here on.
func (o Confirm) apply(_ *runner, ch *rchan, _ reply) []string {
	ch.confirm = true
	return nil
}
