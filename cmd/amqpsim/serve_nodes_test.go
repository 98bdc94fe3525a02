package main

import (
	"errors"
	"io"
	"net"
	"net/url"
	"slices"
	"strings"
	"syscall"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/amqpsim/amqpsim/sim"
)

// TestServeNodes: serve --nodes 3 listens on a port per node; amqp091-go
// over TCP sees node 2 stopped through the control endpoint as a client
// of a real cluster does (docs/cluster.md section 1): the shutdown close
// (320), then its dial refused, while node 1 serves on; then node 2
// started again and dialled, node 3 killed (its socket reset without a
// frame) and started, and node 3 cut off and healed, its connection kept.
func TestServeNodes(t *testing.T) {
	urls, api := startServeNodes(t, "--addr", "127.0.0.1:0", "--nodes", "3", "--http", "127.0.0.1:0", "--clock", "manual")
	hosts := map[string]bool{}
	for _, u := range urls {
		p, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		hosts[p.Host] = true
	}
	if len(urls) != 3 || len(hosts) != 3 {
		t.Fatalf("serve printed %v, want 3 URLs on 3 ports", urls)
	}
	running := func() []bool { return nodesRunning(t, api) }
	if got := running(); !slices.Equal(got, []bool{true, true, true}) {
		t.Errorf("GET /api/nodes: running %v", got)
	}
	dial := func(n int) (*amqp.Connection, chan *amqp.Error) {
		t.Helper()
		conn, err := amqp.Dial(urls[n-1])
		if err != nil {
			t.Fatalf("dial node %d: %v", n, err)
		}
		t.Cleanup(func() { closeConn(t, conn) })
		return conn, conn.NotifyClose(make(chan *amqp.Error, 1))
	}
	control := func(path string) {
		t.Helper()
		if code := getJSON(t, "POST", api+path, nil); code != 200 {
			t.Fatalf("POST %s: %d", path, code)
		}
	}
	refused := func(n int) {
		t.Helper()
		if conn, err := amqp.Dial(urls[n-1]); !errors.Is(err, syscall.ECONNREFUSED) {
			if err == nil {
				conn.Close()
			}
			t.Errorf("dial node %d while it is down: %v, want ECONNREFUSED", n, err)
		}
	}

	on1, _ := dial(1)
	_, closed2 := dial(2)
	control("/api/sim/stop-node?node=2")
	if e := recv(t, closed2, "node 2's shutdown close"); e == nil || e.Code != amqp.ConnectionForced ||
		e.Reason != "CONNECTION_FORCED - "+sim.ShutdownText || !e.Server {
		t.Errorf("node 2's client got %+v, want the shutdown close", e)
	}
	refused(2)
	if got := running(); !slices.Equal(got, []bool{true, false, true}) {
		t.Errorf("GET /api/nodes with node 2 stopped: running %v", got)
	}
	if _, err := on1.Channel(); err != nil {
		t.Errorf("node 1 after node 2 stopped: %v", err)
	}
	control("/api/sim/start-node?node=2")
	again, _ := dial(2)
	if ch, err := again.Channel(); err != nil {
		t.Errorf("node 2 started again: %v", err)
	} else if _, err := ch.QueueDeclare("after", true, false, false, false, amqp.Table{"x-queue-type": "quorum"}); err != nil {
		t.Errorf("declaring on node 2 started again: %v", err)
	}

	_, closed3 := dial(3)
	control("/api/sim/kill-node?node=3")
	// A crashed node's sockets are reset, as a real node's (linger 0):
	// amqp091-go's own error says so (kill-node-resets-connections.txt).
	if e := recv(t, closed3, "node 3's reset socket"); e == nil || e.Server || !strings.Contains(e.Reason, "connection reset by peer") {
		t.Errorf("node 3's client got %+v, want its socket reset (a client-side error: connection reset by peer)", e)
	}
	refused(3)
	control("/api/sim/start-node?node=rabbit@node3")
	on3, closed3 := dial(3)
	control("/api/sim/partition?group=3")
	if got := running(); !slices.Equal(got, []bool{true, true, true}) {
		t.Errorf("GET /api/nodes with node 3 cut off: running %v", got)
	}
	control("/api/sim/heal")
	if _, err := on3.Channel(); err != nil {
		t.Errorf("node 3's connection after a partition and a heal: %v", err)
	}
	select {
	case e := <-closed3:
		t.Errorf("node 3's connection closed by the partition: %v", e)
	default:
	}
}

// TestNodeAddrs: node N listens on --addr's port + N - 1, every node on a
// free port when it is 0; a port past 65535 or --nodes 0 is refused.
func TestNodeAddrs(t *testing.T) {
	got, err := nodeAddrs("127.0.0.1:5672", 3)
	if want := []string{"127.0.0.1:5672", "127.0.0.1:5673", "127.0.0.1:5674"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("nodeAddrs(127.0.0.1:5672, 3) = %v, %v; want %v", got, err, want)
	}
	got, err = nodeAddrs("[::1]:0", 2)
	if want := []string{"[::1]:0", "[::1]:0"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("nodeAddrs([::1]:0, 2) = %v, %v; want %v", got, err, want)
	}
	if _, err := nodeAddrs("127.0.0.1:65535", 2); err == nil {
		t.Error("a node past port 65535 was accepted")
	}
	if _, err := parseServe([]string{"--nodes", "0"}, io.Discard); err == nil {
		t.Error("--nodes 0 was accepted")
	}
}

// TestServeStartNodeOnATakenPort: a node whose port another process took
// while it was down cannot listen again; start-node then says so (503)
// and leaves the node down, instead of answering it runs while its
// clients reach the other process. Once the port is free, it starts.
func TestServeStartNodeOnATakenPort(t *testing.T) {
	urls, api := startServeNodes(t, "--addr", "127.0.0.1:0", "--nodes", "2", "--http", "127.0.0.1:0", "--clock", "manual")
	u, err := url.Parse(urls[1])
	if err != nil {
		t.Fatal(err)
	}
	running := func() []bool { return nodesRunning(t, api) }
	if code := getJSON(t, "POST", api+"/api/sim/stop-node?node=2", nil); code != 200 {
		t.Fatalf("stop-node: %d", code)
	}
	squatter, err := net.Listen("tcp", u.Host)
	if err != nil {
		t.Fatalf("taking node 2's port %s: %v", u.Host, err)
	}
	var answer struct{ Error string }
	if code := getJSON(t, "POST", api+"/api/sim/start-node?node=2", &answer); code != 503 || !strings.Contains(answer.Error, u.Host) {
		t.Errorf("start-node with the port taken: %d %q, want 503 naming %s", code, answer.Error, u.Host)
	}
	if got := running(); !slices.Equal(got, []bool{true, false}) {
		t.Errorf("after a start-node that could not listen: running %v, want node 2 down", got)
	}
	squatter.Close()
	if code := getJSON(t, "POST", api+"/api/sim/start-node?node=2", nil); code != 200 {
		t.Fatalf("start-node with the port free again: %d", code)
	}
	conn, err := amqp.Dial(urls[1])
	if err != nil {
		t.Fatalf("dial node 2 started again: %v", err)
	}
	closeConn(t, conn)
}

// nodesRunning returns, from GET /api/nodes, whether each node runs.
func nodesRunning(t *testing.T, api string) []bool {
	t.Helper()
	var nodes []struct{ Running bool }
	if code := getJSON(t, "GET", api+"/api/nodes", &nodes); code != 200 {
		t.Fatalf("GET /api/nodes: %d", code)
	}
	var out []bool
	for _, n := range nodes {
		out = append(out, n.Running)
	}
	return out
}
