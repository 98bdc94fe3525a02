package scenarios

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net"
	"sync"
	"testing/synctest"
	"time"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
	"github.com/amqpsim/amqpsim/wire"
)

// simDriver runs a scenario on an in-process simulator. Everything the
// broker pushes reaches a connection's sink, in order.
type simDriver struct {
	b     *sim.Broker
	conns map[string]*sim.Connection
	// connOrder names the connections in the order they were opened.
	connOrder []string
	chans     map[string]*sim.Channel
	chanOf    map[string]map[uint16]string // conn → channel id → name (current)
	events    []event
	// observer is a channel of a connection of the driver's own, for
	// ShowQueue.
	observer *sim.Channel
	// connOf names each channel's connection.
	connOf map[string]string
	// clustered is set on a cluster (sim.Config.Nodes > 1), where a
	// connection that ends without a connection.close, and not by the
	// client, shows as dropped; ended names those that have ended.
	clustered bool
	ended     map[string]bool
	// awaiting are, by channel, the steps the broker queued (sim.ErrQueued)
	// whose replies the client waits for, in order: a reply pushed for one
	// is its late answer.
	awaiting map[string][]chanOp
	// pausedAt is when each hung node hung, and gaveUp names the
	// connections on one whose client gave up (clientGiveUp).
	pausedAt map[int]time.Time
	gaveUp   map[string]bool
}

// clientGiveUp is how long amqp091-go, whose connections the scenarios'
// clients are, waits for a frame before it drops its connection: three
// times half the 10 s heartbeat it asks for (heartbeater's
// maxServerHeartbeatsInFlight), from the last frame it read. The driver
// counts it from the node's hang, when a frame was last possible; the
// recordings show 10-15 s (pause-node-silent-connection.txt).
const clientGiveUp = 15 * time.Second

// newSimDriver runs a scenario on b, made of cfg.
func newSimDriver(b *sim.Broker, cfg sim.Config) *simDriver {
	return &simDriver{b: b, conns: map[string]*sim.Connection{}, chans: map[string]*sim.Channel{},
		chanOf: map[string]map[uint16]string{}, connOf: map[string]string{},
		clustered: cfg.Nodes > 1, ended: map[string]bool{}, awaiting: map[string][]chanOp{},
		pausedAt: map[int]time.Time{}, gaveUp: map[string]bool{}}
}

// collect turns what the broker pushed to connection conn into events.
func (d *simDriver) collect(conn string, pushes []sim.Push) {
	chName := func(id uint16) string { return d.chanOf[conn][id] }
	for _, p := range pushes {
		e := event{conn: conn}
		if name := chName(p.Channel); isReply(p.Method) && len(d.awaiting[name]) > 0 {
			op := d.awaiting[name][0]
			d.awaiting[name] = d.awaiting[name][1:]
			d.events = append(d.events, event{kind: evLate, conn: conn, ch: name, text: op.String()})
			continue
		}
		switch p.Method {
		case protocol.BasicDeliver:
			e.kind, e.ch, e.ctag, e.tag, e.redelivered = evDeliver, chName(p.Channel), p.ConsumerTag, p.DeliveryTag, p.Redelivered
			e.body, e.exchange, e.key, e.headers = string(p.Body), p.Exchange, p.RoutingKey, headers(p.Headers)
		case protocol.BasicReturn:
			e.kind, e.ch, e.code, e.text = evReturn, chName(p.Channel), p.ReplyCode, p.ReplyText
			e.body, e.exchange, e.key = string(p.Body), p.Exchange, p.RoutingKey
		case protocol.BasicAck, protocol.BasicNack:
			e.kind, e.ch, e.tag, e.multiple, e.nack = evConfirm, chName(p.Channel), p.DeliveryTag, p.Multiple, p.Method == protocol.BasicNack
		case protocol.BasicCancel:
			e.kind, e.ch, e.ctag = evCancel, chName(p.Channel), p.ConsumerTag
		case protocol.ChannelClose:
			e.kind, e.ch, e.code, e.text, e.method = evChannelClose, chName(p.Channel), p.Err.Code, p.Err.Text, p.Err.Method.String()
			delete(d.awaiting, e.ch) // the steps it queued are dropped
		case protocol.ConnectionClose:
			for _, name := range d.chanOf[conn] {
				delete(d.awaiting, name)
			}
			d.ended[conn] = true
			if p.Err == nil { // its node crashed (sim.Push.Drop): its socket is reset
				e.kind, e.text = evDropped, dropReset
				break
			}
			e.kind, e.code, e.text, e.method = evConnClose, p.Err.Code, p.Err.Text, p.Err.Method.String()
		case protocol.ConnectionBlocked:
			e.kind, e.text = evBlocked, p.ReplyText
		case protocol.ConnectionUnblock:
			e.kind = evUnblocked
		default:
			continue
		}
		d.events = append(d.events, e)
	}
}

func (d *simDriver) finish() error { return nil }

func (d *simDriver) settle(bool) []event {
	for _, name := range d.connOrder {
		c := d.conns[name]
		if d.gaveUp[name] {
			continue // its client is gone
		}
		d.collect(name, c.Drain(nil))
		if d.clustered && !d.ended[name] && c.Err() != nil {
			d.ended[name] = true
			d.events = append(d.events, event{kind: evDropped, conn: name})
		}
		if at, hung := d.pausedAt[c.Node()]; hung && !d.ended[name] && d.b.Now().Sub(at) >= clientGiveUp {
			d.ended[name], d.gaveUp[name] = true, true
			d.events = append(d.events, event{kind: evDropped, conn: name, text: dropTimeout})
		}
	}
	evs := d.events
	d.events = nil
	return evs
}

// isReply reports whether a push of method m answers a client's method:
// the replies the broker pushes for the methods it queued, and those it
// always pushes (basic.get's, tx.commit's).
func isReply(m protocol.Method) bool {
	switch m {
	case protocol.BasicDeliver, protocol.BasicReturn, protocol.BasicAck, protocol.BasicNack, protocol.BasicCancel,
		protocol.ChannelClose, protocol.ConnectionClose, protocol.ConnectionBlocked, protocol.ConnectionUnblock:
		return false
	}
	return true
}

// headers is a delivery's headers for the runner: a copy (the broker may
// share its table), nil when empty.
func headers(t sim.Table) protocol.Table {
	if len(t) == 0 {
		return nil
	}
	return maps.Clone(t)
}

// simErr classifies a simulator error: a call on something closed, or a
// protocol error the broker closed with.
func simErr(err error) error {
	var perr *protocol.Error
	switch {
	case err == nil:
		return nil
	case errors.Is(err, sim.ErrQueued):
		return errPending
	case errors.Is(err, sim.ErrClosed):
		return errRefused
	case errors.As(err, &perr):
		return errProtocol{err}
	}
	return err
}

// do runs a channel operation. One the broker queues (sim.ErrQueued: the
// channel waits in a call, or an alarm blocks the connection, whose calls
// wait as RabbitMQ's reader stops reading) is pending when the client
// waits for its reply, which then shows as a late answer; one without a
// reply (a publish, an ack) counts as sent.
func (d *simDriver) do(name string, op chanOp) (reply, error) {
	rep, err := op.runSim(d.chans[name])
	err = simErr(err)
	if errors.Is(err, errPending) {
		if !awaitsReply(op) {
			return reply{}, nil
		}
		d.awaiting[name] = append(d.awaiting[name], op)
	}
	return rep, err
}

// awaitsReply reports whether the client waits for a reply to op.
func awaitsReply(op chanOp) bool {
	switch op := op.(type) {
	case Publish, Settle:
		return false
	case DeclareQueue:
		return !op.NoWait
	}
	return true
}

// admin runs an operator step.
func (d *simDriver) admin(op adminOp) error { return op.runSim(d.b) }

// fault changes the simulated cluster. When a hung node runs again, it
// finds the connections whose clients gave up closed.
func (d *simDriver) fault(op faultOp) error {
	if err := op.runSim(d.b); err != nil {
		return err
	}
	switch o := op.(type) {
	case PauseNode:
		d.pausedAt[o.Node] = d.b.Now()
	case ResumeNode:
		delete(d.pausedAt, o.Node)
		for _, name := range d.connOrder {
			if c := d.conns[name]; d.gaveUp[name] && c.Node() == o.Node && c.Err() == nil {
				_ = c.Close()
			}
		}
	}
	return nil
}

// firstRunning is the lowest-numbered running node of a simulated
// cluster that is not hung, where the drivers' observers connect (0,
// node 1, on a single node).
func firstRunning(b *sim.Broker) int {
	for _, n := range b.Nodes() {
		if n.State == sim.NodeRunning && !n.Hung {
			return n.Number
		}
	}
	return 0
}

// wireSim is the simulator behind the in-memory wire driver: a broker, its
// AMQP server, and the client ends of the pipes, all inside one
// testing/synctest bubble.
type wireSim struct {
	b       *sim.Broker
	srv     *wire.Server
	nodes   int // the nodes of a cluster; 0 on a single node
	reads   Reads
	rng     *rand.Rand // cuts ReadsSplit's reads
	mu      sync.Mutex
	clients []net.Conn
}

// newWireSim serves b, made of cfg, over the in-memory wire.
func newWireSim(b *sim.Broker, cfg sim.Config, reads Reads) *wireSim {
	w := &wireSim{b: b, srv: wire.NewServer(b), reads: reads, rng: rand.New(rand.NewPCG(cfg.Seed, 1))}
	if cfg.Nodes > 1 {
		w.nodes = cfg.Nodes
	}
	return w
}

// dial connects a client over a new in-memory pipe.
func (w *wireSim) dial(network, addr string) (net.Conn, error) { return w.dialNode(1) }

// dialNode connects a client to node n of a cluster over a new
// in-memory pipe; a node that is down refuses it.
func (w *wireSim) dialNode(n int) (net.Conn, error) {
	if err := w.srv.Refused(n, fmt.Sprintf("node%d", n)); err != nil {
		return nil, err
	}
	return w.connect(func(server net.Conn) error { return w.srv.ServeConnNode(server, n) })
}

// connect makes a pipe, has serve serve its server end, and returns the
// client end.
func (w *wireSim) connect(serve func(net.Conn) error) (net.Conn, error) {
	client, server := wire.Pipe()
	switch w.reads {
	case ReadsSplit:
		w.mu.Lock()
		server = &splitConn{Conn: server, r: rand.New(rand.NewPCG(w.rng.Uint64(), 2))}
		w.mu.Unlock()
	case ReadsCoalesced:
		client = &coalescingConn{Conn: client}
	}
	if err := serve(server); err != nil {
		client.Close()
		return nil, err
	}
	w.mu.Lock()
	w.clients = append(w.clients, client)
	w.mu.Unlock()
	return client, nil
}

// anyHung reports whether a node of the cluster is hung.
func (w *wireSim) anyHung() bool {
	for _, n := range w.b.Nodes() {
		if n.Hung {
			return true
		}
	}
	return false
}

// wait returns once every goroutine of the bubble but the caller is durably
// blocked: the server has handled every frame sent to it, and the clients
// have read every frame it sent.
func (w *wireSim) wait() {
	for {
		w.flush()
		synctest.Wait()
		if !w.holding() {
			return
		}
	}
}

// flush passes on what the clients' ends hold back (ReadsCoalesced).
func (w *wireSim) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range w.clients {
		if cc, ok := c.(*coalescingConn); ok {
			_ = cc.flush()
		}
	}
}

// holding reports whether a client's end holds frames back: a client's
// goroutine wrote them while the bubble waited.
func (w *wireSim) holding() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range w.clients {
		if cc, ok := c.(*coalescingConn); ok && cc.pending() {
			return true
		}
	}
	return false
}

func (w *wireSim) advance(d time.Duration) { w.b.Advance(d) }

// unacked is the simulator's own count of a queue's deliveries that its
// channels hold: the unacked ones and those the queue timed out.
func (w *wireSim) unacked(q string) (int, error) {
	st, err := w.b.QueueStats("/", q)
	return st.Unacked + st.TimedOut, err
}

// cut closes every client's pipe, failing whatever call waits on it.
func (w *wireSim) cut() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range w.clients {
		c.Close()
	}
}

// close stops the server and waits for its goroutines.
func (w *wireSim) close() { w.srv.Close() }
