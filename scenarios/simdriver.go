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
	// connOf names each channel's connection; held are the steps of
	// connections an alarm blocked, run when it clears (op_alarm.go).
	connOf map[string]string
	held   map[string][]func() error
	// clustered is set on a cluster (sim.Config.Nodes > 1), where a
	// connection that ends without a connection.close, and not by the
	// client, shows as dropped; ended names those that have ended.
	clustered bool
	ended     map[string]bool
	// parked are, by channel, the steps held back behind a call the
	// broker answers late (sim.ErrPending), in order; resumed names the
	// channels whose call ended (sim.Push.Resumed) or that closed.
	parked  map[string][]chanOp
	resumed []string
}

func newSimDriver(cfg sim.Config) *simDriver {
	return &simDriver{b: sim.New(cfg), conns: map[string]*sim.Connection{}, chans: map[string]*sim.Channel{},
		chanOf: map[string]map[uint16]string{}, connOf: map[string]string{}, held: map[string][]func() error{},
		clustered: cfg.Nodes > 1, ended: map[string]bool{}, parked: map[string][]chanOp{}}
}

// collect turns what the broker pushed to connection conn into events.
func (d *simDriver) collect(conn string, pushes []sim.Push) {
	chName := func(id uint16) string { return d.chanOf[conn][id] }
	for _, p := range pushes {
		e := event{conn: conn}
		if name := chName(p.Channel); (p.Resumed || p.Method == protocol.ChannelClose) && len(d.parked[name]) > 0 {
			d.resumed = append(d.resumed, name)
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
		case protocol.ConnectionClose:
			d.ended[conn] = true
			if p.Err == nil { // its node crashed (sim.Push.Drop)
				e.kind = evDropped
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
	for {
		for _, name := range d.connOrder {
			c := d.conns[name]
			d.collect(name, c.Drain(nil))
			if d.clustered && !d.ended[name] && c.Err() != nil {
				d.ended[name] = true
				d.events = append(d.events, event{kind: evDropped, conn: name})
			}
		}
		if len(d.resumed) == 0 {
			break
		}
		resumed := d.resumed
		d.resumed = nil
		for _, ch := range resumed {
			d.unpark(ch)
		}
	}
	evs := d.events
	d.events = nil
	return evs
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
	case errors.Is(err, sim.ErrPending):
		return errPending
	case errors.Is(err, sim.ErrClosed):
		return errRefused
	case errors.As(err, &perr):
		return errProtocol{err}
	}
	return err
}

// do runs a channel operation, or holds it while an alarm blocks the
// connection (op_alarm.go), or while the channel waits in a call
// (sim.ErrPending), as a client's frames wait in RabbitMQ's channel
// process. A step held back that has a reply is pending, one that has none
// (a publish, an ack) is sent.
func (d *simDriver) do(name string, op chanOp) (reply, error) {
	if len(d.parked[name]) > 0 {
		d.parked[name] = append(d.parked[name], op)
		return reply{}, pendingErr(op)
	}
	rep, err := d.doNow(name, op)
	if errors.Is(err, errPending) {
		d.parked[name] = append(d.parked[name], op)
		return reply{}, pendingErr(op)
	}
	return rep, err
}

// pendingErr is what a step held back returns: errPending, or nil for
// one the client gets no reply to.
func pendingErr(op chanOp) error {
	switch op.(type) {
	case Publish, Settle:
		return nil
	}
	return errPending
}

// unpark runs the steps held back on channel name, in order, until one is
// held back again; a step with a reply that then succeeds shows as a late
// answer.
func (d *simDriver) unpark(name string) {
	for len(d.parked[name]) > 0 {
		op, rest := d.parked[name][0], d.parked[name][1:]
		_, err := d.doNow(name, op)
		if errors.Is(err, errPending) {
			return
		}
		d.parked[name] = rest
		if err == nil && pendingErr(op) != nil {
			d.events = append(d.events, event{kind: evLate, conn: d.connOf[name], ch: name, text: op.String()})
		}
	}
}

// doNow runs a channel operation, or holds it while an alarm blocks the
// connection.
func (d *simDriver) doNow(name string, op chanOp) (reply, error) {
	var rep reply
	var err error
	publish, body := false, ""
	if p, ok := op.(Publish); ok {
		publish, body = true, p.Bodies[0]
	}
	run := func() error {
		rep, err = op.runSim(d.chans[name])
		err = simErr(err)
		return err
	}
	if herr := d.hold(d.connOf[name], publish, body, run); herr != nil && !held(herr) {
		return rep, herr
	}
	return rep, err
}

// admin runs an operator step.
func (d *simDriver) admin(op adminOp) error { return op.runSim(d.b) }

// fault changes the simulated cluster.
func (d *simDriver) fault(op faultOp) error { return op.runSim(d.b) }

// firstRunning is the lowest-numbered running node of a simulated
// cluster, where the drivers' observers connect (0, node 1, on a single
// node).
func firstRunning(b *sim.Broker) int {
	for _, n := range b.Nodes() {
		if n.State == sim.NodeRunning {
			return n.Number
		}
	}
	return 0
}

// held reports whether err is one a held step may end with: the
// broker's error is among the pushes, and a refused step did nothing.
func held(err error) bool {
	var perr errProtocol
	return errors.Is(err, errRefused) || errors.As(err, &perr)
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

func newWireSim(cfg sim.Config, reads Reads) *wireSim {
	b := sim.New(cfg)
	w := &wireSim{b: b, srv: wire.NewServer(b), reads: reads, rng: rand.New(rand.NewPCG(cfg.Seed, 1))}
	if cfg.Nodes > 1 {
		w.nodes = cfg.Nodes
	}
	return w
}

// dial connects a client over a new in-memory pipe.
func (w *wireSim) dial(network, addr string) (net.Conn, error) {
	return w.connect(w.srv.ServeConn)
}

// dialNode connects a client to node n of a cluster over a new
// in-memory pipe.
func (w *wireSim) dialNode(n int) (net.Conn, error) {
	for _, nd := range w.b.Nodes() {
		if nd.Number == n && nd.State != sim.NodeRunning {
			// A node that is down refuses the TCP connection.
			return nil, fmt.Errorf("dialling node %d: %w", n, sim.ErrNodeDown)
		}
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
