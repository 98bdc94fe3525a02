package scenarios

import (
	"fmt"
	"strconv"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// Qos is basic.qos: "qos ch1 2", "qos ch1 10 global", "qos ch1 0 size=1024".
type Qos struct {
	Channel string
	Count   int
	Size    int
	Global  bool
}

func init() {
	register(&verb{name: "qos", usage: "qos CHANNEL COUNT [global] [size=BYTES]", minPos: 2, maxPos: 2, flags: []string{"global"}, options: []string{"size"},
		method: protocol.BasicQos,
		build: func(a *argSet) (Op, error) {
			n, err := strconv.ParseUint(a.str(1), 10, 16)
			if err != nil {
				return nil, a.errAt(a.pos[1], "expected a prefetch count 0..65535, got %q", a.str(1))
			}
			size, _, err := a.intOpt("size", 32)
			if err != nil {
				return nil, err
			}
			return Qos{Channel: a.str(0), Count: int(n), Size: size, Global: a.flags["global"]}, nil
		},
		fromCall: func(w *traceWriter, e sim.Event, ch string) Op {
			return Qos{Channel: ch, Count: e.Count, Global: e.Global}
		}})
}

func (Qos) isOp()             {}
func (o Qos) channel() string { return o.Channel }

// String returns the Qos step line.
func (o Qos) String() string {
	size := ""
	if o.Size != 0 {
		size = fmt.Sprintf("size=%d", o.Size)
	}
	return line("qos", word(o.Channel), fmt.Sprint(o.Count), flagIf(o.Global, "global"), size)
}

func (o Qos) runSim(ch *sim.Channel) (reply, error) {
	return reply{}, ch.Qos(o.Count, o.Size, o.Global)
}

func (o Qos) runAMQP(_ *amqpDriver, ch *amqp.Channel) (reply, error) {
	return reply{}, ch.Qos(o.Count, o.Size, o.Global)
}

// apply keeps the prefetch the channel's next consumers get (global:
// the channel's own limit).
func (o Qos) apply(_ *runner, ch *rchan, _ reply) []string {
	if o.Global {
		ch.global = o.Count
	} else {
		ch.prefetch, ch.global = o.Count, 0
	}
	return nil
}
