package scenarios

import (
	"fmt"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// Purge is queue.purge: "purge ch1 orders".
type Purge struct{ Channel, Queue string }

func init() {
	register(&verb{name: "purge", usage: "purge CHANNEL QUEUE", minPos: 2, maxPos: 2, method: protocol.QueuePurge,
		build:    func(a *argSet) (Op, error) { return Purge{Channel: a.str(0), Queue: a.str(1)}, nil },
		fromCall: func(w *traceWriter, e sim.Event, ch string) Op { return Purge{Channel: ch, Queue: e.Queue} }})
}

func (Purge) isOp()             {}
func (o Purge) channel() string { return o.Channel }

// String returns the Purge step line.
func (o Purge) String() string { return line("purge", word(o.Channel), word(o.Queue)) }

func (o Purge) runSim(ch *sim.Channel) (reply, error) {
	n, err := ch.QueuePurge(o.Queue)
	return reply{count: n}, err
}

func (o Purge) runAMQP(d *amqpDriver, ch *amqp.Channel) (reply, error) {
	n, err := ch.QueuePurge(d.p(o.Queue), false)
	return reply{count: n}, err
}

func (o Purge) apply(_ *runner, _ *rchan, rep reply) []string {
	return []string{fmt.Sprintf("purge-ok %d", rep.count)}
}
