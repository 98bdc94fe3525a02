package scenarios

import (
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// The binding steps share one shape, "VERB CHANNEL DESTINATION SOURCE
// [key=KEY] [ARG=V...]": a queue or an exchange bound to an exchange.

// Bind is queue.bind: "bind ch1 orders logs key=info".
type Bind struct {
	Channel, Queue, Exchange, Key string
	Args                          protocol.Table
}

// Unbind is queue.unbind: "unbind ch1 orders logs key=info".
type Unbind struct {
	Channel, Queue, Exchange, Key string
	Args                          protocol.Table
}

// ExchangeBind is exchange.bind: "bind-exchange ch1 dst src key=k", messages
// exchange src routes with key go on to exchange dst.
type ExchangeBind struct {
	Channel, Destination, Source, Key string
	Args                              protocol.Table
}

// ExchangeUnbind is exchange.unbind: "unbind-exchange ch1 dst src key=k".
type ExchangeUnbind struct {
	Channel, Destination, Source, Key string
	Args                              protocol.Table
}

func init() {
	queue := func(e sim.Event) string { return e.Queue }
	exchange := func(e sim.Event) string { return e.Target }
	register(
		bindVerb("bind", "QUEUE EXCHANGE", protocol.QueueBind, queue, func(ch, q, x, key string, args protocol.Table) Op {
			return Bind{Channel: ch, Queue: q, Exchange: x, Key: key, Args: args}
		}),
		bindVerb("unbind", "QUEUE EXCHANGE", protocol.QueueUnbind, queue, func(ch, q, x, key string, args protocol.Table) Op {
			return Unbind{Channel: ch, Queue: q, Exchange: x, Key: key, Args: args}
		}),
		bindVerb("bind-exchange", "DESTINATION SOURCE", protocol.ExchangeBind, exchange, func(ch, dst, src, key string, args protocol.Table) Op {
			return ExchangeBind{Channel: ch, Destination: dst, Source: src, Key: key, Args: args}
		}),
		bindVerb("unbind-exchange", "DESTINATION SOURCE", protocol.ExchangeUnbind, exchange, func(ch, dst, src, key string, args protocol.Table) Op {
			return ExchangeUnbind{Channel: ch, Destination: dst, Source: src, Key: key, Args: args}
		}),
	)
}

// bindVerb is a binding verb; dest reads a traced call's destination (its
// source is the event's exchange).
func bindVerb(name, words string, m protocol.Method, dest func(sim.Event) string, op func(ch, dst, src, key string, args protocol.Table) Op) *verb {
	return &verb{name: name, usage: name + " CHANNEL " + words + " [key=KEY] [ARG=V...]", minPos: 3, maxPos: 3, options: []string{"key"}, args: true,
		method: m,
		build: func(a *argSet) (Op, error) {
			return op(a.str(0), a.str(1), a.str(2), a.opts["key"].val, a.args), nil
		},
		fromCall: func(w *traceWriter, e sim.Event, ch string) Op {
			args, _ := e.Options.(sim.Table)
			return op(ch, dest(e), e.Exchange, e.RoutingKey, args)
		}}
}

func bindLine(verb, ch, q, x, key string, args protocol.Table) string {
	k := ""
	if key != "" {
		k = "key=" + optWord(key)
	}
	return line(append([]string{verb, word(ch), word(q), word(x), k}, formatArgs(args)...)...)
}

func (Bind) isOp()           {}
func (Unbind) isOp()         {}
func (ExchangeBind) isOp()   {}
func (ExchangeUnbind) isOp() {}

func (Bind) silent()           {}
func (Unbind) silent()         {}
func (ExchangeBind) silent()   {}
func (ExchangeUnbind) silent() {}

func (o Bind) channel() string           { return o.Channel }
func (o Unbind) channel() string         { return o.Channel }
func (o ExchangeBind) channel() string   { return o.Channel }
func (o ExchangeUnbind) channel() string { return o.Channel }

// String returns the Bind step line.
func (o Bind) String() string { return bindLine("bind", o.Channel, o.Queue, o.Exchange, o.Key, o.Args) }

// String returns the Unbind step line.
func (o Unbind) String() string {
	return bindLine("unbind", o.Channel, o.Queue, o.Exchange, o.Key, o.Args)
}

// String returns the ExchangeBind step line.
func (o ExchangeBind) String() string {
	return bindLine("bind-exchange", o.Channel, o.Destination, o.Source, o.Key, o.Args)
}

// String returns the ExchangeUnbind step line.
func (o ExchangeUnbind) String() string {
	return bindLine("unbind-exchange", o.Channel, o.Destination, o.Source, o.Key, o.Args)
}

func (o Bind) runSim(ch *sim.Channel) (reply, error) {
	return reply{}, ch.QueueBind(o.Queue, o.Key, o.Exchange, o.Args)
}

func (o Unbind) runSim(ch *sim.Channel) (reply, error) {
	return reply{}, ch.QueueUnbind(o.Queue, o.Key, o.Exchange, o.Args)
}

func (o ExchangeBind) runSim(ch *sim.Channel) (reply, error) {
	return reply{}, ch.ExchangeBind(o.Destination, o.Key, o.Source, o.Args)
}

func (o ExchangeUnbind) runSim(ch *sim.Channel) (reply, error) {
	return reply{}, ch.ExchangeUnbind(o.Destination, o.Key, o.Source, o.Args)
}

func (o Bind) runAMQP(d *amqpDriver, ch *amqp.Channel) (reply, error) {
	return reply{}, ch.QueueBind(d.p(o.Queue), o.Key, d.p(o.Exchange), false, table(o.Args))
}

func (o Unbind) runAMQP(d *amqpDriver, ch *amqp.Channel) (reply, error) {
	return reply{}, ch.QueueUnbind(d.p(o.Queue), o.Key, d.p(o.Exchange), table(o.Args))
}

func (o ExchangeBind) runAMQP(d *amqpDriver, ch *amqp.Channel) (reply, error) {
	return reply{}, ch.ExchangeBind(d.p(o.Destination), o.Key, d.p(o.Source), false, table(o.Args))
}

func (o ExchangeUnbind) runAMQP(d *amqpDriver, ch *amqp.Channel) (reply, error) {
	return reply{}, ch.ExchangeUnbind(d.p(o.Destination), o.Key, d.p(o.Source), false, table(o.Args))
}
