package sim

import (
	"slices"

	"github.com/amqpsim/amqpsim/channel"
	"github.com/amqpsim/amqpsim/queue"
)

// What a quorum queue's consumers (queue.Queue.RaftConsumers) live through
// on a cluster, as rabbit_fifo keeps them, measured on a 4.3.6 cluster:
//
//   - A consumer whose node crashes is kept, suspected down, with the
//     deliveries it held: still counted among the queue's consumers, given
//     nothing, its messages checked out to it, for as long as the node is
//     down (30 s and more). When the node starts again the consumer goes
//     and its messages are returned, to be redelivered with their
//     delivery count up (quorum-consumer-node-killed.txt). rabbit_fifo
//     marks the consumer suspected_down at the noconnection, and learns
//     that its channel is gone only at the nodeup.
//   - A member of the queue that never started, on a node cut off when
//     the queue was declared, stays so after the heal: a consumer on that
//     node gets consume-ok, and the queue checks messages out to it that
//     never reach it (rabbit_fifo delivers through the consumer's local
//     member), until its channel closes and they are returned
//     (partition-quorum-declared-during-cut.txt). The member starts with
//     its node (rabbit_quorum_queue:recover/2 at boot;
//     partition-quorum-declared-during-cut-restart.txt).

// suspect is a consumer of a queue whose node crashed, kept with the
// messages it held.
type suspect struct {
	node int
	cs   *Consumer
	held []*queue.Message
}

// suspect keeps, when the channel's connection ended with its node's
// crash, its consumers of queues with RaftConsumers (queue.Caps), with their
// deliveries, and returns the other deliveries. Caller is shutdown.
func (ch *Channel) suspect(ds []channel.Delivery[delivery]) []channel.Delivery[delivery] {
	if !ch.conn.crashed {
		return ds
	}
	var kept []*suspect
	for _, cs := range ch.order {
		if cs.cancelled || !cs.q.caps.RaftConsumers {
			continue
		}
		cs.suspected = true
		s := &suspect{node: ch.conn.node, cs: cs, held: cs.inTransit}
		cs.inTransit = nil
		kept = append(kept, s)
	}
	if len(kept) == 0 {
		return ds
	}
	ds = slices.DeleteFunc(ds, func(d channel.Delivery[delivery]) bool {
		for _, s := range kept {
			if d.Ref.c == s.cs.core {
				s.held = append(s.held, d.Ref.m)
				return true
			}
		}
		return false
	})
	for _, s := range kept {
		s.cs.q.cluster.suspects = append(s.cs.q.cluster.suspects, s)
	}
	return ds
}

// releaseSuspects ends the consumers kept since node n crashed: they go,
// and the messages they held return to their queues. Caller is
// startNode.
func (b *Broker) releaseSuspects(n int) {
	b.eachQueue(func(q *brokerQueue) {
		cq := &q.cluster
		if len(cq.suspects) == 0 {
			return
		}
		kept := cq.suspects[:0]
		for _, s := range cq.suspects {
			if s.node != n {
				kept = append(kept, s)
				continue
			}
			q.RemoveConsumer(s.cs.core)
			s.cs.cancelled = true
			q.Return(s.held)
			b.markDirty(q)
		}
		clear(cq.suspects[len(kept):])
		cq.suspects = kept
	})
}

// lostInTransit returns, as deliveries to return to its queue, the
// messages checked out to the consumer that never reached it.
func (cs *Consumer) lostInTransit() []channel.Delivery[delivery] {
	ds := make([]channel.Delivery[delivery], len(cs.inTransit))
	for i, m := range cs.inTransit {
		ds[i] = channel.Delivery[delivery]{Ref: delivery{q: cs.q, m: m, c: cs.core}}
	}
	cs.inTransit = nil
	return ds
}

// memberAbsent reports whether q's member on node n never started.
func (q *brokerQueue) memberAbsent(n int) bool { return q.cluster.MemberAbsent(n) }

// placeMembers records which members of new replicated queue q cannot
// start: those on the nodes its declaring node, from, does not reach.
func (b *Broker) placeMembers(q *brokerQueue, from int) {
	if b.clustered() && q.caps.RaftConsumers {
		q.cluster.Absent = b.topo.Absent(from)
	}
}

// startMembers starts node n's members of the queues that lacked one.
func (b *Broker) startMembers(n int) {
	b.eachQueue(func(q *brokerQueue) { q.cluster.Absent &^= 1 << n })
}
