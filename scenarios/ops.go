package scenarios

import (
	"strings"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/amqpsim/amqpsim/sim"
)

// Op is one operation of a scenario: a step line. String returns the
// canonical line, which Parse reads back to an equal Op. The concrete types
// are the structs below; a scenario can be built from them in Go (see New).
type Op interface {
	String() string
	isOp()
}

// Each op has a file of its own, op_VERB.go (one file for a family of
// verbs of one shape, such as ack, nack and reject), which holds all there
// is to it: its struct and String, its verbs (register, in parseops.go:
// the parser's usage line and build function, the AMQP method it sends,
// and how FromTrace writes a client's call of that method), and how it
// runs. An op runs in one of three ways, by the interfaces below; the
// runner and the drivers hold no switch over ops.
//
//   - A chanOp sends one method on a channel. Each driver calls its own
//     client: runSim the simulator's channel, runAMQP amqp091-go's (on
//     the simulator over the wire or on a broker). driver.do runs it.
//   - An adminOp is an operator step on the vhost "/": runSim on a
//     simulator (in process or behind the wire), runCtl on a broker
//     through rabbitmqctl. driver.admin runs it.
//   - A runnerOp runs itself on the runner: it calls the driver's other
//     methods (connections, the clock, alarms, observations), or sends a
//     chanOp its own way (a publish per body, a settlement by message).
//     A driver method that only one op calls is in that op's file.
//
// Then the runner reads what the broker pushed (settle), and, unless the
// step failed or the broker closed its channel, lets an applier update
// the clients' view and show the method's own answer.

// chanOp is an op that sends one method on a channel. The drivers wrap
// the errors (simErr, amqpErr); the reply carries what the -ok answered.
type chanOp interface {
	Op
	onChannel
	runSim(ch *sim.Channel) (reply, error)
	// runAMQP gets the driver for the run's name prefix (p, unp) and the
	// names to delete at the end.
	runAMQP(d *amqpDriver, ch *amqp.Channel) (reply, error)
}

// adminOp is an operator step (policies, operator policies, users,
// permissions) on the vhost "/", which AMQP 0-9-1 cannot take.
type adminOp interface {
	Op
	runSim(b *sim.Broker) error
	// runCtl runs it on a broker through rabbitmqctl (rabbitmqctl.go), with
	// the run's prefix on the names.
	runCtl(d *amqpDriver) error
}

// runnerOp is an op the runner lets run itself. ch is the channel the op
// names (onChannel), nil for none. It returns the lines the step shows
// before the broker's pushes, the reply for apply, and an error as a
// driver's: errRefused (the runner shows "! CH is closed"), errProtocol
// (a close among the pushes shows it), errNotSent (the lines say why), or
// any other, which stops the run.
type runnerOp interface {
	Op
	run(r *runner, ch *rchan) ([]string, reply, error)
}

// onChannel is an op that names the channel it runs on; the parser
// checks that an earlier step opened it.
type onChannel interface {
	channel() string
}

// namer is an op that opens or closes a connection or a channel: it
// checks the names it uses itself (names.check).
type namer interface {
	checkNames(n *names) string
}

// closer is an op that closes a channel or a connection (close): the
// runner refuses it when it closes a channel the client never opened,
// and names what it closes when the client refuses it.
type closer interface {
	closes() string
}

// applier is an op that changes the clients' view (what they hold,
// their consumers and channels) once the broker accepted it, or has an
// answer of its own to show (declare-ok, get-ok, purge-ok ...): apply
// returns those lines.
type applier interface {
	apply(r *runner, ch *rchan, rep reply) []string
}

// silent marks an op after which a broker pushes nothing of its own
// accord: a driver against a real broker need not watch for a quiet
// window after it (waits).
type silent interface {
	silent()
}

// channelOf returns the channel an operation runs on, or "".
func channelOf(op Op) string {
	if o, ok := op.(onChannel); ok {
		return o.channel()
	}
	return ""
}

// line joins words, dropping empty ones.
func line(words ...string) string {
	out := words[:0:0]
	for _, w := range words {
		if w != "" {
			out = append(out, w)
		}
	}
	return strings.Join(out, " ")
}

func flagIf(on bool, name string) string {
	if on {
		return name
	}
	return ""
}
