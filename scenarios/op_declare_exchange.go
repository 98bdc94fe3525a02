package scenarios

import (
	"strings"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// DeclareExchange is exchange.declare: "declare-exchange ch1 logs fanout".
type DeclareExchange struct {
	Channel, Exchange, Kind                string
	Passive, Durable, AutoDelete, Internal bool
	Args                                   protocol.Table
}

func init() {
	register(&verb{name: "declare-exchange", usage: "declare-exchange CHANNEL EXCHANGE KIND [passive] [durable] [auto-delete] [internal] [x-ARG=V...]",
		minPos: 3, maxPos: 3, flags: []string{"passive", "durable", "auto-delete", "internal"}, args: true,
		method: protocol.ExchangeDeclare,
		build: func(a *argSet) (Op, error) {
			return DeclareExchange{Channel: a.str(0), Exchange: a.str(1), Kind: a.str(2), Passive: a.flags["passive"],
				Durable: a.flags["durable"], AutoDelete: a.flags["auto-delete"], Internal: a.flags["internal"], Args: a.args}, nil
		},
		fromCall: func(w *traceWriter, e sim.Event, ch string) Op {
			xo, _ := e.Options.(sim.ExchangeOptions)
			return DeclareExchange{Channel: ch, Exchange: e.Exchange, Kind: e.Target, Passive: xo.Passive, Durable: xo.Durable,
				AutoDelete: xo.AutoDelete, Internal: xo.Internal, Args: xo.Args}
		}})
}

func (DeclareExchange) isOp()             {}
func (DeclareExchange) silent()           {}
func (o DeclareExchange) channel() string { return o.Channel }

// String returns the DeclareExchange step line.
func (o DeclareExchange) String() string {
	return line(append([]string{"declare-exchange", word(o.Channel), word(o.Exchange), word(o.Kind),
		flagIf(o.Passive, "passive"), flagIf(o.Durable, "durable"), flagIf(o.AutoDelete, "auto-delete"),
		flagIf(o.Internal, "internal")}, formatArgs(o.Args)...)...)
}

func (o DeclareExchange) runSim(ch *sim.Channel) (reply, error) {
	return reply{}, ch.ExchangeDeclare(o.Exchange, o.Kind, sim.ExchangeOptions{Passive: o.Passive, Durable: o.Durable, AutoDelete: o.AutoDelete, Internal: o.Internal, Args: o.Args})
}

func (o DeclareExchange) runAMQP(d *amqpDriver, ch *amqp.Channel) (reply, error) {
	if o.Passive {
		return reply{}, ch.ExchangeDeclarePassive(d.p(o.Exchange), o.Kind, o.Durable, o.AutoDelete, o.Internal, false, d.exchangeArgs(o.Args))
	}
	if x := d.p(o.Exchange); x != "" && !strings.HasPrefix(x, "amq.") {
		d.exchs = append(d.exchs, x) // never the broker's own
	}
	return reply{}, ch.ExchangeDeclare(d.p(o.Exchange), o.Kind, o.Durable, o.AutoDelete, o.Internal, false, d.exchangeArgs(o.Args))
}

// exchangeArgs converts an exchange's arguments and prefixes the exchange
// alternate-exchange names.
func (d *amqpDriver) exchangeArgs(args protocol.Table) amqp.Table {
	t := table(args)
	if x, ok := t["alternate-exchange"].(string); ok {
		t["alternate-exchange"] = d.p(x)
	}
	return t
}
