package scenarios

import (
	"strconv"

	"github.com/amqpsim/amqpsim/sim"
)

// KillNode crashes a node of the cluster: "kill-node 2". Its connections
// end without a frame ("c2 <- connection dropped"); the other nodes see
// it down at once. On a real cluster it runs the cluster's kill-node
// command (SIGKILL to the node's Erlang VM) and waits until the cluster
// has settled.
type KillNode struct{ Node int }

func init() {
	register(&verb{name: "kill-node", usage: "kill-node N", minPos: 1, maxPos: 1, what: "crashing a node",
		build: func(a *argSet) (Op, error) {
			n, err := nodeNumber(a, 0)
			return KillNode{Node: n}, err
		}})
}

func (KillNode) isOp()        {}
func (KillNode) clusterStep() {}

// String returns the KillNode step line.
func (o KillNode) String() string { return line("kill-node", strconv.Itoa(o.Node)) }

func (o KillNode) nodes() []int               { return []int{o.Node} }
func (o KillNode) runSim(b *sim.Broker) error { return b.KillNode(o.Node) }
func (o KillNode) args() []string             { return []string{"kill-node", strconv.Itoa(o.Node)} }
func (o KillNode) change(v *clusterView)      { v.down[o.Node] = "killed" }

func (o KillNode) run(r *runner, _ *rchan) ([]string, reply, error) {
	return nil, reply{}, r.downNode(o, o.Node)
}
