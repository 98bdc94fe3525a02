package sim

import (
	"fmt"
	"hash/fnv"
	"maps"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/amqpsim/amqpsim/cluster"
	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/queue"
)

// What a cluster's faults do to queues (the rules in cluster.go): which
// channels lose a classic queue, how a queue answers a client on a node,
// leader elections, publishes held for a leader, placement.

// eachQueue calls f for every queue, vhosts and queues in name order.
func (b *Broker) eachQueue(f func(q *brokerQueue)) {
	for _, vname := range slices.Sorted(maps.Keys(b.vhosts)) {
		v := b.vhosts[vname]
		for _, name := range slices.Sorted(maps.Keys(v.queues)) {
			if q, ok := v.queues[name]; ok {
				f(q)
			}
		}
	}
}

// cutLinks cancels, for every classic queue, the consumers and unacked
// deliveries of the channels on nodes that no longer reach its home: the
// queue sees their channels go down, and they see the queue go.
func (b *Broker) cutLinks() {
	b.eachQueue(func(q *brokerQueue) {
		if q.cluster.Replicated || q.cluster.Down != NodeRunning {
			return
		}
		home := q.cluster.Leader
		b.loseQueue(q, func(ch *Channel) bool { return !b.topo.Reaches(ch.conn.node, home) })
	})
}

// loseQueue is the channels for which lost is true losing classic queue
// q: their consumers of it are cancelled (basic.cancel, to clients that
// take it), and their unacked deliveries of it return to the queue, where
// a later settlement of them does nothing. It returns those messages.
func (b *Broker) loseQueue(q *brokerQueue, lost func(ch *Channel) bool) (returned []*queue.Message) {
	for _, c := range b.conns {
		for _, ch := range c.channelsByID() {
			if ch.closed != nil || !lost(ch) {
				continue
			}
			if ms := ch.forgetQueue(q); len(ms) > 0 {
				q.Return(ms)
				returned = append(returned, ms...)
			}
		}
	}
	for _, cc := range slices.Clone(q.Consumers()) {
		if lost(cc.Owner().ch) {
			q.cancelConsumer(cc)
		}
	}
	b.markDirty(q)
	return returned
}

// forgetQueue marks the channel's unacked deliveries of q as lost (their
// settlement is then ignored) and returns their messages, oldest first.
func (ch *Channel) forgetQueue(q *brokerQueue) []*queue.Message {
	var ms []*queue.Message
	var last uint64
	for _, d := range ch.core.Deliveries() {
		if d.Ref.q == q && !ch.lostDelivery(d.Ref, d.Tag) {
			ms = append(ms, d.Ref.m)
			last = d.Tag
		}
	}
	if len(ms) == 0 {
		return nil
	}
	if ch.lost == nil {
		ch.lost = map[*brokerQueue]uint64{}
	}
	ch.lost[q] = last
	return ms
}

// lostDelivery reports whether the delivery with tag is one the channel
// lost with its queue (forgetQueue).
func (ch *Channel) lostDelivery(r delivery, tag uint64) bool {
	if len(ch.lost) == 0 {
		// Most channels lost nothing: no map lookup on every settlement.
		return false
	}
	last, ok := ch.lost[r.q]
	return ok && tag <= last
}

// topologyChanged re-evaluates every queue after a change of the nodes:
// quorum queues and streams whose leader the majority side lost hand
// leadership over or elect one (cluster.Topology.Leadership), publishes
// held for them are released where they are reachable again, and every
// queue dispatches (consumers on unreachable nodes are skipped by
// CanSend).
func (b *Broker) topologyChanged(change cluster.Change) {
	b.eachQueue(func(q *brokerQueue) {
		cq := &q.cluster
		if !cq.Replicated {
			// A hung home's publishes and consumers (cluster_pause.go).
			b.releaseHeld(q)
			b.resumeReached(q)
			b.markDirty(q)
			return
		}
		cq.Queue = b.topo.Unstale(cq.Queue)
		if change == cluster.Partitioned {
			b.strandReaders(q)
		}
		switch b.topo.Leadership(cq.Queue, change) {
		case cluster.HandOver:
			b.succeed(q)
		case cluster.Elect:
			cq.Electing = true
			if cq.election == nil {
				cq.election = newTimer(func() { b.elected(q) })
			}
			b.schedule(cq.election, b.now.Add(cluster.ElectionDelay(change)))
		case cluster.Cancel:
			b.stop(cq.election)
			cq.Electing = false
		}
		b.releaseHeld(q)
		b.resumeReached(q)
		b.markDirty(q)
	})
	b.endWaits()
	b.flush()
}

// elected ends q's leader election: a node of the majority side leads,
// if a side still has one.
func (b *Broker) elected(q *brokerQueue) {
	cq := &q.cluster
	cq.Electing = false
	if q.deleted {
		return
	}
	b.succeed(q)
	b.releaseHeld(q)
	b.resumeReached(q)
	b.markDirty(q)
	b.endWaits()
}

// succeed gives replicated queue q the leader its election chose. A
// leader cut off goes on leading for its side of the cut
// (cluster.Queue.Stale), with the counts it had: nothing it leads can
// change while it cannot commit.
func (b *Broker) succeed(q *brokerQueue) {
	cq := &q.cluster
	cq.Queue = b.topo.Succeed(cq.Queue, b.topo.NewLeader(cq.Queue, b.leaderPick(q)))
	if cq.Stale != 0 {
		cq.staleInfo = QueueInfo{Name: q.Name(), Ready: q.Ready(), Consumers: q.ConsumerCount()}
	}
}

// leaderPick is the pick of q's next election's leader
// (cluster.Topology.NewLeader): a function of Config.Seed, the queue and
// how many elections it has had, drawn from a source of its own, so that
// what else the broker draws from its random source (generated names, a
// limiter's resume), which depends on what other clients did and in
// which order, cannot change it.
func (b *Broker) leaderPick(q *brokerQueue) func(k int) int {
	return func(k int) int {
		q.cluster.elections++
		h := fnv.New64a()
		fmt.Fprintf(h, "%s\x00%s\x00%d", q.Vhost(), q.Name(), q.cluster.elections)
		return rand.New(rand.NewPCG(b.cfg.Seed, h.Sum64())).IntN(k)
	}
}

// resumeReached resumes the consumers of q on the nodes that reach it
// now. While its leader was out of their reach (or hung), CanSend
// refused them, which suspends their channel's group in the queue's
// rotation until something resumes it: without this, a consumer cut off,
// or one that settled a delivery during an election, would never be
// offered a message again. A group suspended by its channel's limiter
// is suspended again at its next turn.
func (b *Broker) resumeReached(q *brokerQueue) {
	for _, cc := range q.Consumers() {
		ch := cc.Owner().ch
		if g := ch.groups[q]; g != nil && b.reach(q, ch.conn.node) == cluster.Reachable {
			q.Resume(g)
		}
	}
}

// reach returns how q answers a client on node from.
func (b *Broker) reach(q *brokerQueue, from int) cluster.Reach {
	return b.topo.Reach(q.cluster.Queue, from)
}

// checkReach answers method m on q from ch as RabbitMQ does when q's
// leader is out of ch's reach: nil when it is in reach, an error now, or
// errRetry with the error due later (failLater).
func (ch *Channel) checkReach(q *brokerQueue, m protocol.Method) error {
	b := ch.b
	switch b.reach(q, ch.conn.node) {
	case cluster.StoppedHome:
		return protocol.Errorf(protocol.NotFound, m, "%s process is stopped by supervisor", q.Resource())
	case cluster.Lost, cluster.HungHome:
		// A hung home answers when its node runs again
		// (pause-node-classic-home.txt); how the call ends after
		// net_ticktime is not measured: as after a crash.
		return ch.failLater(QueueOperationTimeout, q, protocol.Errorf(protocol.NotFound, m,
			"failed to perform operation on %s due to timeout", q.Resource()))
	case cluster.NoLeader:
		switch m {
		case protocol.BasicGet:
			return protocol.Errorf(protocol.InternalError, m, "Cannot get a message from queue '%s': nodedown", q.Resource())
		case protocol.BasicConsume:
			return ch.failLater(QueueOperationTimeout, q, protocol.Errorf(protocol.InternalError, m,
				"failed consuming from %s %s: nodedown", q.Type(), q.Resource()))
		case protocol.QueuePurge:
			return protocol.Errorf(protocol.InternalError, protocol.Method{}, "INTERNAL_ERROR")
		}
	case cluster.LeaderOnly:
		switch m {
		case protocol.BasicGet:
			// The leader it sees cannot commit the dequeue: the call
			// times out (rabbit_fifo_client).
			return ch.failLater(QuorumCommandTimeout, q, protocol.Errorf(protocol.InternalError, m,
				"%s", getTimedOutText(q.Resource(), raftName(q), b.topo.Name(b.topo.LeaderSeenFrom(q.cluster.Queue, ch.conn.node)))))
		case protocol.BasicConsume:
			return ch.failLater(QueueOperationTimeout, q, protocol.Errorf(protocol.InternalError, m,
				"failed consuming from %s %s: nodedown", q.Type(), q.Resource()))
		case protocol.QueuePurge:
			return ch.failLater(MetadataTimeout, q, protocol.Errorf(protocol.InternalError, protocol.Method{}, "INTERNAL_ERROR"))
		}
	}
	return nil
}

// queueInfo is what declare-ok reports of q on the channel's node: its
// counts, or none where a replicated queue's leader is out of reach with
// no majority, as the stats query to the leader fails
// (rabbit_quorum_queue:stat/2 answers 0 and 0; partition-pause-minority.txt),
// or those a stale leader on its side had at the cut
// (partition-stale-leader.txt).
func (ch *Channel) queueInfo(q *brokerQueue) QueueInfo {
	b := ch.b
	if cq := &q.cluster; cq.Replicated {
		switch {
		case b.reach(q, ch.conn.node) == cluster.NoLeader:
			return QueueInfo{Name: q.Name()}
		case b.topo.LeaderSeenFrom(cq.Queue, ch.conn.node) == cq.Stale:
			return cq.staleInfo
		}
	}
	return QueueInfo{Name: q.Name(), Ready: q.Ready(), Consumers: q.ConsumerCount()}
}

// raftName is a quorum queue's Raft cluster name: its vhost, with "/"
// written "%2F", and its name (rabbit_quorum_queue:make_ra_name/1).
func raftName(q *brokerQueue) string {
	v := q.Vhost()
	if v == "/" {
		v = "%2F"
	}
	return v + "_" + q.Name()
}

// failLater makes the channel answer err after d, unless q answers its
// node again before (nil q: never): the channel waits in the call until
// then (channel.wait), as RabbitMQ's channel process does, retrying the
// queue (rabbit_amqqueue:with/3's retries; a quorum queue's leader, once
// found, answers). When q answers first, the call is made again and
// succeeds late (measured on 4.3.6: partition-classic-declare-healed.txt,
// partition-classic-consume-healed.txt, partition-quorum-consume-healed.txt).
func (ch *Channel) failLater(d time.Duration, q *brokerQueue, err *protocol.Error) error {
	var ends func() bool
	if q != nil {
		ends = func() bool { return ch.b.reach(q, ch.conn.node) == cluster.Reachable }
	}
	ch.wait(d, ends, func() { ch.fail(err) })
	return errRetry
}

// holdPublish keeps a message routed to replicated queue q, or to a
// classic queue whose home is hung, for when q is reachable from the
// publisher's node (none when the broker routes it itself, for the
// management API, which counts as node 1). It reports whether the message
// was held.
func (b *Broker) holdPublish(q *brokerQueue, publish func() bool) bool {
	from := b.publishingNode()
	if !q.cluster.Replicated && b.reach(q, from) != cluster.HungHome {
		return false
	}
	reached := b.reach(q, from) == cluster.Reachable
	b.registerEnqueuer(q, reached)
	if reached {
		return false
	}
	h := waitingPublish{node: from, publish: publish, ch: b.publisher}
	if b.publisher != nil && b.publisher.confirming {
		if b.heldNow == nil {
			b.heldNow = &waitingConfirm{ch: b.publisher}
		}
		b.heldNow.waiting++
		h.confirm = b.heldNow
	}
	if q.caps.LosesCutOffSide && b.reach(q, from) == cluster.NoLeader {
		// Lost: its confirm is never sent (cluster_streams.go).
		return true
	}
	q.cluster.held = append(q.cluster.held, h)
	return true
}

// publishingNode is the node of the channel whose publish is being
// routed; 1 for the broker's own publishes (the management API).
func (b *Broker) publishingNode() int {
	if b.publisher != nil {
		return b.publisher.conn.node
	}
	return 1
}

// releaseHeld publishes the messages held for q whose node reaches it now,
// in order, and sends the confirms that no longer wait.
func (b *Broker) releaseHeld(q *brokerQueue) {
	cq := &q.cluster
	kept := cq.held[:0]
	for _, h := range cq.held {
		if b.reach(q, h.node) != cluster.Reachable {
			kept = append(kept, h)
			continue
		}
		h.confirm.done(!h.publish())
	}
	clear(cq.held[len(kept):])
	cq.held = kept
}

// dropHeld forgets the publishes held for q, which is deleted. Their
// confirms are never sent and their tags stay unconfirmed: on the real
// cluster a publish held for a quorum queue that the majority side then
// deleted got no confirm, even after the heal
// (partition-held-publish-queue-deleted.txt).
func (q *brokerQueue) dropHeld() { q.cluster.held = nil }

// done tells a held publish's confirm that one of its queues took the
// message (refused, when nack): the last one sends the confirm. Nil when
// no confirm is owed.
func (c *waitingConfirm) done(nack bool) {
	if c == nil {
		return
	}
	c.nack = c.nack || nack
	if c.waiting--; c.waiting > 0 {
		return
	}
	c.ch.holding = slices.DeleteFunc(c.ch.holding, func(t uint64) bool { return t == c.tag })
	if c.ch.closed == nil {
		method := protocol.BasicAck
		if c.nack {
			method = protocol.BasicNack
		}
		c.ch.push(Push{Method: method, Delivery: Delivery{DeliveryTag: c.tag}})
	}
}

// placeQueue gives a new queue its leader (cluster.Topology.Place): the
// node of the declaring connection, or with x-queue-leader-locator
// "balanced" the node that leads fewest queues. from is 1 for queues made
// without a connection (definitions, the management API).
func (b *Broker) placeQueue(q *brokerQueue, from int) {
	locator, _ := q.Options().Args["x-queue-leader-locator"].(string)
	var led []int
	if locator == "balanced" && b.clustered() {
		led = make([]int, b.topo.Len())
		b.eachQueue(func(o *brokerQueue) { led[o.cluster.Leader-1]++ })
	}
	q.cluster.Leader = b.topo.Place(from, locator, led)
	b.placeMembers(q, from)
}

// QueueLeader returns the name of the node that leads a queue (a classic
// queue's home) and of the nodes with a member of it, for inspection as
// `rabbitmqctl list_queues name leader members` shows them.
func (b *Broker) QueueLeader(vhost, name string) (leader string, members []string, err error) {
	b.mu.Lock()
	defer b.mu.unlockView()
	v, err := b.lookupVhost(vhost)
	if err != nil {
		return "", nil, err
	}
	q, ok := v.queues[name]
	if !ok {
		return "", nil, fmt.Errorf("%w %q in vhost %q", ErrNoQueue, name, vhost)
	}
	leader, members = b.queueNodes(q)
	return leader, members, nil
}

// queueNodes returns the names of q's leader and of its members' nodes.
func (b *Broker) queueNodes(q *brokerQueue) (leader string, members []string) {
	leader = b.topo.Name(q.cluster.Leader)
	if !q.cluster.Replicated {
		return leader, []string{leader}
	}
	for n := 1; n <= b.topo.Len(); n++ {
		members = append(members, b.topo.Name(n))
	}
	return leader, members
}
