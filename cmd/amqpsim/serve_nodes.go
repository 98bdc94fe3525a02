package main

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/amqpsim/amqpsim/sim"
	"github.com/amqpsim/amqpsim/wire"
)

// nodeAddrs returns the AMQP address of each of n nodes: addr's host with
// addr's port, then the ports after it; every node on a free port of its
// own when addr's port is 0.
func nodeAddrs(addr string, n int) ([]string, error) {
	host, portText, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, usageError{fmt.Sprintf("--addr %q: %v", addr, err)}
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port < 0 || port > 65535 {
		return nil, usageError{fmt.Sprintf("--addr %q: the port must be a number from 0 to 65535", addr)}
	}
	if port > 0 && port+n-1 > 65535 {
		return nil, usageError{fmt.Sprintf("--addr %q with --nodes %d: the last node's port would be %d", addr, n, port+n-1)}
	}
	out := make([]string, n)
	for i := range out {
		p := 0
		if port > 0 {
			p = port + i
		}
		out[i] = net.JoinHostPort(host, strconv.Itoa(p))
	}
	return out, nil
}

// nodeListeners serves each node of the broker on a listener of its own,
// which is closed while the node is down (sim.Broker.StopNode, KillNode):
// a client then has its connection refused, as by a stopped RabbitMQ
// node. When the node starts again it listens again on the same address
// (the port the first listen got, when the flag's was 0).
type nodeListeners struct {
	b    *sim.Broker
	ws   *wire.Server
	tls  *tls.Config
	logf func(format string, args ...any)
	wg   *sync.WaitGroup

	mu sync.Mutex
	// addrs are the nodes' addresses, by node number - 1; lns their
	// listeners, nil while the node is down.
	addrs []string
	lns   []net.Listener
	// closed is set by close: nothing listens again.
	closed bool
}

// listenAll listens for every node, on addrs.
func (l *nodeListeners) listenAll(addrs []string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.addrs, l.lns = addrs, make([]net.Listener, len(addrs))
	for i := range addrs {
		if err := l.listen(i+1, false); err != nil {
			for _, ln := range l.lns {
				if ln != nil {
					ln.Close()
				}
			}
			return err
		}
	}
	return nil
}

// rebindTries and rebindPause bound the retries of a listen on a port
// just closed: Go's listeners set SO_REUSEADDR, so the old connections in
// TIME_WAIT do not hold the port, but another process may take it
// meanwhile.
const (
	rebindTries = 20
	rebindPause = 50 * time.Millisecond
)

// listen listens for node n on its address and serves it; retry, for a
// node that starts again, retries a refused listen for a second. Caller
// holds l.mu.
func (l *nodeListeners) listen(n int, retry bool) error {
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
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		err := l.ws.ServeNode(ln, n)
		if err != nil && !errors.Is(err, wire.ErrServerClosed) && !errors.Is(err, net.ErrClosed) {
			l.logf("node %d: %v", n, err)
		}
	}()
	return nil
}

// sync closes the listeners of the nodes that are down and listens again
// for those that run: Handler.NodesChanged, called by the management
// API's node controls before they answer. A node that cannot listen
// again (another process took its port while it was down) is stopped
// again, so that nobody takes the other process for it, and sync reports
// it.
func (l *nodeListeners) sync() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	var errs []error
	for _, n := range l.b.Nodes() {
		ln := l.lns[n.Number-1]
		switch {
		case n.State != sim.NodeRunning && ln != nil:
			ln.Close()
			l.lns[n.Number-1] = nil
		case n.State == sim.NodeRunning && ln == nil:
			if err := l.listen(n.Number, true); err != nil {
				err = fmt.Errorf("node %d cannot listen on %s again, so it stays down: %w", n.Number, l.addrs[n.Number-1], err)
				l.logf("%v", err)
				errs = append(errs, err)
				if err := l.b.StopNode(n.Number); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	return errors.Join(errs...)
}

// close stops listening for good (the wire server's Close closes the
// listeners too).
func (l *nodeListeners) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	for i, ln := range l.lns {
		if ln != nil {
			ln.Close()
			l.lns[i] = nil
		}
	}
}

// addr returns node n's address.
func (l *nodeListeners) addr(n int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.addrs[n-1]
}
