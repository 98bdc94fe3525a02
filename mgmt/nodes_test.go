package mgmt_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/amqpsim/amqpsim/mgmt"
	"github.com/amqpsim/amqpsim/sim"
)

// TestNodes: GET /api/nodes lists a cluster's nodes with their running
// state and partitions, for monitoring users; the node controls stop,
// kill and start a node (by number or name), cut the cluster and heal it,
// each a node event of the broker (which the wire server's listeners
// follow), and answer the nodes; a refused control changes nothing.
func TestNodes(t *testing.T) {
	b := sim.New(sim.Config{Nodes: 3})
	for _, u := range []sim.User{{Name: "watcher", Password: "pw", Tags: []string{sim.TagMonitoring}},
		{Name: "manager", Password: "pw", Tags: []string{sim.TagManagement}}} {
		if err := b.PutUser(u); err != nil {
			t.Fatal(err)
		}
	}
	h := mgmt.NewHandler(b)
	changes := func() int {
		evs, _ := b.NodeEvents(0)
		return len(evs)
	}
	nodes := func() []any {
		t.Helper()
		code, body := call(t, h, "GET", "/api/nodes", "watcher:pw", "")
		if code != 200 {
			t.Fatalf("GET /api/nodes: %d %v", code, body)
		}
		return body.([]any)
	}
	node := func(name string, running bool, partitions ...any) map[string]any {
		if partitions == nil {
			partitions = []any{}
		}
		return map[string]any{"name": name, "type": "disc", "running": running, "being_drained": false, "partitions": partitions}
	}
	if diff := cmp.Diff([]any{node("rabbit@node1", true), node("rabbit@node2", true), node("rabbit@node3", true)}, nodes()); diff != "" {
		t.Errorf("GET /api/nodes (-want +got):\n%s", diff)
	}
	want := map[string]any{"error": "not_authorised", "reason": "Not monitor user"}
	if code, body := call(t, h, "GET", "/api/nodes", "manager:pw", ""); code != 401 || !cmp.Equal(body, want) {
		t.Errorf("GET /api/nodes as a management user: %d %v, want 401 %v", code, body, want)
	}

	code, body := call(t, h, "POST", "/api/sim/stop-node?node=2", guest, "")
	if code != 200 || changes() != 1 {
		t.Fatalf("stop-node: %d %v, %d changes", code, body, changes())
	}
	if got := body.([]any)[1]; !cmp.Equal(got, map[string]any{"number": 2.0, "name": "rabbit@node2", "state": "stopped", "reaches": []any{}}) {
		t.Errorf("stop-node answered node 2 as %v", got)
	}
	if code, _ := call(t, h, "POST", "/api/sim/kill-node?node=rabbit@node3", guest, ""); code != 200 {
		t.Errorf("kill-node by name: %d", code)
	}
	if diff := cmp.Diff([]any{node("rabbit@node1", true), node("rabbit@node2", false), node("rabbit@node3", false)}, nodes()); diff != "" {
		t.Errorf("GET /api/nodes with nodes 2 and 3 down (-want +got):\n%s", diff)
	}
	for _, n := range []string{"2", "3"} {
		if code, body := call(t, h, "POST", "/api/sim/start-node?node="+n, guest, ""); code != 200 {
			t.Errorf("start-node %s: %d %v", n, code, body)
		}
	}
	if code, body := call(t, h, "POST", "/api/sim/partition?group=3", guest, ""); code != 200 {
		t.Errorf("partition: %d %v", code, body)
	}
	if diff := cmp.Diff([]any{node("rabbit@node1", true, "rabbit@node3"), node("rabbit@node2", true, "rabbit@node3"),
		node("rabbit@node3", true, "rabbit@node1", "rabbit@node2")}, nodes()); diff != "" {
		t.Errorf("GET /api/nodes with node 3 cut off (-want +got):\n%s", diff)
	}
	if code, _ := call(t, h, "POST", "/api/sim/heal", guest, ""); code != 200 || changes() != 6 {
		t.Errorf("heal: %d, %d changes, want 6", code, changes())
	}
	for _, path := range []string{"/api/sim/stop-node?node=4", "/api/sim/stop-node?node=x", "/api/sim/stop-node", "/api/sim/start-node?node=1",
		"/api/sim/partition", "/api/sim/partition?group=a", "/api/sim/partition?group=1&group=1"} {
		if code, body := call(t, h, "POST", path, guest, ""); code != 400 {
			t.Errorf("POST %s: %d %v, want 400", path, code, body)
		}
	}
	if changes() != 6 {
		t.Errorf("%d changes after refused controls, want 6", changes())
	}

	one := mgmt.NewHandler(sim.New(sim.Config{}))
	if code, body := call(t, one, "GET", "/api/nodes", guest, ""); code != 200 || !cmp.Equal(body, []any{node("rabbit@amqpsim", true)}) {
		t.Errorf("GET /api/nodes of a broker of one node: %d %v", code, body)
	}
	if code, body := call(t, one, "POST", "/api/sim/stop-node?node=1", guest, ""); code != 400 {
		t.Errorf("stop-node of a broker of one node: %d %v, want 400", code, body)
	}
}

// TestClusterQueueNodes: in a cluster a queue shows the node that leads
// it (node; a quorum queue's leader, members and online too), as
// `rabbitmqctl list_queues name leader members online` does.
func TestClusterQueueNodes(t *testing.T) {
	b := sim.New(sim.Config{Nodes: 3})
	conn, err := b.Dial(sim.ConnectOptions{Node: 2})
	if err != nil {
		t.Fatal(err)
	}
	ch, _ := conn.Channel()
	for _, q := range []struct {
		name string
		args sim.Table
	}{{"cq", nil}, {"qq", sim.Table{"x-queue-type": "quorum"}}} {
		if _, err := ch.QueueDeclare(q.name, sim.QueueOptions{Durable: true, Args: q.args}); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.KillNode(3); err != nil {
		t.Fatal(err)
	}
	h := mgmt.NewHandler(b)
	_, body := call(t, h, "GET", "/api/queues/%2F/cq", guest, "")
	if got := body.(map[string]any)["node"]; got != "rabbit@node2" {
		t.Errorf("cq's node %v, want rabbit@node2 (declared there)", got)
	}
	_, body = call(t, h, "GET", "/api/queues/%2F/qq", guest, "")
	got := body.(map[string]any)
	want := map[string]any{"node": "rabbit@node2", "leader": "rabbit@node2",
		"members": []any{"rabbit@node1", "rabbit@node2", "rabbit@node3"}, "online": []any{"rabbit@node1", "rabbit@node2"}}
	for k, v := range want {
		if !cmp.Equal(got[k], v) {
			t.Errorf("qq's %s: %v, want %v", k, got[k], v)
		}
	}
}
