package scenarios

import (
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// Flow is channel.flow: "flow ch1 on", "flow ch1 off".
type Flow struct {
	Channel string
	Active  bool
}

func init() {
	register(&verb{name: "flow", usage: "flow CHANNEL on|off", minPos: 2, maxPos: 2, method: protocol.ChannelFlow,
		build: func(a *argSet) (Op, error) {
			switch a.str(1) {
			case "on":
				return Flow{Channel: a.str(0), Active: true}, nil
			case "off":
				return Flow{Channel: a.str(0)}, nil
			}
			return nil, a.errAt(a.pos[1], "expected on or off, got %q", a.str(1))
		}})
}

func (Flow) isOp()             {}
func (o Flow) channel() string { return o.Channel }

// String returns the Flow step line.
func (o Flow) String() string {
	state := "off"
	if o.Active {
		state = "on"
	}
	return line("flow", word(o.Channel), state)
}

func (o Flow) runSim(ch *sim.Channel) (reply, error) { return reply{}, ch.Flow(o.Active) }

func (o Flow) runAMQP(_ *amqpDriver, ch *amqp.Channel) (reply, error) {
	return reply{}, ch.Flow(o.Active)
}
