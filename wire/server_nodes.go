package wire

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/amqpsim/amqpsim/sim"
)

// The nodes of a cluster. A broker of several nodes (sim.Config.Nodes) is
// served node by node: a client is attached to the node it dialled
// (ServeConnNode, ServeNode), and a node that is down refuses new
// connections, as a stopped RabbitMQ node's closed port does. The server
// is the one place that knows it: Refused answers from the broker's nodes
// (an in-memory dial asks it first), and the listeners of ListenNodes
// follow the broker's node events (sim.Broker.NodeEvents), closing while
// their node is down.

// Refused returns the error of a new connection to node n, dialled at
// addr, while the node is down (sim.Broker.StopNode, KillNode): a refused
// TCP connection, for which errors.Is reports syscall.ECONNREFUSED and
// sim.ErrNodeDown. It returns nil while the node runs.
func (s *Server) Refused(n int, addr string) error {
	nodes := s.Broker.Nodes()
	if n < 1 || n > len(nodes) || nodes[n-1].State == sim.NodeRunning {
		return nil
	}
	return &net.OpError{Op: "dial", Net: "tcp", Addr: dialAddr(addr), Err: nodeDownError(n)}
}

// nodeDownError is a refused connection to a node that is down.
type nodeDownError int

func (e nodeDownError) Error() string {
	return fmt.Sprintf("connect: connection refused (node %d is down)", int(e))
}

// Is reports a refused connection (syscall.ECONNREFUSED), to a node that
// is down (sim.ErrNodeDown).
func (e nodeDownError) Is(target error) bool {
	return target == syscall.ECONNREFUSED || target == sim.ErrNodeDown
}

// dialAddr is a dialled address, named in a refused dial's error.
type dialAddr string

func (a dialAddr) Network() string { return "tcp" }
func (a dialAddr) String() string  { return string(a) }

// nodeListeners are ListenNodes' listeners.
type nodeListeners struct {
	tls *tls.Config
	mu  sync.Mutex
	// addrs are the nodes' addresses, by node number - 1; lns their
	// listeners, nil while the node is down.
	addrs []string
	lns   []net.Listener
	// followed is the last node event the listeners follow, stopped is
	// set when they stop; followedCond (on mu) tells WaitNodes.
	followed     uint64
	stopped      bool
	followedCond sync.Cond
}

// ListenNodes listens for every node of the broker on an address of its
// own (addrs, by node number - 1; port 0 picks a free port, which the
// node keeps) and serves each listener as ServeNode does, over TLS when
// tlsConfig is set. It follows the broker's node events: a node's
// listener closes while the node is down, so that a client dialling it
// has its connection refused, and listens again on the same address when
// the node starts (retrying for a second while the port is still held).
// It returns once every running node listens; Close stops it all.
func (s *Server) ListenNodes(addrs []string, tlsConfig *tls.Config) error {
	if s.Broker == nil {
		return errors.New("wire: Server.Broker is nil")
	}
	nodes := s.Broker.Nodes()
	if len(addrs) != len(nodes) {
		return fmt.Errorf("wire: ListenNodes: %d addresses for %d nodes", len(addrs), len(nodes))
	}
	events, _ := s.Broker.NodeEvents(0)
	var seen uint64
	if len(events) > 0 {
		seen = events[len(events)-1].Seq
	}
	l := &nodeListeners{tls: tlsConfig, addrs: append([]string(nil), addrs...), lns: make([]net.Listener, len(addrs)), followed: seen}
	l.followedCond.L = &l.mu
	s.mu.Lock()
	if s.nodes != nil || s.closed {
		s.mu.Unlock()
		return errors.New("wire: ListenNodes: the server listens already, or is closed")
	}
	s.nodes = l
	quit := s.quitLocked()
	s.mu.Unlock()
	for _, nd := range nodes {
		if nd.State != sim.NodeRunning {
			continue
		}
		if err := s.listenNode(nd.Number, false); err != nil {
			s.closeNodes()
			return err
		}
	}
	s.wg.Add(1)
	go s.followNodes(seen, quit)
	return nil
}

// NodeAddr returns the address node n listens on (ListenNodes), while it
// is down too; "" for a node the server does not listen for.
func (s *Server) NodeAddr(n int) string {
	s.mu.Lock()
	l := s.nodes
	s.mu.Unlock()
	if l == nil {
		return ""
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if n < 1 || n > len(l.addrs) {
		return ""
	}
	return l.addrs[n-1]
}

// rebindTries and rebindPause bound the retries of a listen on a port
// just closed: Go's listeners set SO_REUSEADDR, so the old connections in
// TIME_WAIT do not hold the port, but another process may take it
// meanwhile.
const (
	rebindTries = 20
	rebindPause = 50 * time.Millisecond
)

// listenNode listens for node n on its address and serves it; retry, for
// a node that starts again, retries a refused listen for a second.
func (s *Server) listenNode(n int, retry bool) error {
	l := s.nodes
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lns[n-1] != nil {
		return nil
	}
	ln, err := net.Listen("tcp", l.addrs[n-1])
	for try := 1; err != nil && retry && try < rebindTries; try++ {
		time.Sleep(rebindPause)
		ln, err = net.Listen("tcp", l.addrs[n-1])
	}
	if err != nil {
		return err
	}
	l.addrs[n-1] = ln.Addr().String() // port 0 resolved, for a later listen
	if l.tls != nil {
		ln = tls.NewListener(ln, l.tls)
	}
	l.lns[n-1] = ln
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		err := s.ServeNode(ln, n)
		if err != nil && !errors.Is(err, ErrServerClosed) && !errors.Is(err, net.ErrClosed) {
			s.logf("wire: node %d: %v", n, err)
		}
	}()
	return nil
}

// closeNode closes node n's listener, if it has one.
func (s *Server) closeNode(n int) {
	l := s.nodes
	l.mu.Lock()
	defer l.mu.Unlock()
	if ln := l.lns[n-1]; ln != nil {
		ln.Close()
		l.lns[n-1] = nil
	}
}

// closeNodes closes every node's listener.
func (s *Server) closeNodes() {
	for n := range s.nodes.lns {
		s.closeNode(n + 1)
	}
}

// followNodes follows the broker's node events after seen until the
// server closes: a node that goes down stops listening, one that starts
// listens again. Between events it waits on the broker's signal, not
// polling.
func (s *Server) followNodes(seen uint64, quit <-chan struct{}) {
	defer s.wg.Done()
	for {
		events, next := s.Broker.NodeEvents(seen)
		if len(events) > 0 && events[0].Seq > seen+1 {
			// Further behind than the broker keeps: take its nodes.
			s.syncNodes()
		}
		for _, e := range events {
			switch e.Kind {
			case sim.NodeDown:
				s.closeNode(e.Node)
			case sim.NodeUp:
				if err := s.listenNode(e.Node, true); err != nil {
					s.logf("wire: node %d started, but cannot listen again: %v", e.Node, err)
				}
			}
			seen = e.Seq
		}
		l := s.nodes
		l.mu.Lock()
		l.followed = seen
		l.followedCond.Broadcast()
		l.mu.Unlock()
		select {
		case <-next:
		case <-quit:
			s.closeNodes()
			l.mu.Lock()
			l.stopped = true
			l.followedCond.Broadcast()
			l.mu.Unlock()
			return
		}
	}
}

// WaitNodes returns once the listeners of ListenNodes follow every node
// event the broker has made (a node started has its listener again), or
// at once when the server does not listen for nodes or has closed: a
// client that dials a node's address after a fault the test caused finds
// the listener as the node's state says.
func (s *Server) WaitNodes() {
	s.mu.Lock()
	l := s.nodes
	s.mu.Unlock()
	if l == nil {
		return
	}
	events, _ := s.Broker.NodeEvents(0)
	if len(events) == 0 {
		return
	}
	last := events[len(events)-1].Seq
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.followed < last && !l.stopped {
		l.followedCond.Wait()
	}
}

// syncNodes makes every node's listener match its state.
func (s *Server) syncNodes() {
	for _, nd := range s.Broker.Nodes() {
		if nd.State != sim.NodeRunning {
			s.closeNode(nd.Number)
		} else if err := s.listenNode(nd.Number, true); err != nil {
			s.logf("wire: node %d runs, but cannot listen: %v", nd.Number, err)
		}
	}
}
