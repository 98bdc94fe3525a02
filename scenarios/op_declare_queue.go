package scenarios

import (
	"fmt"
	"slices"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// DeclareQueue is queue.declare: "declare-queue ch1 orders durable x-max-priority=5".
// With NoWait the client asks for no declare-ok ("nowait"), so the step
// shows nothing unless the broker closes the channel.
type DeclareQueue struct {
	Channel, Queue                          string
	Passive, Durable, Exclusive, AutoDelete bool
	NoWait                                  bool
	Args                                    protocol.Table
}

func init() {
	register(&verb{name: "declare-queue", usage: "declare-queue CHANNEL QUEUE [passive] [durable] [exclusive] [auto-delete] [nowait] [x-ARG=V...]",
		minPos: 2, maxPos: 2, flags: []string{"passive", "durable", "exclusive", "auto-delete", "nowait"}, args: true,
		method: protocol.QueueDeclare,
		build: func(a *argSet) (Op, error) {
			return DeclareQueue{Channel: a.str(0), Queue: a.str(1), Passive: a.flags["passive"], Durable: a.flags["durable"],
				Exclusive: a.flags["exclusive"], AutoDelete: a.flags["auto-delete"], NoWait: a.flags["nowait"], Args: a.args}, nil
		},
		fromCall: func(w *traceWriter, e sim.Event, ch string) Op {
			qo, _ := e.Options.(sim.QueueOptions)
			if !w.declared[e.Queue] && e.Queue != "" {
				w.declared[e.Queue] = true
				w.queues = append(w.queues, e.Queue)
			}
			return DeclareQueue{Channel: ch, Queue: e.Queue, Passive: qo.Passive, Durable: qo.Durable, Exclusive: qo.Exclusive,
				AutoDelete: qo.AutoDelete, Args: qo.Args}
		}})
}

func (DeclareQueue) isOp()             {}
func (DeclareQueue) silent()           {}
func (o DeclareQueue) channel() string { return o.Channel }

// String returns the DeclareQueue step line.
func (o DeclareQueue) String() string {
	return line(append([]string{"declare-queue", word(o.Channel), word(o.Queue),
		flagIf(o.Passive, "passive"), flagIf(o.Durable, "durable"), flagIf(o.Exclusive, "exclusive"),
		flagIf(o.AutoDelete, "auto-delete"), flagIf(o.NoWait, "nowait")}, formatArgs(o.Args)...)...)
}

func (o DeclareQueue) runSim(ch *sim.Channel) (reply, error) {
	info, err := ch.QueueDeclare(o.Queue, sim.QueueOptions{Passive: o.Passive, Durable: o.Durable, Exclusive: o.Exclusive, AutoDelete: o.AutoDelete, Args: o.Args})
	return reply{queue: info.Name, ready: info.Ready, consumers: info.Consumers}, err
}

func (o DeclareQueue) runAMQP(d *amqpDriver, ch *amqp.Channel) (reply, error) {
	var q amqp.Queue
	var err error
	if o.Passive {
		q, err = ch.QueueDeclarePassive(d.p(o.Queue), o.Durable, o.AutoDelete, o.Exclusive, o.NoWait, d.queueArgs(o.Args))
	} else {
		if o.Queue != "" {
			// Deleted at the end even if the declare fails or never
			// answers: on a cluster, one that timed out may still take
			// effect.
			d.mu.Lock()
			d.queues = append(d.queues, d.p(o.Queue))
			d.mu.Unlock()
		}
		q, err = ch.QueueDeclare(d.p(o.Queue), o.Durable, o.AutoDelete, o.Exclusive, o.NoWait, d.queueArgs(o.Args))
		if err == nil && o.Queue == "" {
			d.mu.Lock()
			d.queues = append(d.queues, q.Name)
			d.mu.Unlock()
		}
	}
	return reply{queue: d.unp(q.Name), ready: q.Messages, consumers: q.Consumers}, err
}

// apply makes the queue the channel's last ("" names it) and shows the
// declare-ok, with the queue's name when the broker chose it.
func (o DeclareQueue) apply(r *runner, ch *rchan, rep reply) []string {
	ch.lastQueue = rep.queue
	if !slices.Contains(r.res.Queues, rep.queue) {
		r.res.Queues = append(r.res.Queues, rep.queue)
	}
	if o.NoWait {
		return nil
	}
	name := ""
	if o.Queue == "" {
		name = normalizeNames(rep.queue) + " "
	}
	return []string{fmt.Sprintf("declare-ok %sready=%d consumers=%d", name, rep.ready, rep.consumers)}
}

// queueArgs converts a queue's arguments and prefixes the names they refer
// to as steps' names are: the dead-letter exchange, and the dead-letter
// routing key when it routes through the default exchange (whose keys are
// queue names).
func (d *amqpDriver) queueArgs(args protocol.Table) amqp.Table {
	t := table(args)
	if x, ok := t["x-dead-letter-exchange"].(string); ok {
		t["x-dead-letter-exchange"] = d.p(x)
		if k, ok := t["x-dead-letter-routing-key"].(string); ok && x == "" {
			t["x-dead-letter-routing-key"] = d.p(k)
		}
	}
	return t
}
