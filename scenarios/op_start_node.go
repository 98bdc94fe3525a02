package scenarios

import (
	"strconv"

	"github.com/amqpsim/amqpsim/sim"
)

// StartNode starts a stopped or killed node again: "start-node 2". The
// classic queues whose home it is recover, the quorum queues' members on
// it rejoin. On a real cluster it runs the cluster's start-node command,
// which returns once the node has booted, and waits until the cluster has
// settled.
type StartNode struct{ Node int }

func init() {
	register(&verb{name: "start-node", usage: "start-node N", minPos: 1, maxPos: 1, what: "starting a node",
		build: func(a *argSet) (Op, error) {
			n, err := nodeNumber(a, 0)
			return StartNode{Node: n}, err
		}})
}

func (StartNode) isOp()        {}
func (StartNode) clusterStep() {}

// String returns the StartNode step line.
func (o StartNode) String() string { return line("start-node", strconv.Itoa(o.Node)) }

func (o StartNode) nodes() []int               { return []int{o.Node} }
func (o StartNode) runSim(b *sim.Broker) error { return b.StartNode(o.Node) }
func (o StartNode) args() []string             { return []string{"start-node", strconv.Itoa(o.Node)} }
func (o StartNode) change(v *clusterView)      { delete(v.down, o.Node) }

func (o StartNode) run(r *runner, _ *rchan) ([]string, reply, error) {
	return nil, reply{}, r.d.fault(o)
}
