package wire

import (
	"errors"
	"net"
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
