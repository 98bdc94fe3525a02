package amqptest

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/amqpsim/amqpsim/sim"
)

// A server of a broker with several nodes (WithConfig(sim.Config{Nodes:
// 3})) is a cluster: each node has its URL (NodeURL), and a client
// given the list of them, as it would be given a real cluster's hosts,
// dials through Dial to the node its URL names. Faults are the broker's
// (sim.Broker.StopNode, KillNode, StartNode, Partition, Heal,
// RecoverAfter, or the schedule kinds FaultStopNode, FaultKillNode and
// FaultPartition): the stopped node's clients get connection.close 320,
// the killed node's lose their connection without a frame, and a dial to a
// node that is down fails as a refused TCP connection (errors.Is
// syscall.ECONNREFUSED): through Dial, and WithTCP, where each node
// listens on its own port, closed while the node is down
// (wire.Server.ListenNodes), for a client that dials the port itself.

// NodeURL returns URL() for node n (1-based) of the broker's cluster:
// host "amqpsim" for node 1 and "amqpsim-N" for node N in memory, each
// node's own 127.0.0.1:port WithTCP. It panics for a node the broker
// does not have.
func (s *Server) NodeURL(n int) string {
	if n < 1 || n > len(s.broker.Nodes()) {
		panic("amqptest: NodeURL(" + strconv.Itoa(n) + "): the broker has nodes 1 to " + strconv.Itoa(len(s.broker.Nodes())))
	}
	scheme := "amqp"
	if s.tlsClient != nil {
		scheme = "amqps"
	}
	u := url.URL{Scheme: scheme, User: url.UserPassword(s.user, s.pass), Host: nodeHost(n)}
	if s.tcp {
		u.Host = s.wire.NodeAddr(n)
	}
	return u.String()
}

// NodeURLs returns NodeURL of every node, in node order: the host list a
// client of a cluster is given.
func (s *Server) NodeURLs() []string {
	out := make([]string, len(s.broker.Nodes()))
	for i := range out {
		out[i] = s.NodeURL(i + 1)
	}
	return out
}

// nodeHost is node n's host in memory.
func nodeHost(n int) string {
	if n == 1 {
		return "amqpsim"
	}
	return "amqpsim-" + strconv.Itoa(n)
}

// nodeOf returns the node a dialled address names: a NodeURL's host (in
// memory) or listener address (WithTCP); node 1 for any other.
func (s *Server) nodeOf(addr string) int {
	for n := 1; s.tcp && n <= len(s.broker.Nodes()); n++ {
		if s.wire.NodeAddr(n) == addr {
			return n
		}
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	if n, err := strconv.Atoi(strings.TrimPrefix(host, "amqpsim-")); err == nil && strings.HasPrefix(host, "amqpsim-") &&
		n >= 1 && n <= len(s.broker.Nodes()) {
		return n
	}
	return 1
}

// injectNodeFault injects a node fault of a schedule: the node goes down
// or is cut off, and every outage ends after the fault's Downtime. A node
// already down is left as it is.
func (s *Server) injectNodeFault(f Fault) error {
	nodes := len(s.broker.Nodes())
	if nodes < 2 {
		return fmt.Errorf("amqptest: %v: the broker has one node (sim.Config.Nodes)", f)
	}
	n := (max(f.Node, 1)-1)%nodes + 1
	var err error
	switch f.Kind {
	case FaultStopNode:
		err = s.broker.StopNode(n)
	case FaultKillNode:
		err = s.broker.KillNode(n)
	case FaultPartition:
		err = s.broker.Partition([]int{n})
	}
	if err != nil && s.broker.Nodes()[n-1].State == sim.NodeRunning {
		return err
	}
	s.broker.RecoverAfter(f.Downtime)
	return nil
}
