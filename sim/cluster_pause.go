package sim

import (
	"fmt"
	"time"
)

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
//     others after HungElection (Raft's failure detection: 6.2-8.3 s of
//     stalled confirms and deliveries), meanwhile holding publishes and
//     pausing deliveries.
//   - A classic queue whose home it is answers nothing: its consumers on
//     other nodes are not cancelled but get nothing, publishes to it wait
//     unconfirmed, and a call to it waits; when the node runs again the
//     publishes are enqueued and confirmed, and the calls answered.
//
// Not modelled: a hang longer than net_ticktime (60 s by default), after
// which the other nodes see the node down, as after a crash; the simulator
// keeps it hung.

// HungElection is how long a quorum queue or stream led by a hung node
// waits before a new leader is elected (measured: confirms and deliveries
// stalled 6.2-8.3 s, docs/cluster.md section 3).
const HungElection = 7 * time.Second

// PauseNode hangs node n: its connections go silent and it answers
// nothing, until ResumeNode (see above). A shell stops reading their
// transports (Connection.Hung); an in-process call on one of them is
// applied as if it had arrived before the hang. It fails for an unknown
// node, one that is down or already hung, or a broker of one node.
func (b *Broker) PauseNode(n int) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	nd, err := b.nodeAt(n)
	if err != nil {
		return err
	}
	switch {
	case len(b.nodes) == 1:
		return fmt.Errorf("sim: a broker of one node cannot hang")
	case nd.state != NodeRunning:
		return fmt.Errorf("sim: node %d (%s) is %v", n, nd.name, nd.state)
	case nd.paused:
		return fmt.Errorf("sim: node %d (%s) is hung already", n, nd.name)
	}
	nd.paused = true
	b.record(Event{Kind: EventNode, Reason: "pause", Node: n})
	b.topologyChanged(false)
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
	nd, err := b.nodeAt(n)
	if err != nil {
		return err
	}
	if !nd.paused {
		return fmt.Errorf("sim: node %d (%s) is not hung", n, nd.name)
	}
	b.resumeNode(n)
	return nil
}

// resumeNode is ResumeNode of a hung node; caller holds the lock.
func (b *Broker) resumeNode(n int) {
	b.nodes[n-1].paused = false
	b.record(Event{Kind: EventNode, Reason: "resume", Node: n})
	b.topologyChanged(false)
	for _, c := range b.conns {
		if c.node == n && c.out.pending() > 0 && c.out.notify != nil {
			c.out.notify() // what it held goes out now
		}
	}
}

// Hung reports whether the connection's node is hung (Broker.PauseNode):
// a shell then neither reads nor writes its transport, and Drain gives
// nothing.
func (c *Connection) Hung() bool {
	c.b.mu.Lock()
	defer c.b.mu.unlockView()
	return c.hung()
}

// hung is Hung; caller holds the lock.
func (c *Connection) hung() bool { return c.node > 0 && c.b.nodes[c.node-1].paused }

// leads reports whether node n can lead a quorum queue: it runs and is
// not hung.
func (b *Broker) leads(n int) bool { return b.running(n) && !b.nodes[n-1].paused }
