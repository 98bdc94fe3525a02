package scenarios

import (
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// Tx is tx.select ("tx ch1"), tx.commit ("commit ch1") or tx.rollback
// ("rollback ch1").
type Tx struct {
	Channel string
	Method  TxMethod
}

// TxMethod says which tx method a Tx step is.
type TxMethod uint8

// The tx methods.
const (
	TxSelect TxMethod = iota
	TxCommit
	TxRollback
)

var (
	txVerbs   = [...]string{TxSelect: "tx", TxCommit: "commit", TxRollback: "rollback"}
	txMethods = [...]protocol.Method{TxSelect: protocol.TxSelect, TxCommit: protocol.TxCommit, TxRollback: protocol.TxRollback}
)

func init() {
	for m := range txVerbs {
		register(&verb{name: txVerbs[m], usage: txVerbs[m] + " CHANNEL", minPos: 1, maxPos: 1, method: txMethods[m],
			build:    func(a *argSet) (Op, error) { return Tx{Channel: a.str(0), Method: TxMethod(m)}, nil },
			fromCall: func(w *traceWriter, e sim.Event, ch string) Op { return Tx{Channel: ch, Method: TxMethod(m)} }})
	}
}

func (Tx) isOp()             {}
func (o Tx) channel() string { return o.Channel }

// String returns the Tx step line.
func (o Tx) String() string { return line(txVerbs[o.Method], word(o.Channel)) }

// call runs the client method of o's tx method.
func (o Tx) call(sel, commit, rollback func() error) error {
	return [...]func() error{TxSelect: sel, TxCommit: commit, TxRollback: rollback}[o.Method]()
}

func (o Tx) runSim(ch *sim.Channel) (reply, error) {
	return reply{}, o.call(ch.Tx, ch.TxCommit, ch.TxRollback)
}

func (o Tx) runAMQP(_ *amqpDriver, ch *amqp.Channel) (reply, error) {
	return reply{}, o.call(ch.Tx, ch.TxCommit, ch.TxRollback)
}

// apply: in a transaction the channel's settlements wait for the commit,
// which applies them, or the rollback, which drops them.
func (o Tx) apply(r *runner, ch *rchan, _ reply) []string {
	switch o.Method {
	case TxSelect:
		ch.tx = true
	case TxCommit:
		kept := ch.held[:0]
		for _, h := range ch.held {
			if h.staged != "" {
				h.Until, h.UntilAt, h.How = r.step, r.now, h.staged
			} else {
				kept = append(kept, h)
			}
		}
		ch.held = kept
	case TxRollback:
		for _, h := range ch.held {
			h.staged = ""
		}
	}
	return nil
}
