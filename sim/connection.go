package sim

import (
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/amqpsim/amqpsim/protocol"
)

// ConnectOptions describe a client connection.
type ConnectOptions struct {
	Name  string // shown in the trace
	Vhost string // "" means Config.DefaultVhost, "/" by default
	// User and Password log in, as connection.start-ok does (see
	// Broker.Authenticate). User "" is the default user, trusted without
	// a password: the in-process API's shortcut.
	User     string
	Password string
	// LocalAddr is the address the client connected to, for the loopback
	// rule of Config.LoopbackUsers; the zero value (in-process and
	// in-memory connections) counts as loopback.
	LocalAddr netip.Addr
	// NoCancelNotify is set for clients that do not announce the
	// consumer_cancel_notify capability (amqp091-go does announce it): they
	// are not told when the broker cancels their consumer.
	NoCancelNotify bool
	// NoBlockedNotify is set for clients that do not announce the
	// connection.blocked capability: an alarm blocks them without telling
	// them (Broker.SetAlarm).
	NoBlockedNotify bool
	// ChannelMax is the negotiated channel_max: the most channels the
	// connection may have open at once; 0 means 2047, RabbitMQ's default.
	ChannelMax uint16
	// Shell is how the client reads and writes the connection: the
	// knobs a shell that serves a socket sets (the wire server sets them
	// all), none in process unless asked.
	Shell ShellOptions
	// ClientProperties, PeerName ("host:port" of the client's end of the
	// socket), SockName (the broker's end), AuthMechanism, FrameMax and
	// Heartbeat (the negotiated ones) describe the connection for
	// inspection (Connection.Info, the management API); the broker does
	// not use them.
	ClientProperties   Table
	PeerName, SockName string
	AuthMechanism      string
	FrameMax           uint32
	Heartbeat          time.Duration
	// Direct marks a connection a plugin opens inside the broker for a
	// user it has authenticated itself (the management API's, for its
	// declare, delete and get), as RabbitMQ's direct connections: no
	// password is checked, and it is not a client's network connection.
	Direct bool
	// Node is the number of the cluster node the client connected to
	// (Config.Nodes); 0 means node 1. A Dial to a node that is not
	// running fails with ErrNodeDown.
	Node int
}

// DefaultChannelMax is RabbitMQ's default channel_max.
const DefaultChannelMax = 2047

// Connection is one client connection.
type Connection struct {
	b     *Broker
	id    uint64
	name  string
	vhost *vhost
	user  string
	// tags are the user's tags at login: RabbitMQ's connection keeps the
	// #user record it authenticated, so a tag added or removed later
	// changes nothing for it (checkUserID).
	tags     []string
	opts     ConnectOptions
	channels map[uint16]*Channel // open and closing channels
	out      outbox
	// confirmingOrder are the channels in confirm mode, in the order they
	// entered it; pendingConfirms counts their confirms not yet sent.
	confirmingOrder []*Channel
	pendingConfirms int
	// unsent counts deliveries not yet taken or written; waiting are the
	// queues that found the connection full (flow.go).
	unsent  int
	waiting []*brokerQueue
	// blocked: a resource alarm stopped the connection's publishes;
	// held are the calls it holds meanwhile (ConnectOptions.
	// HoldWhenBlocked, mailbox.go).
	blocked bool
	held    []heldCall
	closed  error
	// connectedAt is the virtual time it opened.
	connectedAt time.Time
	// node is the cluster node it is attached to (ConnectOptions.Node).
	node int
}

// Connect opens a connection to the default vhost as the default user; it
// panics if they are gone (DeleteVhost, DeleteUser, ClearPermissions).
func (b *Broker) Connect(name string) *Connection {
	c, err := b.Dial(ConnectOptions{Name: name})
	if err != nil {
		panic(err)
	}
	return c
}

// Dial opens a connection with options, as start-ok and connection.open
// do. A refused login is a *LoginError (see Broker.Authenticate); a
// missing vhost, or one the user has no permissions in, RabbitMQ's 530
// NOT_ALLOWED ("vhost v not found", "access to vhost 'v' refused for user
// 'u'").
func (b *Broker) Dial(o ConnectOptions) (*Connection, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if o.Node == 0 {
		o.Node = 1
	}
	if err := b.topo.Check(o.Node); err != nil {
		return nil, err
	} else if s := b.topo.State(o.Node); s != NodeRunning {
		return nil, fmt.Errorf("%w: node %d (%s) is %v", ErrNodeDown, o.Node, b.topo.Name(o.Node), s)
	}
	if o.Vhost == "" {
		o.Vhost = b.cfg.DefaultVhost
	}
	if o.User == "" {
		o.User = b.cfg.DefaultUser
		if _, ok := b.users[o.User]; !ok {
			return nil, &LoginError{User: o.User, Reason: fmt.Sprintf("user '%s' - invalid credentials", o.User)}
		}
	} else if o.Direct {
		if _, ok := b.users[o.User]; !ok {
			return nil, &LoginError{User: o.User, Reason: fmt.Sprintf("user '%s' - invalid credentials", o.User)}
		}
	} else if _, err := b.authenticate(o.User, o.Password, o.LocalAddr); err != nil {
		return nil, err
	}
	if o.ChannelMax == 0 {
		o.ChannelMax = DefaultChannelMax
	}
	v, err := b.checkVhostAccess(o.User, o.Vhost)
	if err != nil {
		return nil, err
	}
	b.nextConnID++
	if o.Name == "" {
		o.Name = fmt.Sprintf("conn%d", b.nextConnID)
	}
	c := &Connection{b: b, id: b.nextConnID, name: o.Name, vhost: v, user: o.User, tags: slices.Clone(b.users[o.User].tags),
		opts: o, channels: map[uint16]*Channel{}, connectedAt: b.now, node: o.Node}
	c.out.notify = o.Shell.Notify
	b.conns = append(b.conns, c)
	b.record(connEvent(EventConnectionOpen, c, 0))
	return c, nil
}

// Name returns the connection's name.
func (c *Connection) Name() string { return c.name }

// Err returns why the connection closed, or nil while it is open.
func (c *Connection) Err() error {
	c.b.mu.Lock()
	defer c.b.mu.unlockView()
	return c.closed
}

// Channel opens the lowest free channel number, as a client library
// allocates one. It fails without contacting the broker when every number
// up to ChannelMax is taken.
func (c *Connection) Channel() (*Channel, error) {
	c.b.mu.Lock()
	defer c.b.mu.Unlock()
	if err := c.check(); err != nil {
		return nil, err
	}
	for id := uint16(1); id <= c.opts.ChannelMax && id != 0; id++ {
		if _, used := c.channels[id]; !used {
			return c.openChannel(id)
		}
	}
	return nil, fmt.Errorf("sim: connection %s: every channel number up to channel_max %d is taken", c.name, c.opts.ChannelMax)
}

// OpenChannel opens channel id, as channel.open does. RabbitMQ closes the
// connection when the channel is open or still closing (504 CHANNEL_ERROR
// "second 'channel.open' seen") and when channel_max channels are open
// (530 NOT_ALLOWED, rabbit_reader:create_channel, which counts channels
// and does not look at the number).
func (c *Connection) OpenChannel(id uint16) (*Channel, error) {
	c.b.mu.Lock()
	defer c.b.mu.Unlock()
	if err := c.check(); err != nil {
		return nil, err
	}
	if id == 0 {
		return nil, fmt.Errorf("sim: channel 0 is the connection's own")
	}
	if _, used := c.channels[id]; used {
		return nil, c.fail(protocol.Errorf(protocol.ChannelError, protocol.ChannelOpen, "second 'channel.open' seen"))
	}
	return c.openChannel(id)
}

// openChannel opens channel id, which is free; caller holds the lock.
func (c *Connection) openChannel(id uint16) (*Channel, error) {
	if len(c.channels) >= int(c.opts.ChannelMax) {
		return nil, c.fail(protocol.Errorf(protocol.NotAllowed, protocol.Method{},
			"number of channels opened (%d) has reached the negotiated channel_max (%d)", len(c.channels), c.opts.ChannelMax))
	}
	ch := newChannel(c, id)
	c.channels[id] = ch
	c.b.record(connEvent(EventChannelOpen, c, id))
	return ch, nil
}

// Close closes the connection as connection.close does: every channel
// closes, requeueing its unacked deliveries, and exclusive queues go. A
// connection that holds its calls while an alarm blocks it
// (HoldWhenBlocked) holds this one too (ErrQueued).
func (c *Connection) Close() error {
	c.b.mu.Lock()
	defer c.b.mu.Unlock()
	if err := c.check(); err != nil {
		return err
	}
	if c.holding() {
		c.held = append(c.held, heldCall{})
		return ErrQueued
	}
	c.close()
	return nil
}

// close is Close; caller holds the lock.
func (c *Connection) close() {
	c.b.record(connEvent(EventConnectionClose, c, 0))
	c.shutdown(nil)
	c.b.flush()
}

// CloseWithError closes the connection from the broker's side with err, as
// RabbitMQ does for a connection (hard) error or `rabbitmqctl
// close_connection` (320 CONNECTION_FORCED, see Forced): the client is
// pushed a connection.close carrying err's code, text and method, every
// channel closes with its unacked deliveries requeued, and the
// connection's exclusive queues are deleted. It reports false, doing
// nothing, when the connection is already closed or err is nil.
//
// The wire server uses it for the protocol errors it detects in frames;
// tests use it to inject faults.
func (c *Connection) CloseWithError(err *Error) bool {
	c.b.mu.Lock()
	defer c.b.mu.Unlock()
	if c.closed != nil || err == nil {
		return false
	}
	c.fail(err)
	c.b.flush()
	return true
}

// Forced is the error `rabbitmqctl close_connection` closes a connection
// with: 320 CONNECTION_FORCED and the operator's reason.
func Forced(reason string) *Error {
	return protocol.Errorf(protocol.ConnectionForced, protocol.Method{}, "%s", reason)
}

func (c *Connection) check() error {
	if c.closed != nil {
		return c.closed
	}
	return nil
}

// fail closes the connection for a hard error and returns the error.
func (c *Connection) fail(err *protocol.Error) error {
	e := connEvent(EventConnectionClose, c, 0)
	e.Err = err
	c.b.record(e)
	c.push(Push{Method: protocol.ConnectionClose, Err: err})
	c.shutdown(err)
	return err
}

// drop closes the connection as its node going down does: with err
// pushed as connection.close (a stop), or without a frame when err is
// nil (a crash), the shell closing the transport at once (Push.Drop).
func (c *Connection) drop(err *protocol.Error) {
	e := connEvent(EventConnectionClose, c, 0)
	e.Err, e.Reason = err, "node down"
	c.b.record(e)
	c.push(Push{Method: protocol.ConnectionClose, Err: err, Drop: true})
	c.shutdown(err)
}

// shutdown closes every channel in number order, then deletes the
// connection's exclusive queues; caller holds the lock.
func (c *Connection) shutdown(cause *protocol.Error) {
	var err error = &closedError{what: "connection " + c.name}
	if cause != nil {
		err = &closedError{what: "connection " + c.name, cause: cause}
	}
	c.closed = err
	c.held = nil
	ids := make([]uint16, 0, len(c.channels))
	for id, ch := range c.channels {
		if ch.closed == nil {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	// Every channel stops taking deliveries before the first one requeues:
	// a message that a requeue pushes out of a drop-head queue must not be
	// dead-lettered to a consumer on a later channel of the closing
	// connection. canSend refuses closed channels.
	chans := make([]*Channel, len(ids))
	for i, id := range ids {
		chans[i] = c.channels[id]
		chans[i].closed = err
	}
	for _, ch := range chans {
		ch.shutdown(err)
	}
	clear(c.channels)
	var exclusive []string
	for name, q := range c.vhost.queues {
		if q.Options().Exclusive && q.owner == c {
			exclusive = append(exclusive, name)
		}
	}
	slices.Sort(exclusive)
	for _, name := range exclusive {
		c.b.deleteQueue(c.vhost.queues[name])
	}
	c.b.conns = slices.DeleteFunc(c.b.conns, func(x *Connection) bool { return x == c })
}

// Channels returns the connection's open channels, by channel number.
func (c *Connection) Channels() []*Channel {
	c.b.mu.Lock()
	defer c.b.mu.unlockView()
	return c.channelsByID()
}

func sortChannels(chs []*Channel) {
	slices.SortFunc(chs, func(a, b *Channel) int { return int(a.id) - int(b.id) })
}

// Connections returns the open connections, in the order they were made.
func (b *Broker) Connections() []*Connection {
	b.mu.Lock()
	defer b.mu.unlockView()
	return slices.Clone(b.conns)
}
