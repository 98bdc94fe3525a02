package sim

import (
	"fmt"
	"slices"

	"github.com/amqpsim/amqpsim/channel"
	"github.com/amqpsim/amqpsim/consumer"
	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/queue"
)

// ConnectOptions describe a client connection.
type ConnectOptions struct {
	Name  string // shown in the trace
	Vhost string // "" means "/"
	User  string // "" means "guest"
	// NoCancelNotify is set for clients that do not announce the
	// consumer_cancel_notify capability (amqp091-go does announce it): they
	// are not told when the broker cancels their consumer.
	NoCancelNotify bool
	// Sink, when set, receives everything the broker pushes to this
	// connection, in order, under the broker's lock: it must not call back
	// into the broker. The wire server uses it. Without a sink, pushes are
	// kept for Consumer.Next, Channel.Returns and the like.
	Sink func(Push)
	// ChannelMax is the highest channel number Channel may allocate; 0
	// means 2047, RabbitMQ's default.
	ChannelMax uint16
}

// Connection is one client connection.
type Connection struct {
	b        *Broker
	id       uint64
	name     string
	vhost    *vhost
	user     string
	opts     ConnectOptions
	channels map[uint16]*Channel
	closed   error
}

// Connect opens a connection to vhost "/" as guest; it panics only if the
// broker has no "/" vhost, which New always creates.
func (b *Broker) Connect(name string) *Connection {
	c, err := b.Dial(ConnectOptions{Name: name})
	if err != nil {
		panic(err)
	}
	return c
}

// Dial opens a connection with options. It fails for a missing vhost with
// RabbitMQ's 530 NOT_ALLOWED.
func (b *Broker) Dial(o ConnectOptions) (*Connection, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if o.Vhost == "" {
		o.Vhost = "/"
	}
	if o.User == "" {
		o.User = "guest"
	}
	if o.ChannelMax == 0 {
		o.ChannelMax = 2047
	}
	v, ok := b.vhosts[o.Vhost]
	if !ok {
		return nil, protocol.Errorf(protocol.NotAllowed, protocol.ConnectionOpen, "vhost %s not found", o.Vhost)
	}
	b.nextConnID++
	if o.Name == "" {
		o.Name = fmt.Sprintf("conn%d", b.nextConnID)
	}
	c := &Connection{b: b, id: b.nextConnID, name: o.Name, vhost: v, user: o.User, opts: o, channels: map[uint16]*Channel{}}
	b.conns = append(b.conns, c)
	b.event(c, 0, "connection.open", "vhost=%s", o.Vhost)
	return c, nil
}

// Name returns the connection's name.
func (c *Connection) Name() string { return c.name }

// Err returns why the connection closed, or nil while it is open.
func (c *Connection) Err() error {
	c.b.mu.Lock()
	defer c.b.mu.Unlock()
	return c.closed
}

// Channel opens the lowest free channel number.
func (c *Connection) Channel() (*Channel, error) {
	c.b.mu.Lock()
	defer c.b.mu.Unlock()
	if err := c.check(); err != nil {
		return nil, err
	}
	for id := uint16(1); id <= c.opts.ChannelMax && id != 0; id++ {
		if _, used := c.channels[id]; !used {
			return c.openChannel(id), nil
		}
	}
	return nil, protocol.Errorf(protocol.NotAllowed, protocol.ChannelOpen, "number of channels opened (%d) has reached the negotiated channel_max (%d)", len(c.channels), c.opts.ChannelMax)
}

// OpenChannel opens channel id, as channel.open does; a second open of the
// same number is RabbitMQ's 504 CHANNEL_ERROR, which closes the connection.
func (c *Connection) OpenChannel(id uint16) (*Channel, error) {
	c.b.mu.Lock()
	defer c.b.mu.Unlock()
	if err := c.check(); err != nil {
		return nil, err
	}
	if _, used := c.channels[id]; used {
		return nil, c.fail(protocol.Errorf(protocol.ChannelError, protocol.ChannelOpen, "second 'channel.open' seen"))
	}
	if id == 0 || id > c.opts.ChannelMax {
		return nil, c.fail(protocol.Errorf(protocol.ChannelError, protocol.ChannelOpen, "channel number %d out of range", id))
	}
	return c.openChannel(id), nil
}

func (c *Connection) openChannel(id uint16) *Channel {
	ch := &Channel{conn: c, b: c.b, id: id, core: channel.New(id), consumers: map[string]*Consumer{}, groups: map[*queue.Queue]*consumer.Group{}}
	c.channels[id] = ch
	c.b.event(c, id, "channel.open", "")
	return ch
}

// Close closes the connection as connection.close does: every channel
// closes, requeueing its unacked deliveries, and exclusive queues go.
func (c *Connection) Close() error {
	c.b.mu.Lock()
	defer c.b.mu.Unlock()
	if err := c.check(); err != nil {
		return err
	}
	c.b.event(c, 0, "connection.close", "")
	c.shutdown(nil)
	c.b.flush()
	return nil
}

// CloseConnection closes a connection from the broker's side, as
// rabbitmqctl close_connection does: 320 CONNECTION_FORCED with reason.
func (b *Broker) CloseConnection(c *Connection, reason string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if c.closed != nil {
		return
	}
	err := protocol.Errorf(protocol.ConnectionForced, protocol.Method{}, "%s", reason)
	c.push(ConnectionClose{Err: err})
	c.shutdown(err)
	b.flush()
}

func (c *Connection) check() error {
	if c.closed != nil {
		return c.closed
	}
	return nil
}

// fail closes the connection for a hard error and returns the error.
func (c *Connection) fail(err *protocol.Error) error {
	c.b.event(c, 0, "connection.close", "%d %s", err.Code, err.Text)
	c.push(ConnectionClose{Err: err})
	c.shutdown(err)
	return err
}

// shutdown closes every channel in number order, then deletes the
// connection's exclusive queues; caller holds the lock.
func (c *Connection) shutdown(cause *protocol.Error) {
	var err error = &closedError{what: "connection " + c.name}
	if cause != nil {
		err = &closedError{what: "connection " + c.name, cause: cause}
	}
	c.closed = err
	ids := make([]uint16, 0, len(c.channels))
	for id := range c.channels {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	// Every channel stops taking deliveries before the first one requeues:
	// a message that a requeue pushes out of a drop-head queue must not be
	// dead-lettered to a consumer on a later channel of the closing
	// connection. allow refuses closed channels.
	for _, id := range ids {
		c.channels[id].closed = err
	}
	for _, id := range ids {
		c.channels[id].shutdown(err)
	}
	var exclusive []string
	for name, q := range c.vhost.queues {
		if q.Exclusive && q.Owner == c {
			exclusive = append(exclusive, name)
		}
	}
	slices.Sort(exclusive)
	for _, name := range exclusive {
		c.b.deleteQueue(c.vhost.queues[name])
	}
	c.b.conns = slices.DeleteFunc(c.b.conns, func(x *Connection) bool { return x == c })
}

// push hands a push to the connection's sink, or keeps it for the
// in-process readers. Deliveries take a shorter path (Broker.deliver) that
// boxes nothing on the hot path.
func (c *Connection) push(p Push) {
	c.b.tracePush(c, p)
	if c.opts.Sink != nil {
		c.opts.Sink(p)
		return
	}
	switch p := p.(type) {
	case Return:
		if ch := c.channels[p.Channel]; ch != nil {
			ch.returns = append(ch.returns, p)
		}
	case Confirm:
		if ch := c.channels[p.Channel]; ch != nil {
			ch.confirms = append(ch.confirms, p)
		}
	case Cancel:
		if ch := c.channels[p.Channel]; ch != nil {
			ch.cancels = append(ch.cancels, p.ConsumerTag)
		}
	}
}
