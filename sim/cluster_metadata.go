package sim

import (
	"time"

	"github.com/amqpsim/amqpsim/cluster"
	"github.com/amqpsim/amqpsim/protocol"
)

// Writes to the metadata store on a node without a majority. RabbitMQ 4.3
// keeps queues, exchanges and bindings in Khepri, a Raft cluster of every
// node: a write is a Raft command, which a node that does not reach a
// majority cannot commit, and it fails after Khepri's timeout
// (MetadataTimeout), each method with its own text, closing the
// connection (541). Reads are local: a declaration of what exists, a
// lookup, an exclusivity check answer at once
// (partition-metadata-writes.txt, 4.3.6).

// metadataWrite fails method m, which makes writes writes to the metadata
// store one after the other, on a node without a majority: the channel
// waits writes × MetadataTimeout, then closes the connection with 541 and
// text. It is
// nil on a node with a majority, and on a broker of one node. A heal
// before the timeout (a write Khepri could then commit) is not measured:
// the write fails all the same.
func (ch *Channel) metadataWrite(m protocol.Method, writes int, text string) error {
	b := ch.b
	if !b.clustered() || b.topo.Majority(ch.conn.node) {
		return nil
	}
	return ch.failLater(time.Duration(writes)*MetadataTimeout, nil, protocol.Errorf(protocol.InternalError, m, "%s", text))
}

// checkMetadata refuses, after MetadataTimeout, a new queue declared on a
// node that does not reach a majority of the cluster.
//
// Whether RabbitMQ's metadata store commits the write once a majority is
// back varies: it did in 4 of 4 declares after two nodes stopped in a
// first measurement, in 1 of 3 in the recordings of
// metadata-no-majority.txt, and in none of 3 on a partition's minority
// side (partition-metadata-minority.txt). The simulator does not commit
// it.
func (ch *Channel) checkMetadata(q *brokerQueue) error {
	return ch.metadataWrite(protocol.QueueDeclare, 1, q.caps.DeclareTimedOut(ch.b.topo.Name(ch.conn.node)))
}

// checkExchangeDeclare refuses a new exchange on a node without a
// majority (rabbit_channel, exchange.declare: "failed to declare ~ts
// because the operation timed out").
func (ch *Channel) checkExchangeDeclare(name string) error {
	return ch.metadataWrite(protocol.ExchangeDeclare, 1,
		"failed to declare "+exchangeResource(name, ch.conn.vhost.name)+" because the operation timed out")
}

// checkExchangeDelete refuses exchange.delete on a node without a
// majority, whether the exchange exists or not: rabbit_exchange:delete/3
// first marks the deletion in progress (a runtime parameter, a write whose
// timeout it ignores), then deletes in a transaction, which times out
// too: two timeouts (measured: 20-70 s, partition-metadata-writes.txt;
// RS@v4.3.5 rabbit_exchange.erl delete/3).
func (ch *Channel) checkExchangeDelete(name string) error {
	return ch.metadataWrite(protocol.ExchangeDelete, 2,
		"failed to delete "+exchangeResource(name, ch.conn.vhost.name)+" due to a timeout")
}

// checkBindingWrite refuses a binding's addition or removal on a node
// without a majority, after its checks: rabbit_db_binding's create and
// delete are transactions, even for a binding that exists already or
// does not (rabbit_channel:binding_action, "Could not ~s binding due to
// timeout"; RS@v4.3.5 rabbit_db_binding.erl).
func (ch *Channel) checkBindingWrite(m protocol.Method) error {
	action := "add"
	if m == protocol.QueueUnbind || m == protocol.ExchangeUnbind {
		action = "remove"
	}
	return ch.metadataWrite(m, 1, "Could not "+action+" binding due to timeout")
}

// checkQueueDelete deletes classic queue q from a node without a
// majority as RabbitMQ's queue process does (rabbit_amqqueue_process
// terminate_delete/4): the process deletes its messages and ends, then
// removing the queue's record from the metadata store times out, and
// queue.delete fails with 541. The record stays, with no process behind
// it: the queue's consumers are cancelled, and every operation on it from
// any node waits, then answers 404 "... due to timeout", as for a queue
// whose home crashed, even after a heal (partition-metadata-writes.txt,
// 4.3.6), until its node starts again. It is nil, having done nothing,
// on a node with a majority, and for a queue it does not apply to (a
// replicated queue, a classic queue out of reach: not measured).
func (ch *Channel) checkQueueDelete(q *brokerQueue) error {
	b := ch.b
	if !b.clustered() || q.cluster.Replicated || b.topo.Majority(ch.conn.node) || b.reach(q, ch.conn.node) != cluster.Reachable {
		return nil
	}
	b.loseQueue(q, func(*Channel) bool { return true })
	_, _ = q.Purge() // a classic queue's purge does not fail
	q.cluster.Down = NodeKilled
	return ch.metadataWrite(protocol.QueueDelete, 1, "The operation to delete the queue from the metadata store timed out")
}
