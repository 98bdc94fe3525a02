package sim

import "github.com/amqpsim/amqpsim/cluster"

// A stream across a cut (queue.Caps.LosesCutOffSide). Its leader's
// writer takes the publishes of every node, and each consumer reads its
// own node's replica. On the side of a cut without a majority and without
// the leader (measured on a 4.3.6 cluster, partition-stream.txt, 4 runs of
// 4):
//
//   - a publish is sent to the leader across the cut and lost: never
//     stored, never confirmed, not even after the heal (holdPublish);
//   - the consumers of the time read nothing more, neither what the
//     majority side stored during the cut nor after the heal, and stay
//     (strandReaders); a consumer that attaches after the heal reads
//     everything stored (partition-stream-consume-at-heal.txt).
//
// Not measured: the side that keeps the old leader (its consumers are
// left reading), a majority lost to stopped nodes rather than a cut.

// strandReaders strands the consumers of q on the nodes a partition cut
// off from its leader and from the majority.
func (b *Broker) strandReaders(q *brokerQueue) {
	if !q.caps.LosesCutOffSide {
		return
	}
	for _, cc := range q.Consumers() {
		if cs := cc.Owner(); b.reach(q, cs.ch.conn.node) == cluster.NoLeader {
			cs.stranded = true
		}
	}
}
