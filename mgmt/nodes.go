package mgmt

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/amqpsim/amqpsim/sim"
)

// nodeName is node n's name as the API shows it: the broker's own for a
// cluster (sim.Config.Nodes), and the name every other resource gives for
// a broker of one node.
func (r *request) nodeName(info sim.NodeInfo) string {
	if len(r.h.b.Nodes()) == 1 {
		return node
	}
	return info.Name
}

// nodes is GET /api/nodes, RabbitMQ's cluster view (rabbit_mgmt_wm_nodes,
// for monitoring users): every node, running or not, with the running
// nodes it cannot reach as its partitions. The statistics RabbitMQ adds
// for a running node (memory, file descriptors, processes...) are left
// out.
func (r *request) nodes() response {
	infos := r.h.b.Nodes()
	out := make([]map[string]any, len(infos))
	for i, n := range infos {
		partitions := []string{}
		if n.State == sim.NodeRunning {
			for _, o := range infos {
				if o.State == sim.NodeRunning && !slices.Contains(n.Reaches, o.Number) {
					partitions = append(partitions, r.nodeName(o))
				}
			}
		}
		out[i] = map[string]any{"name": r.nodeName(n), "type": "disc", "running": n.State == sim.NodeRunning,
			"being_drained": false, "partitions": partitions}
	}
	return ok(out)
}

// simNodes is what a node control answers: the nodes after it, as
// sim.Broker.Nodes gives them.
func (r *request) simNodes() response {
	infos := r.h.b.Nodes()
	out := make([]map[string]any, len(infos))
	for i, n := range infos {
		reaches := n.Reaches
		if reaches == nil {
			reaches = []int{}
		}
		out[i] = map[string]any{"number": n.Number, "name": r.nodeName(n), "state": n.State.String(), "reaches": reaches}
	}
	return ok(out)
}

// nodeParam reads the query's node: a number from 1, or a node's name.
func (r *request) nodeParam() (int, error) {
	v := r.URL.Query().Get("node")
	if n, err := strconv.Atoi(v); err == nil {
		return n, nil
	}
	for _, n := range r.h.b.Nodes() {
		if v != "" && (n.Name == v || r.nodeName(n) == v) {
			return n.Number, nil
		}
	}
	return 0, fmt.Errorf("node must be a node's number (1 to %d) or name, not %q", len(r.h.b.Nodes()), v)
}

// nodeControl answers a control that acts on the node the query names.
func (r *request) nodeControl(act func(b *sim.Broker, n int) error) response {
	n, err := r.nodeParam()
	if err == nil {
		err = act(r.h.b, n)
	}
	return r.nodesChanged(err)
}

// nodesChanged answers a node control: the error, or the nodes. What
// serves the nodes follows the change from the broker's node events
// (sim.Broker.NodeEvents).
func (r *request) nodesChanged(err error) response {
	if err != nil {
		return response{status: http.StatusBadRequest, body: map[string]string{"error": err.Error()}}
	}
	return r.simNodes()
}

func (r *request) simStopNode() response { return r.nodeControl((*sim.Broker).StopNode) }
func (r *request) simKillNode() response { return r.nodeControl((*sim.Broker).KillNode) }
func (r *request) simStartNode() response {
	return r.nodeControl((*sim.Broker).StartNode)
}

// simPartition cuts the cluster into the groups the query lists
// (group=1,2&group=3; the nodes no group names form one more side).
func (r *request) simPartition() response {
	var groups [][]int
	for _, g := range r.URL.Query()["group"] {
		var group []int
		for _, f := range strings.Split(g, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				return r.nodesChanged(fmt.Errorf("group must list node numbers, as group=1,2, not %q", g))
			}
			group = append(group, n)
		}
		groups = append(groups, group)
	}
	if len(groups) == 0 {
		return r.nodesChanged(fmt.Errorf("partition needs a group of nodes to cut off, as group=3"))
	}
	return r.nodesChanged(r.h.b.Partition(groups...))
}

func (r *request) simHeal() response {
	r.h.b.Heal()
	return r.nodesChanged(nil)
}
