package scenarios

import (
	"errors"
	"fmt"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// ShowQueue observes a queue's counts from outside the scenario's
// connections: "queue orders". The result line is
// "orders ready=N unacked=N consumers=N", "orders not found" or
// "orders locked" (exclusive to another connection).
type ShowQueue struct{ Queue string }

func init() {
	register(&verb{name: "queue", usage: "queue QUEUE", minPos: 1, maxPos: 1, what: "the queue's counts",
		build: func(a *argSet) (Op, error) { return ShowQueue{Queue: a.str(0)}, nil }})
}

func (ShowQueue) isOp()   {}
func (ShowQueue) silent() {}

// String returns the ShowQueue step line.
func (o ShowQueue) String() string { return line("queue", word(o.Queue)) }

// run renders a queue's counts. unacked is what the scenario's clients
// hold from it; the simulator's own count is checked against it.
func (o ShowQueue) run(r *runner, _ *rchan) ([]string, reply, error) {
	q := o.Queue
	st, err := r.d.queueState(q)
	if err != nil {
		return nil, reply{}, err
	}
	if st.status != "" {
		return []string{word(q) + " " + st.status}, reply{}, nil
	}
	unacked := 0
	for _, ch := range r.chans {
		for _, h := range ch.held {
			if h.Queue == q && !h.orphan {
				unacked++
			}
		}
	}
	out := []string{fmt.Sprintf("%s ready=%d unacked=%d consumers=%d", word(q), st.ready, unacked, st.consumers)}
	if st.unacked >= 0 && st.unacked != unacked {
		out = append(out, fmt.Sprintf("! the simulator counts unacked=%d", st.unacked))
	}
	return out, reply{}, nil
}

// refusal is what the queue step shows for a passive declare refused
// with code: "not found", "locked" (exclusive to another connection), or
// "" for any other code.
func refusal(code int) string {
	switch code {
	case protocol.NotFound:
		return "not found"
	case protocol.ResourceLocked:
		return "locked"
	}
	return ""
}

// queueState looks at a queue as the broker driver does, by a passive
// declare on a connection of its own (so an exclusive queue of a scenario
// connection is "locked"), and adds the simulator's own unacked count:
// what its channels hold from the queue, the queue's unacked deliveries
// and those it timed out (sim.QueueStats.TimedOut).
func (d *simDriver) queueState(q string) (queueState, error) {
	if d.observer == nil || d.observer.Err() != nil {
		conn, err := d.b.Dial(sim.ConnectOptions{Name: "observer", Node: firstRunning(d.b)})
		if err != nil {
			return queueState{}, err
		}
		if d.observer, err = conn.Channel(); err != nil {
			return queueState{}, err
		}
	}
	info, err := d.observer.QueueDeclare(q, sim.QueueOptions{Passive: true})
	var perr *protocol.Error
	if errors.As(err, &perr) && refusal(perr.Code) != "" {
		return queueState{status: refusal(perr.Code)}, nil
	}
	if err != nil {
		return queueState{}, err
	}
	st, err := d.b.QueueStats("/", q)
	if err != nil {
		return queueState{}, err
	}
	return queueState{ready: info.Ready, consumers: info.Consumers, unacked: st.Unacked + st.TimedOut}, nil
}

// queueState observes a queue by a passive declare on the observer
// connection. A real broker does not tell a client the unacked count.
func (d *amqpDriver) queueState(q string) (queueState, error) {
	if err := d.observe(); err != nil {
		return queueState{}, err
	}
	if d.obsCh == nil || d.obsCh.IsClosed() {
		ch, err := d.observer.Channel()
		if err != nil {
			return queueState{}, err
		}
		d.obsCh = ch
	}
	info, err := d.obsCh.QueueDeclarePassive(d.p(q), false, false, false, false, nil)
	var aerr *amqp.Error
	if errors.As(err, &aerr) && refusal(aerr.Code) != "" {
		return queueState{status: refusal(aerr.Code)}, nil
	}
	if err != nil {
		return queueState{}, err
	}
	st := queueState{ready: info.Messages, consumers: info.Consumers, unacked: -1}
	if d.sim != nil {
		if st.unacked, err = d.sim.unacked(q); err != nil {
			return queueState{}, err
		}
	}
	return st, nil
}
