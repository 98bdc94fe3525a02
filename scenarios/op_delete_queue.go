package scenarios

import (
	"fmt"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// DeleteQueue is queue.delete: "delete-queue ch1 orders if-empty".
type DeleteQueue struct {
	Channel, Queue    string
	IfUnused, IfEmpty bool
}

func init() {
	register(&verb{name: "delete-queue", usage: "delete-queue CHANNEL QUEUE [if-unused] [if-empty]", minPos: 2, maxPos: 2,
		flags: []string{"if-unused", "if-empty"}, method: protocol.QueueDelete,
		build: func(a *argSet) (Op, error) {
			return DeleteQueue{Channel: a.str(0), Queue: a.str(1), IfUnused: a.flags["if-unused"], IfEmpty: a.flags["if-empty"]}, nil
		},
		fromCall: func(w *traceWriter, e sim.Event, ch string) Op {
			do, _ := e.Options.(sim.QueueDeleteOptions)
			return DeleteQueue{Channel: ch, Queue: e.Queue, IfUnused: do.IfUnused, IfEmpty: do.IfEmpty}
		}})
}

func (DeleteQueue) isOp()             {}
func (o DeleteQueue) channel() string { return o.Channel }

// String returns the DeleteQueue step line.
func (o DeleteQueue) String() string {
	return line("delete-queue", word(o.Channel), word(o.Queue), flagIf(o.IfUnused, "if-unused"), flagIf(o.IfEmpty, "if-empty"))
}

func (o DeleteQueue) runSim(ch *sim.Channel) (reply, error) {
	n, err := ch.QueueDelete(o.Queue, sim.QueueDeleteOptions{IfUnused: o.IfUnused, IfEmpty: o.IfEmpty})
	return reply{count: n}, err
}

func (o DeleteQueue) runAMQP(d *amqpDriver, ch *amqp.Channel) (reply, error) {
	n, err := ch.QueueDelete(d.p(o.Queue), o.IfUnused, o.IfEmpty, false)
	return reply{count: n}, err
}

// apply shows the delete-ok. What the clients held from the queue is no
// longer the queue's to count unacked.
func (o DeleteQueue) apply(r *runner, ch *rchan, rep reply) []string {
	q := o.Queue
	if q == "" {
		q = ch.lastQueue
	}
	for _, c := range r.chans {
		for _, h := range c.held {
			if h.Queue == q {
				h.orphan = true
			}
		}
	}
	return []string{fmt.Sprintf("delete-ok %d", rep.count)}
}
