package wire

import (
	"errors"
	"net"
	"strings"
	"syscall"
	"testing"

	"github.com/amqpsim/amqpsim/sim"
)

// TestServerNodes: the server is the one place that knows a node is down:
// Refused answers a dial to it as a refused TCP connection, and its listener
// (ListenNodes) closes, following the broker's node events, and listens
// again on the same address when the node starts; a partition closes
// nothing.
func TestServerNodes(t *testing.T) {
	b := sim.New(sim.Config{Nodes: 3})
	s := NewServer(b)
	s.Logf = t.Logf
	t.Cleanup(func() { s.Close() })
	if err := s.ListenNodes([]string{"127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"}, nil); err != nil {
		t.Fatal(err)
	}
	addr := s.NodeAddr(2)
	dial := func() error {
		t.Helper()
		s.WaitNodes()
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err
	}
	if err := dial(); err != nil {
		t.Fatalf("node 2 running: %v", err)
	}
	if err := b.StopNode(2); err != nil {
		t.Fatal(err)
	}
	if err := dial(); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("node 2 stopped: %v, want ECONNREFUSED", err)
	}
	if err := s.Refused(2, "node2"); !errors.Is(err, syscall.ECONNREFUSED) || !errors.Is(err, sim.ErrNodeDown) {
		t.Errorf("Refused(2) while it is down: %v, want ECONNREFUSED and sim.ErrNodeDown", err)
	}
	if err := b.Partition([]int{1}); err != nil {
		t.Fatal(err)
	}
	if err := b.StartNode(2); err != nil {
		t.Fatal(err)
	}
	if err := dial(); err != nil {
		t.Errorf("node 2 started again: %v", err)
	}
	if s.NodeAddr(2) != addr {
		t.Errorf("node 2 listens on %s, was %s", s.NodeAddr(2), addr)
	}
	if err := s.Refused(2, "node2"); err != nil {
		t.Errorf("Refused(2) once it runs: %v", err)
	}
}

// A node whose port another process took while it was down cannot listen
// again when it starts: the server stops it again, so that no client
// takes the other process for it, and WaitNodes says why; once the port
// is free it starts and listens.
func TestListenNodesPortTakenWhileDown(t *testing.T) {
	b := sim.New(sim.Config{Nodes: 2})
	s := NewServer(b)
	s.Logf = t.Logf
	t.Cleanup(func() { s.Close() })
	if err := s.ListenNodes([]string{"127.0.0.1:0", "127.0.0.1:0"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := b.StopNode(2); err != nil {
		t.Fatal(err)
	}
	if err := s.WaitNodes(); err != nil {
		t.Fatal(err)
	}
	addr := s.NodeAddr(2)
	squatter, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("taking node 2's port %s: %v", addr, err)
	}
	if err := b.StartNode(2); err != nil {
		t.Fatal(err)
	}
	if err := s.WaitNodes(); err == nil || !strings.Contains(err.Error(), addr) {
		t.Errorf("WaitNodes after starting node 2 on a taken port: %v, want the failure naming %s", err, addr)
	}
	if state := b.Nodes()[1].State; state == sim.NodeRunning {
		t.Errorf("node 2 runs without a listener")
	}
	squatter.Close()
	if err := b.StartNode(2); err != nil {
		t.Fatal(err)
	}
	if err := s.WaitNodes(); err != nil {
		t.Fatalf("starting node 2 with its port free: %v", err)
	}
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("node 2 started again does not listen: %v", err)
	}
	conn.Close()
}
