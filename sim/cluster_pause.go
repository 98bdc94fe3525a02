package sim

import "github.com/amqpsim/amqpsim/cluster"

// A hung node (PauseNode; SIGSTOP on a real cluster) runs, as far as the
// others know, but does nothing: measured on a 4.3.6 cluster
// (pause-node-*.txt, docs/cluster.md sections 1 and 3):
//
//   - Its connections stay open and silent: nothing is sent on them, not
//     even heartbeats, and nothing their clients send is read. Shells stop
//     reading and writing them (Connection.Hung); a client ends its
//     connection when its own heartbeat deadline passes (amqp091-go: 1.5
//     times the heartbeat after the last frame it read).
//   - The quorum queues and streams it leads elect a new leader among the
//     others after HungElection (Raft's failure detection), meanwhile
//     holding publishes and pausing deliveries; a leader running again
//     before that goes on leading.
//   - A classic queue whose home it is answers nothing: its consumers on
//     other nodes are not cancelled but get nothing, publishes to it wait
//     unconfirmed, and a call to it waits; when the node runs again the
//     publishes are enqueued and confirmed, and the calls answered.
//
// Not modelled: a hang longer than net_ticktime (60 s by default), after
// which the other nodes see the node down, as after a crash; the simulator
// keeps it hung.

// PauseNode hangs node n: its connections go silent and it answers
// nothing, until ResumeNode (see above). A shell stops reading their
// transports (Connection.Hung); an in-process call on one of them is
// applied as if it had arrived before the hang. It fails for an unknown
// node, one that is down or already hung, or a broker of one node.
func (b *Broker) PauseNode(n int) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.topo.Pause(n); err != nil {
		return err
	}
	b.nodeChanged(NodeEvent{Kind: NodeHung, Node: n}, "pause")
	b.topologyChanged(cluster.PausedNode)
	return nil
}

// ResumeNode lets hung node n run again: it sends what it owed its
// connections and takes their methods again, its classic queues take the
// publishes that waited for them and answer the calls, and its members of
// quorum queues rejoin, as followers if a new leader was elected
// meanwhile. It fails for an unknown node or one that is not hung.
func (b *Broker) ResumeNode(n int) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.topo.Check(n); err != nil {
		return err
	}
	return b.resumeNode(n)
}

// resumeNode is ResumeNode; caller holds the lock.
func (b *Broker) resumeNode(n int) error {
	if err := b.topo.Resume(n); err != nil {
		return err
	}
	b.nodeChanged(NodeEvent{Kind: NodeResumed, Node: n}, "resume")
	b.topologyChanged(cluster.ResumedNode)
	for _, c := range b.conns {
		if c.node == n && c.out.pending() > 0 && c.out.notify != nil {
			c.out.notify() // what it held goes out now
		}
	}
	return nil
}

// Hung reports whether the connection's node is hung (Broker.PauseNode):
// a shell then neither reads nor writes its transport, and Drain gives
// nothing.
func (c *Connection) Hung() bool {
	c.b.mu.Lock()
	defer c.b.mu.unlockView()
	return c.hung()
}

// hung is Hung; caller holds the lock. A broker of one node cannot hang
// (PauseNode), which every consumer's read asks first.
func (c *Connection) hung() bool { return c.b.multiNode && c.node > 0 && c.b.topo.Hung(c.node) }
