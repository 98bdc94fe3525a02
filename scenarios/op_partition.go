package scenarios

import (
	"strconv"

	"github.com/amqpsim/amqpsim/sim"
)

// Partition cuts a node off from the others: "partition 3". Both sides
// see the other side's nodes down, but no connection closes: every node
// keeps serving its clients. heal undoes it. On a real cluster it runs the
// cluster's partition command (which refuses the Erlang distribution's
// links between the node and the others) and waits until the cluster has
// settled.
type Partition struct{ Node int }

func init() {
	register(&verb{name: "partition", usage: "partition N", minPos: 1, maxPos: 1, what: "a network partition",
		build: func(a *argSet) (Op, error) {
			n, err := nodeNumber(a, 0)
			return Partition{Node: n}, err
		}})
}

func (Partition) isOp()        {}
func (Partition) clusterStep() {}

// String returns the Partition step line.
func (o Partition) String() string { return line("partition", strconv.Itoa(o.Node)) }

func (o Partition) nodes() []int               { return []int{o.Node} }
func (o Partition) runSim(b *sim.Broker) error { return b.Partition([]int{o.Node}) }
func (o Partition) args() []string             { return []string{"partition", strconv.Itoa(o.Node)} }
func (o Partition) change(v *clusterView)      { v.cut = []int{o.Node} }

func (o Partition) run(r *runner, _ *rchan) ([]string, reply, error) {
	return nil, reply{}, r.partition(o, o.Node)
}
