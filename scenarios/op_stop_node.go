package scenarios

import (
	"strconv"

	"github.com/amqpsim/amqpsim/sim"
)

// StopNode stops a node of the cluster gracefully, as rabbitmqctl stop
// does: "stop-node 2". Its connections get connection.close 320
// CONNECTION_FORCED; the leaderships it held move to other nodes; the
// classic queues whose home it is stop (their consumers elsewhere are
// cancelled). On a real cluster it runs the cluster's stop-node command and
// waits until the cluster has settled.
type StopNode struct{ Node int }

func init() {
	register(&verb{name: "stop-node", usage: "stop-node N", minPos: 1, maxPos: 1, what: "stopping a node",
		build: func(a *argSet) (Op, error) {
			n, err := nodeNumber(a, 0)
			return StopNode{Node: n}, err
		}})
}

func (StopNode) isOp()        {}
func (StopNode) clusterStep() {}

// String returns the StopNode step line.
func (o StopNode) String() string { return line("stop-node", strconv.Itoa(o.Node)) }

func (o StopNode) nodes() []int               { return []int{o.Node} }
func (o StopNode) runSim(b *sim.Broker) error { return b.StopNode(o.Node) }
func (o StopNode) args() []string             { return []string{"stop-node", strconv.Itoa(o.Node)} }
func (o StopNode) change(v *clusterView)      { v.down[o.Node] = "stopped" }

func (o StopNode) run(r *runner, _ *rchan) ([]string, reply, error) {
	return nil, reply{}, r.downNode(o, o.Node)
}

// nodeNumber reads positional word i as a node number.
func nodeNumber(a *argSet, i int) (int, error) {
	n, err := strconv.Atoi(a.str(i))
	if err != nil || n < 1 {
		return 0, a.errAt(a.pos[i], "expected a node number (1, 2, ...), got %q", a.str(i))
	}
	return n, nil
}
