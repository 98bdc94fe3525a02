package scenarios

import (
	"strconv"

	"github.com/amqpsim/amqpsim/sim"
)

// PauseNode hangs a node of the cluster: "pause-node 2". Its Erlang VM
// stops (SIGSTOP on a real cluster): its sockets stay open and silent,
// and the other nodes notice only through their own timeouts (a quorum
// queue's election, net_ticktime). ResumeNode lets it run again: "resume-node
// 2". On a real cluster they run the cluster's pause-node and resume-node
// commands; the settling check does not ask a paused node, which would not
// answer.
type PauseNode struct{ Node int }

// ResumeNode lets a node paused by PauseNode run again.
type ResumeNode struct{ Node int }

func init() {
	register(&verb{name: "pause-node", usage: "pause-node N", minPos: 1, maxPos: 1, what: "hanging a node",
		build: func(a *argSet) (Op, error) {
			n, err := nodeNumber(a, 0)
			return PauseNode{Node: n}, err
		}})
	register(&verb{name: "resume-node", usage: "resume-node N", minPos: 1, maxPos: 1, what: "resuming a hung node",
		build: func(a *argSet) (Op, error) {
			n, err := nodeNumber(a, 0)
			return ResumeNode{Node: n}, err
		}})
}

func (PauseNode) isOp()        {}
func (PauseNode) clusterStep() {}

// String returns the PauseNode step line.
func (o PauseNode) String() string { return line("pause-node", strconv.Itoa(o.Node)) }

func (o PauseNode) nodes() []int               { return []int{o.Node} }
func (o PauseNode) runSim(b *sim.Broker) error { return b.PauseNode(o.Node) }
func (o PauseNode) args() []string             { return []string{"pause-node", strconv.Itoa(o.Node)} }
func (o PauseNode) change(v *clusterView)      { v.paused[o.Node] = true }

func (o PauseNode) run(r *runner, _ *rchan) ([]string, reply, error) {
	return nil, reply{}, r.d.fault(o)
}

func (ResumeNode) isOp()        {}
func (ResumeNode) clusterStep() {}

// String returns the ResumeNode step line.
func (o ResumeNode) String() string { return line("resume-node", strconv.Itoa(o.Node)) }

func (o ResumeNode) nodes() []int               { return []int{o.Node} }
func (o ResumeNode) runSim(b *sim.Broker) error { return b.ResumeNode(o.Node) }
func (o ResumeNode) args() []string             { return []string{"resume-node", strconv.Itoa(o.Node)} }
func (o ResumeNode) change(v *clusterView)      { delete(v.paused, o.Node) }

func (o ResumeNode) run(r *runner, _ *rchan) ([]string, reply, error) {
	return nil, reply{}, r.d.fault(o)
}
