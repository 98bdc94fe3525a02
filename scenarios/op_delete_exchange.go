package scenarios

import (
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// DeleteExchange is exchange.delete: "delete-exchange ch1 logs if-unused".
type DeleteExchange struct {
	Channel, Exchange string
	IfUnused          bool
}

func init() {
	register(&verb{name: "delete-exchange", usage: "delete-exchange CHANNEL EXCHANGE [if-unused]", minPos: 2, maxPos: 2,
		flags: []string{"if-unused"}, method: protocol.ExchangeDelete,
		build: func(a *argSet) (Op, error) {
			return DeleteExchange{Channel: a.str(0), Exchange: a.str(1), IfUnused: a.flags["if-unused"]}, nil
		},
		fromCall: func(w *traceWriter, e sim.Event, ch string) Op {
			do, _ := e.Options.(sim.ExchangeDeleteOptions)
			return DeleteExchange{Channel: ch, Exchange: e.Exchange, IfUnused: do.IfUnused}
		}})
}

func (DeleteExchange) isOp()             {}
func (o DeleteExchange) channel() string { return o.Channel }

// String returns the DeleteExchange step line.
func (o DeleteExchange) String() string {
	return line("delete-exchange", word(o.Channel), word(o.Exchange), flagIf(o.IfUnused, "if-unused"))
}

func (o DeleteExchange) runSim(ch *sim.Channel) (reply, error) {
	return reply{}, ch.ExchangeDelete(o.Exchange, sim.ExchangeDeleteOptions{IfUnused: o.IfUnused})
}

func (o DeleteExchange) runAMQP(d *amqpDriver, ch *amqp.Channel) (reply, error) {
	return reply{}, ch.ExchangeDelete(d.p(o.Exchange), o.IfUnused, false)
}
