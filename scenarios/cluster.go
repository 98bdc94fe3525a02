package scenarios

import (
	"embed"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"

	"github.com/amqpsim/amqpsim/sim"
)

// A scenario that runs on a cluster says so with a directive before its
// first step:
//
//	cluster 3 rmq-c1@localhost rmq-c2@localhost rmq-c3@localhost
//	cluster 3 rmq-c1@localhost rmq-c2@localhost rmq-c3@localhost partition-handling=pause_minority
//
// The number of nodes, then, optionally, their names, which the simulator
// takes as its nodes' names (sim.Config.NodeNames), so that reply texts
// that name a node ("... on node 'rmq-c3@localhost' ...") read as on the
// cluster the file was recorded on; Record writes the real cluster's names
// there when the directive has none. partition-handling is what the
// cluster was started with (scripts/rabbitmq cluster start MODE): Record
// refuses a cluster started with another; the simulator of 4.3, which has
// no partition handling strategies (as RabbitMQ 4.3 has none), ignores it.
//
// Its steps may then place connections on nodes (conn c1 node=2) and
// stop, kill, start and cut off nodes (stop-node, kill-node, start-node,
// partition, heal), and see where a queue's leader and members are
// (leader Q).

// ClusterSpec is a scenario's cluster directive.
type ClusterSpec struct {
	Nodes int      // the number of nodes
	Names []string // their names, node 1 first; none: the simulator's defaults
	// PartitionHandling is the cluster_partition_handling the cluster was
	// recorded with ("ignore", "pause_minority", "autoheal"), or "".
	PartitionHandling string
}

// String returns the directive's value: "3 rmq-c1@localhost ...".
func (c *ClusterSpec) String() string {
	w := append([]string{strconv.Itoa(c.Nodes)}, c.Names...)
	if c.PartitionHandling != "" {
		w = append(w, "partition-handling="+c.PartitionHandling)
	}
	return strings.Join(w, " ")
}

// config sets a simulator's nodes.
func (c *ClusterSpec) config(cfg *sim.Config) {
	if c == nil {
		return
	}
	cfg.Nodes = c.Nodes
	cfg.NodeNames = slices.Clone(c.Names)
}

// partitionHandlings are the values of rabbitmq.conf's
// cluster_partition_handling the directive takes.
var partitionHandlings = []string{"ignore", "pause_minority", "autoheal"}

// parseCluster reads a cluster directive's value, or returns what is
// wrong with it.
func parseCluster(rest string) (*ClusterSpec, string) {
	usage := `expected "cluster N [NAME...] [partition-handling=ignore|pause_minority|autoheal]"`
	f := strings.Fields(rest)
	if len(f) == 0 {
		return nil, usage
	}
	n, err := strconv.Atoi(f[0])
	if err != nil || n < 2 || n > 9 {
		return nil, fmt.Sprintf("expected the number of nodes (2 to 9) after cluster, got %q", f[0])
	}
	c := &ClusterSpec{Nodes: n}
	for _, w := range f[1:] {
		if v, ok := strings.CutPrefix(w, "partition-handling="); ok {
			if !slices.Contains(partitionHandlings, v) {
				return nil, fmt.Sprintf("partition-handling=%s: expected one of %s", v, strings.Join(partitionHandlings, ", "))
			}
			c.PartitionHandling = v
			continue
		}
		if strings.Contains(w, "=") {
			return nil, fmt.Sprintf("unknown option %q: %s", w, usage)
		}
		c.Names = append(c.Names, w)
	}
	if len(c.Names) != 0 && len(c.Names) != n {
		return nil, fmt.Sprintf("%d node names for %d nodes: name all of them, or none", len(c.Names), n)
	}
	return c, ""
}

// nodeRef is a step that names nodes: the parser checks them against the
// cluster directive.
type nodeRef interface {
	nodes() []int
}

// clusterStep is a step that runs only on a cluster.
type clusterStep interface {
	nodeRef
	clusterStep()
}

// checkNodes checks that the steps name nodes only in a cluster scenario,
// and only nodes it has.
func (s *Scenario) checkNodes(fail func(line, col int, format string, args ...any)) {
	for _, st := range s.Steps {
		o, ok := st.Op.(nodeRef)
		if !ok {
			continue
		}
		_, only := st.Op.(clusterStep)
		if s.Cluster == nil && (only || len(o.nodes()) > 0) {
			fail(st.Line, 1, "%s: a scenario on a cluster says so before its first step (a directive \"cluster N\")", st.Text)
			return
		}
		for _, n := range o.nodes() {
			if n > s.Cluster.Nodes {
				fail(st.Line, 1, "%s: the cluster has nodes 1 to %d", st.Text, s.Cluster.Nodes)
			}
		}
	}
}

// faultOp is a step that changes the cluster: stops, kills or starts a
// node, cuts nodes off or heals the cut. On the simulator it calls the
// broker (runSim); on a real cluster the driver runs the cluster's control
// command with args and waits until the cluster has settled.
type faultOp interface {
	Op
	runSim(b *sim.Broker) error
	args() []string
	// change updates a view of the cluster the way the step changes it.
	change(v *clusterView)
}

// clusterView is what a driver of a real cluster knows of its nodes:
// which are down, which are hung, and which are cut off from the others.
type clusterView struct {
	nodes  int
	down   map[int]string // node → "stopped" or "killed"
	paused map[int]bool   // the hung nodes (pause-node), which answer nothing
	cut    []int          // the nodes cut off from the others, none without a partition
}

func newClusterView(nodes int) *clusterView {
	return &clusterView{nodes: nodes, down: map[int]string{}, paused: map[int]bool{}}
}

// up reports whether node n runs: a hung node runs, as far as the
// others know until their net_ticktime passes.
func (v *clusterView) up(n int) bool { return v.down[n] == "" }

// answers reports whether node n runs and is not hung: a node the
// recorder can ask, and connect to.
func (v *clusterView) answers(n int) bool { return v.up(n) && !v.paused[n] }

// side returns the nodes node n can reach, itself included: those on its
// side of a cut.
func (v *clusterView) side(n int) []int {
	cut := slices.Contains(v.cut, n)
	var out []int
	for m := 1; m <= v.nodes; m++ {
		if slices.Contains(v.cut, m) == cut {
			out = append(out, m)
		}
	}
	return out
}

// running returns the running nodes node n sees: the nodes up on its side.
func (v *clusterView) running(n int) []int {
	var out []int
	for _, m := range v.side(n) {
		if v.up(m) {
			out = append(out, m)
		}
	}
	return out
}

// majority returns a node that answers and sees a majority of the
// cluster running, or 0 when none does.
func (v *clusterView) majority() int {
	for n := 1; n <= v.nodes; n++ {
		if v.answers(n) && 2*len(v.running(n)) > v.nodes {
			return n
		}
	}
	return 0
}

// firstUp is the lowest node that answers (0: none).
func (v *clusterView) firstUp() int {
	for n := 1; n <= v.nodes; n++ {
		if v.answers(n) {
			return n
		}
	}
	return 0
}

// onCluster checks that a cluster scenario can be recorded on a real
// cluster, and returns it with the cluster's node names in its directive.
func onCluster(s *Scenario, c *clusterCtl) (*Scenario, error) {
	spec := s.Cluster
	if spec.Nodes != len(c.names) {
		return nil, fmt.Errorf("%s runs on %d nodes, the cluster has %d", s.Path, spec.Nodes, len(c.names))
	}
	if spec.PartitionHandling != "" && spec.PartitionHandling != c.handling {
		return nil, fmt.Errorf("%s is for a cluster started with partition handling %s; this one was started with partition handling %q: stop it and start it with %s",
			s.Path, spec.PartitionHandling, c.handling, spec.PartitionHandling)
	}
	if len(spec.Names) > 0 && !slices.Equal(spec.Names, c.names) {
		return nil, fmt.Errorf("%s names its nodes %v, the cluster's are %v: the replies name nodes, so record it on a cluster with those names, or remove the names from its cluster directive",
			s.Path, spec.Names, c.names)
	}
	s = s.Clone()
	s.Cluster.Names = slices.Clone(c.names)
	return s, nil
}

//go:embed cluster/*.txt
var clusterFiles embed.FS

// Cluster returns the built-in cluster scenarios, recorded on a real
// 3-node RabbitMQ 4.3.6 cluster (scripts/rabbitmq cluster): the files of
// this package's cluster directory. Each starts with a cluster directive.
func Cluster() fs.FS { return embedded(clusterFiles, "cluster") }

// downNode stops or kills a node. What the clients hold from a classic
// queue homed on it is no longer the queue's to count as unacked: the
// queue that start-node recovers is a new process that knows nothing of
// those deliveries (measured on a 4.3.6 cluster: a consumer on another
// node held 2, rabbitmqctl list_queues counted 2 unacked before the kill,
// 0 after the restart, and an ack from the old channel changed nothing;
// cluster/fuzz-14018-unacked-after-restart.txt). Quorum queues and
// streams keep their consumers' deliveries.
func (r *runner) downNode(op faultOp, node int) error {
	return r.orphanHeld(op, func(home int, _ *rconn) bool { return home == node })
}

// partition cuts a node off. A classic queue whose home is on the other
// side of the cut from a channel takes back what the channel holds from
// it, as from a channel that closed: it counts them ready, not unacked
// (cluster/fuzz-22044-partition-takes-back.txt, 4.3.6).
func (r *runner) partition(op faultOp, node int) error {
	return r.orphanHeld(op, func(home int, c *rconn) bool { return (home == node) != (c.node == node) })
}

// orphanHeld runs a fault, and marks what the clients hold from a
// classic queue as no longer the queue's where lost says so, given the
// queue's home node and the holding channel's connection, read before
// the fault.
func (r *runner) orphanHeld(op faultOp, lost func(home int, c *rconn) bool) error {
	var queues []string
	for _, ch := range r.chans {
		for _, h := range ch.held {
			if !h.orphan && !slices.Contains(queues, h.Queue) {
				queues = append(queues, h.Queue)
			}
		}
	}
	var homes map[string]int
	if len(queues) > 0 {
		var err error
		if homes, err = r.d.classicHomes(queues); err != nil {
			return err
		}
	}
	if err := r.d.fault(op); err != nil {
		return err
	}
	for _, ch := range r.chans {
		for _, h := range ch.held {
			if home, ok := homes[h.Queue]; ok && lost(home, ch.conn) {
				h.orphan = true
			}
		}
	}
	return nil
}
