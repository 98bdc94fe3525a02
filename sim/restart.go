package sim

import (
	"maps"
	"slices"

	"github.com/amqpsim/amqpsim/protocol"
)

// ShutdownText is the text of the connection.close a RabbitMQ node sends
// every client when it stops: rabbit_reader's handle_other({'EXIT',
// Parent, Reason}), with the supervisor's Reason 'shutdown', formats
// "broker forced connection closure with reason '~w'" and closes with
// 320 CONNECTION_FORCED.
const ShutdownText = "broker forced connection closure with reason 'shutdown'"

// Restart stops and starts the broker, as a RabbitMQ node restart does, in
// one step: every connection is closed with 320 CONNECTION_FORCED and
// ShutdownText (its channels' unacked deliveries requeued, its exclusive
// queues deleted); then what a restart does not keep goes: non-durable
// queues and exchanges, with their bindings, and, in the durable classic
// queues, every message that is not persistent (delivery mode 2); quorum
// queues keep all their messages. Durable queues
// and exchanges, their bindings and their persistent messages stay, in
// order, with their redelivered flags, and a durable queue's x-expires
// starts again from the restart, as a recovered RabbitMQ queue's does. The
// virtual clock, users, vhosts
// and the names generated so far carry on.
//
// A shell closes the transports of the closed connections (amqptest's
// Restart also refuses dials for a while, as a node does while it boots).
func (b *Broker) Restart() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.record(Event{Kind: EventRestart})
	err := protocol.Errorf(protocol.ConnectionForced, protocol.Method{}, "%s", ShutdownText)
	for _, c := range slices.Clone(b.conns) {
		c.fail(err)
	}
	b.flush()
	for _, vname := range slices.Sorted(maps.Keys(b.vhosts)) {
		v := b.vhosts[vname]
		for _, n := range slices.Sorted(maps.Keys(v.queues)) {
			q := v.queues[n]
			if !q.Options().Durable {
				b.deleteQueue(q)
				continue
			}
			// The queue's type drops what a restart does not keep (a
			// classic queue's transient messages).
			q.Restart(false)
			// The recovered queue is a new process: its init runs
			// process_args_policy, whose init_exp restarts x-expires
			// from now (rabbit_amqqueue_process).
			q.Touch()
		}
		for _, x := range sortedExchanges(v) {
			if !x.durable && v.exchanges[x.name] == x {
				b.deleteExchange(v, x)
			}
		}
	}
	b.flush()
}
