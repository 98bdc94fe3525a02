package scenarios

import (
	"errors"
	"fmt"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// Close closes a channel or a connection, by name: "close ch1", "close c1".
type Close struct{ Name string }

func init() {
	register(&verb{name: "close", usage: "close CHANNEL|CONN", minPos: 1, maxPos: 1,
		// channel.close or connection.close; a trace shows a client's
		// connection.close as a connection's event, not a call.
		method: protocol.ChannelClose, what: "close",
		build:    func(a *argSet) (Op, error) { return Close{Name: a.str(0)}, nil },
		fromCall: func(w *traceWriter, e sim.Event, ch string) Op { return Close{Name: ch} }})
}

func (Close) isOp() {}

// String returns the Close step line.
func (o Close) String() string { return line("close", word(o.Name)) }

func (o Close) closes() string { return o.Name }

func (o Close) checkNames(n *names) string {
	if !n.conns[o.Name] && n.chans[o.Name] == "" {
		return fmt.Sprintf("unknown connection or channel %q", o.Name)
	}
	return ""
}

func (o Close) run(r *runner, _ *rchan) ([]string, reply, error) {
	if c := r.byChan[o.Name]; c != nil {
		return nil, reply{}, r.d.closeChannel(o.Name)
	}
	return nil, reply{}, r.d.closeConn(o.Name)
}

func (o Close) apply(r *runner, _ *rchan, _ reply) []string {
	if c := r.byChan[o.Name]; c != nil {
		r.closeChan(c, "channel closed")
	} else if c := r.byConn[o.Name]; c != nil {
		r.closeConn(c, "connection closed")
	}
	return nil
}

// closeChannel closes a channel; the client counts one the broker queued
// (sim.ErrQueued) as closed.
func (d *simDriver) closeChannel(name string) error {
	return sent(simErr(d.chans[name].Close()))
}

// sent is a step's error, nil for one the broker queued: the client sent
// it.
func sent(err error) error {
	if errors.Is(err, errPending) {
		return nil
	}
	return err
}

func (d *simDriver) closeConn(name string) error {
	if d.conns[name] == nil {
		return errRefused
	}
	d.ended[name] = true // the client closed it: not dropped
	return sent(simErr(d.conns[name].Close()))
}

func (d *amqpDriver) closeChannel(name string) error {
	ch := d.chans[name]
	if ch.IsClosed() {
		return errRefused
	}
	return amqpErr(ch.Close())
}

func (d *amqpDriver) closeConn(name string) error {
	c := d.conns[name]
	if c == nil || c.IsClosed() {
		return errRefused
	}
	return amqpErr(c.Close())
}
