package sim

import "slices"

// NodeEventKind says what changed among the cluster's nodes.
type NodeEventKind uint8

const (
	// NodeDown: node Node stopped or crashed (State says which); it
	// refuses new connections until it starts.
	NodeDown NodeEventKind = iota + 1
	// NodeUp: node Node started again.
	NodeUp
	// NodesPartitioned: the cluster was cut into Sides.
	NodesPartitioned
	// NodesHealed: the partition ended.
	NodesHealed
)

// String returns "down", "up", "partitioned" or "healed".
func (k NodeEventKind) String() string {
	switch k {
	case NodeDown:
		return "down"
	case NodeUp:
		return "up"
	case NodesPartitioned:
		return "partitioned"
	case NodesHealed:
		return "healed"
	}
	return "NodeEventKind(?)"
}

// NodeEvent is a change among the cluster's nodes: an output of the
// broker, as the pushes to a connection are, for what serves the nodes
// (the wire server's listeners, one per node) to follow.
type NodeEvent struct {
	// Seq numbers the broker's node events from 1, in order.
	Seq  uint64
	Kind NodeEventKind
	// Node is the node that went down or came up; State how it went down
	// (NodeStopped or NodeKilled).
	Node  int
	State NodeState
	// Sides are a partition's groups, as Partition was given them.
	Sides [][]int
}

// keptNodeEvents is how many node events the broker keeps for
// NodeEvents: a follower further behind reads Nodes instead.
const keptNodeEvents = 256

// NodeEvents returns the node events after seq, oldest first (the broker
// keeps the last 256; 0 asks for all of those), and a channel that is
// closed at the next one: a shell that serves the nodes waits on it, and
// asks again, without polling the broker.
func (b *Broker) NodeEvents(after uint64) ([]NodeEvent, <-chan struct{}) {
	b.mu.Lock()
	defer b.mu.unlockView()
	i, _ := slices.BinarySearchFunc(b.nodeEvents, after+1, func(e NodeEvent, seq uint64) int {
		switch {
		case e.Seq < seq:
			return -1
		case e.Seq > seq:
			return 1
		}
		return 0
	})
	if b.nodeNext == nil {
		b.nodeNext = make(chan struct{})
	}
	return slices.Clone(b.nodeEvents[i:]), b.nodeNext
}

// nodeChanged records a change of the nodes: in the trace, with its
// reason, and as a node event; it wakes the followers. Caller holds the
// lock.
func (b *Broker) nodeChanged(e NodeEvent, reason string) {
	b.record(Event{Kind: EventNode, Reason: reason, Node: e.Node, Nodes: e.Sides})
	b.nodeSeq++
	e.Seq = b.nodeSeq
	if len(b.nodeEvents) == keptNodeEvents {
		b.nodeEvents = append(b.nodeEvents[:0], b.nodeEvents[1:]...)
	}
	b.nodeEvents = append(b.nodeEvents, e)
	if b.nodeNext != nil {
		close(b.nodeNext)
		b.nodeNext = nil
	}
}
