package scenarios

import (
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// Recover is basic.recover: "recover ch1" (requeue=true),
// "recover ch1 requeue=false".
type Recover struct {
	Channel string
	Requeue bool
}

func init() {
	register(&verb{name: "recover", usage: "recover CHANNEL [requeue=false]", minPos: 1, maxPos: 1, flags: []string{"requeue"}, options: []string{"requeue"},
		method: protocol.BasicRecover,
		build: func(a *argSet) (Op, error) {
			rq, err := a.boolOpt("requeue", true)
			return Recover{Channel: a.str(0), Requeue: rq}, err
		},
		fromCall: func(w *traceWriter, e sim.Event, ch string) Op { return Recover{Channel: ch, Requeue: e.Requeue} }})
}

func (Recover) isOp()             {}
func (o Recover) channel() string { return o.Channel }

// String returns the Recover step line.
func (o Recover) String() string {
	return line("recover", word(o.Channel), flagIf(!o.Requeue, "requeue=false"))
}

func (o Recover) runSim(ch *sim.Channel) (reply, error) { return reply{}, ch.Recover(o.Requeue) }

func (o Recover) runAMQP(_ *amqpDriver, ch *amqp.Channel) (reply, error) {
	//lint:ignore SA1019 the scenario's step is basic.recover, which amqp091-go deprecates and RabbitMQ still answers.
	return reply{}, ch.Recover(o.Requeue)
}

// apply ends everything the channel held, except what a transaction's
// settlement staged (RabbitMQ's channel no longer counts it as unacked):
// the broker redelivers it.
func (o Recover) apply(r *runner, ch *rchan, _ reply) []string {
	r.endHeld(ch, func(h *Holding) bool { return h.staged == "" }, "recovered")
	return nil
}
