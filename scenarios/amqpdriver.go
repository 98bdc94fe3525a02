package scenarios

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// DefaultWindow is how long a broker must stay silent after a step before
// its results are read.
const DefaultWindow = 150 * time.Millisecond

// amqpDriver runs a scenario through amqp091-go: on a real broker, or on
// the simulator over the in-memory wire (see newWireDriver). Against a
// broker, queue and exchange names get a per-run prefix, removed again from
// everything observed, so that runs never collide and leave nothing behind.
type amqpDriver struct {
	url    string
	window time.Duration
	prefix string
	name   string // the scenario's name, for connection names

	// dial connects a client; nil dials TCP.
	dial func(network, addr string) (net.Conn, error)
	// sim is the simulator behind the in-memory wire (nil against a
	// broker); the driver then runs in a synctest bubble, and waits with
	// synctest.Wait instead of a quiet window.
	sim *wireSim

	mu     sync.Mutex
	last   time.Time // latest frame from the broker
	events []event
	chanOf map[string]map[uint16]string // conn → channel number → name

	conns    map[string]*amqp.Connection
	taps     map[string]*tap
	chans    map[string]*amqp.Channel
	observer *amqp.Connection
	obsCh    *amqp.Channel
	queues   []string // prefixed names to delete at the end
	exchs    []string
	policies []string
	// restore holds the rabbitmqctl commands that restore the node's
	// alarm settings, read before the first alarm step; raised says
	// which are changed now (alarm.go).
	restore map[string][]string
	raised  map[string]bool
	// users and opPolicies are the prefixed users and operator policies
	// to delete at the end; topicPerms the topic permissions of users the
	// run did not create (guest), by user and prefixed exchange, to clear.
	users      []string
	opPolicies []string
	topicPerms [][2]string
	version    string
	finished   bool
}

func newAMQPDriver(url, scenario string, window time.Duration) (*amqpDriver, error) {
	if window <= 0 {
		window = DefaultWindow
	}
	var rnd [3]byte
	rand.Read(rnd[:])
	d := &amqpDriver{url: url, window: window, prefix: "s" + hex.EncodeToString(rnd[:]) + ".", name: scenario,
		chanOf: map[string]map[uint16]string{}, conns: map[string]*amqp.Connection{}, taps: map[string]*tap{},
		chans: map[string]*amqp.Channel{}}
	return d, d.start()
}

// start connects the observer.
func (d *amqpDriver) start() error {
	obs, err := amqp.DialConfig(d.url, amqp.Config{Properties: amqp.Table{"connection_name": "amqpsim observer " + d.name}, Dial: d.dial})
	if err != nil {
		return fmt.Errorf("connecting to %s: %w", redact(d.url), err)
	}
	d.observer = obs
	d.version, _ = obs.Properties["version"].(string)
	return nil
}

// redact hides a URL's password.
func redact(url string) string {
	if i := strings.Index(url, "://"); i >= 0 {
		if j := strings.LastIndex(url, "@"); j > i {
			userinfo := url[i+3 : j]
			if k := strings.IndexByte(userinfo, ':'); k >= 0 {
				return url[:i+3] + userinfo[:k] + ":xxx" + url[j:]
			}
		}
	}
	return url
}

// p prefixes a queue or exchange name; the default exchange, empty names
// and the reserved amq.* names are left alone.
func (d *amqpDriver) p(name string) string {
	if name == "" || strings.HasPrefix(name, "amq.") {
		return name
	}
	return d.prefix + name
}

func (d *amqpDriver) unp(s string) string {
	if d.prefix == "" {
		return s
	}
	return strings.ReplaceAll(s, d.prefix, "")
}

// newWireDriver runs a scenario through amqp091-go on a fresh simulator
// over the in-memory wire. It must run inside a testing/synctest bubble.
func newWireDriver(s *Scenario) (*amqpDriver, error) {
	w := newWireSim(s.Seed, s.Version)
	d := &amqpDriver{url: "amqp://guest:guest@amqpsim/", name: s.Name, dial: w.dial, sim: w,
		chanOf: map[string]map[uint16]string{}, conns: map[string]*amqp.Connection{}, taps: map[string]*tap{},
		chans: map[string]*amqp.Channel{}}
	if err := d.start(); err != nil {
		w.close()
		return nil, err
	}
	return d, nil
}

func (d *amqpDriver) connect(o Conn) error {
	conn := o.Name
	t := newTap(conn, func(e event, ch uint16) {
		d.mu.Lock()
		defer d.mu.Unlock()
		if e.kind != evConnClose && e.kind != evBlocked && e.kind != evUnblocked {
			e.ch = d.chanOf[conn][ch]
		}
		e.text, e.exchange, e.key = d.unp(e.text), d.unp(e.exchange), d.unp(e.key)
		e.headers = d.headers(e.headers)
		d.events = append(d.events, e)
	}, func(at time.Time) {
		d.mu.Lock()
		d.last = at
		d.mu.Unlock()
	})
	cfg := amqp.Config{
		Properties: amqp.Table{"connection_name": "amqpsim " + d.name + " " + conn},
		Dial: func(network, addr string) (net.Conn, error) {
			var c net.Conn
			var err error
			if d.dial != nil {
				c, err = d.dial(network, addr)
			} else {
				c, err = net.DialTimeout(network, addr, 10*time.Second)
			}
			if err != nil {
				return nil, err
			}
			return &tapConn{Conn: c, t: t}, nil
		},
	}
	u, err := d.userURL(o)
	if err != nil {
		return err
	}
	c, err := amqp.DialConfig(u, cfg)
	if err != nil {
		if r := d.amqpRefusal(conn, err); r != nil {
			return r
		}
		return fmt.Errorf("connecting to %s: %w", redact(u), err)
	}
	d.conns[conn], d.taps[conn] = c, t
	d.mu.Lock()
	d.chanOf[conn] = map[uint16]string{}
	d.mu.Unlock()
	return nil
}

func (d *amqpDriver) openChannel(conn, name string) error {
	c := d.conns[conn]
	if c == nil || c.IsClosed() { // nil: the broker refused the connection
		return errRefused
	}
	ch, err := c.Channel()
	if err != nil {
		return amqpErr(err)
	}
	d.chans[name] = ch
	d.mu.Lock()
	d.chanOf[conn][d.taps[conn].opened()] = name
	d.mu.Unlock()
	return nil
}

func (d *amqpDriver) closeChannel(name string) error {
	ch := d.chans[name]
	if ch.IsClosed() {
		return errRefused
	}
	return amqpErr(ch.Close())
}

func (d *amqpDriver) closeConn(name string) error {
	c := d.conns[name]
	if c == nil || c.IsClosed() {
		return errRefused
	}
	return amqpErr(c.Close())
}

// advance moves the simulator's virtual clock, or lets real time pass: a
// broker has no virtual clock.
func (d *amqpDriver) advance(dur time.Duration) {
	if d.sim != nil {
		d.sim.advance(dur)
		return
	}
	time.Sleep(dur)
}

// settle returns the events decoded since the last call. On the simulator
// it first waits until the bubble is idle: every frame the server sent has
// been read and decoded. Against a broker it waits, when asked, until no
// frame has arrived for the window: a broker offers no exact barrier.
func (d *amqpDriver) settle(wait bool) []event {
	if d.sim != nil {
		d.sim.wait()
		wait = false
	}
	start := time.Now()
	for wait {
		d.mu.Lock()
		last := d.last
		d.mu.Unlock()
		if last.Before(start) {
			last = start
		}
		left := time.Until(last.Add(d.window))
		if left <= 0 {
			break
		}
		time.Sleep(left)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	evs := d.events
	d.events = nil
	return evs
}

// amqpErr classifies an amqp091-go error: refused locally because the
// channel or connection is closed, or a broker's protocol error.
func amqpErr(err error) error {
	var aerr *amqp.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &aerr) && aerr.Server:
		return errProtocol{err}
	case errors.Is(err, amqp.ErrClosed):
		return errRefused
	}
	return err
}

// table converts a scenario table to amqp091-go's.
func table(t protocol.Table) amqp.Table {
	if t == nil {
		return nil
	}
	out := amqp.Table{}
	for k, v := range t {
		out[k] = value(v)
	}
	return out
}

func value(v any) any {
	switch x := v.(type) {
	case protocol.Table:
		return table(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = value(e)
		}
		return out
	case protocol.Decimal:
		return amqp.Decimal{Scale: x.Scale, Value: x.Value}
	}
	return v
}

// queueArgs converts a queue's arguments and prefixes the names they refer
// to as steps' names are: the dead-letter exchange, and the dead-letter
// routing key when it routes through the default exchange (whose keys are
// queue names).
func (d *amqpDriver) queueArgs(args protocol.Table) amqp.Table {
	t := table(args)
	if x, ok := t["x-dead-letter-exchange"].(string); ok {
		t["x-dead-letter-exchange"] = d.p(x)
		if k, ok := t["x-dead-letter-routing-key"].(string); ok && x == "" {
			t["x-dead-letter-routing-key"] = d.p(k)
		}
	}
	return t
}

// exchangeArgs converts an exchange's arguments and prefixes the exchange
// alternate-exchange names.
func (d *amqpDriver) exchangeArgs(args protocol.Table) amqp.Table {
	t := table(args)
	if x, ok := t["alternate-exchange"].(string); ok {
		t["alternate-exchange"] = d.p(x)
	}
	return t
}

// headers converts a message's headers, as amqp091-go or the tap decoded
// them, to the protocol package's types, with the run's prefix removed from
// every string (x-death names queues and routing keys). An empty table is
// nil.
func (d *amqpDriver) headers(t protocol.Table) protocol.Table {
	if len(t) == 0 {
		return nil
	}
	return d.header(t).(protocol.Table)
}

func (d *amqpDriver) header(v any) any {
	switch x := v.(type) {
	case string:
		return d.unp(x)
	case amqp.Table:
		return d.header(protocol.Table(x))
	case protocol.Table:
		out := make(protocol.Table, len(x))
		for k, e := range x {
			out[k] = d.header(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = d.header(e)
		}
		return out
	case amqp.Decimal:
		return protocol.Decimal{Scale: x.Scale, Value: x.Value}
	}
	return v
}

func (d *amqpDriver) do(name string, op Op) (reply, error) {
	ch := d.chans[name]
	var rep reply
	if ch.IsClosed() {
		return rep, errRefused
	}
	var err error
	switch o := op.(type) {
	case DeclareQueue:
		var q amqp.Queue
		if o.Passive {
			q, err = ch.QueueDeclarePassive(d.p(o.Queue), o.Durable, o.AutoDelete, o.Exclusive, o.NoWait, d.queueArgs(o.Args))
		} else {
			q, err = ch.QueueDeclare(d.p(o.Queue), o.Durable, o.AutoDelete, o.Exclusive, o.NoWait, d.queueArgs(o.Args))
			if err == nil {
				d.queues = append(d.queues, q.Name)
			}
		}
		rep.queue, rep.ready, rep.consumers = d.unp(q.Name), q.Messages, q.Consumers
	case DeclareExchange:
		if o.Passive {
			err = ch.ExchangeDeclarePassive(d.p(o.Exchange), o.Kind, o.Durable, o.AutoDelete, o.Internal, false, d.exchangeArgs(o.Args))
		} else {
			if x := d.p(o.Exchange); x != "" && !strings.HasPrefix(x, "amq.") {
				d.exchs = append(d.exchs, x) // never the broker's own
			}
			err = ch.ExchangeDeclare(d.p(o.Exchange), o.Kind, o.Durable, o.AutoDelete, o.Internal, false, d.exchangeArgs(o.Args))
		}
	case DeleteQueue:
		rep.count, err = ch.QueueDelete(d.p(o.Queue), o.IfUnused, o.IfEmpty, false)
	case DeleteExchange:
		err = ch.ExchangeDelete(d.p(o.Exchange), o.IfUnused, false)
	case Bind:
		err = ch.QueueBind(d.p(o.Queue), o.Key, d.p(o.Exchange), false, table(o.Args))
	case Unbind:
		err = ch.QueueUnbind(d.p(o.Queue), o.Key, d.p(o.Exchange), table(o.Args))
	case Purge:
		rep.count, err = ch.QueuePurge(d.p(o.Queue), false)
	case Qos:
		err = ch.Qos(o.Count, o.Size, o.Global)
	case Consume:
		var dl <-chan amqp.Delivery
		dl, err = ch.Consume(d.p(o.Queue), o.Tag, o.NoAck, o.Exclusive, false, false, table(o.Args))
		if err == nil {
			// Deliveries are observed on the wire; the library's copies
			// are drained so that it never blocks.
			go func() {
				for range dl {
				}
			}()
		}
	case Cancel:
		err = ch.Cancel(o.Tag, false)
	case Publish:
		key := o.Key
		if o.Exchange == "" {
			key = d.p(key)
		}
		err = ch.PublishWithContext(context.Background(), d.p(o.Exchange), key, o.Mandatory, o.Immediate, publishing(o))
	case Confirm:
		err = ch.Confirm(false)
	case ExchangeBind:
		err = ch.ExchangeBind(d.p(o.Destination), o.Key, d.p(o.Source), false, table(o.Args))
	case ExchangeUnbind:
		err = ch.ExchangeUnbind(d.p(o.Destination), o.Key, d.p(o.Source), false, table(o.Args))
	case Tx:
		err = o.call(ch.Tx, ch.TxCommit, ch.TxRollback)
	case Get:
		var m amqp.Delivery
		m, rep.got, err = ch.Get(d.p(o.Queue), o.NoAck)
		rep.get = event{kind: evDeliver, tag: m.DeliveryTag, redelivered: m.Redelivered, body: string(m.Body), left: int(m.MessageCount),
			exchange: d.unp(m.Exchange), key: d.unp(m.RoutingKey), headers: d.headers(protocol.Table(m.Headers))}
	case Settle:
		switch o.Method {
		case "ack":
			err = ch.Ack(o.Tag, o.Multiple)
		case "nack":
			err = ch.Nack(o.Tag, o.Multiple, o.Requeue)
		default:
			err = ch.Reject(o.Tag, o.Requeue)
		}
	case Recover:
		err = ch.Recover(o.Requeue)
	case Flow:
		err = ch.Flow(o.Active)
	default:
		return rep, fmt.Errorf("the broker driver cannot run %T", op)
	}
	return rep, amqpErr(err)
}

func publishing(o Publish) amqp.Publishing {
	p := o.Props
	return amqp.Publishing{
		Headers: table(p.Headers), ContentType: p.ContentType, ContentEncoding: p.ContentEncoding,
		DeliveryMode: p.DeliveryMode, Priority: p.Priority, CorrelationId: p.CorrelationID, ReplyTo: p.ReplyTo,
		Expiration: p.Expiration, MessageId: p.MessageID, Type: p.Type, UserId: p.UserID, AppId: p.AppID,
		Body: []byte(o.Bodies[0]),
	}
}

// queueState observes a queue by a passive declare on the observer
// connection. A real broker does not tell a client the unacked count.
func (d *amqpDriver) queueState(q string) (queueState, error) {
	if d.obsCh == nil || d.obsCh.IsClosed() {
		ch, err := d.observer.Channel()
		if err != nil {
			return queueState{}, err
		}
		d.obsCh = ch
	}
	info, err := d.obsCh.QueueDeclarePassive(d.p(q), false, false, false, false, nil)
	var aerr *amqp.Error
	if errors.As(err, &aerr) {
		switch aerr.Code {
		case amqp.NotFound:
			return queueState{status: "not found"}, nil
		case amqp.ResourceLocked:
			return queueState{status: "locked"}, nil
		}
	}
	if err != nil {
		return queueState{}, err
	}
	st := queueState{ready: info.Messages, consumers: info.Consumers, unacked: -1}
	if d.sim != nil {
		if st.unacked, err = d.sim.unacked(q); err != nil {
			return queueState{}, err
		}
	}
	return st, nil
}

// finish closes the scenario's connections and deletes every queue and
// exchange the run declared.
func (d *amqpDriver) finish() error {
	if d.finished {
		return nil
	}
	d.finished = true
	// A blocked connection's close would never be read: alarms first.
	var alarmErr error
	if d.sim != nil {
		d.sim.b.SetAlarm(sim.AlarmMemory|sim.AlarmDisk, false)
	} else {
		alarmErr = d.clearAlarms()
	}
	for _, c := range d.conns {
		if !c.IsClosed() {
			c.Close()
		}
	}
	if d.sim != nil {
		// Nothing to delete: the broker goes with the run.
		err := d.observer.Close()
		d.sim.close()
		return err
	}
	var ch *amqp.Channel
	reopen := func() bool {
		if ch != nil && !ch.IsClosed() {
			return true
		}
		var err error
		ch, err = d.observer.Channel()
		return err == nil
	}
	for _, q := range d.queues {
		if reopen() {
			ch.QueueDelete(q, false, false, false)
		}
	}
	for _, x := range d.exchs {
		if reopen() {
			ch.ExchangeDelete(x, false, false)
		}
	}
	for _, p := range d.policies {
		_ = rabbitmqctl("clear_policy", "-p", "/", p) // the scenario may have cleared it
	}
	for _, p := range d.opPolicies {
		_ = rabbitmqctl("clear_operator_policy", "-p", "/", p)
	}
	for _, u := range d.users {
		_ = rabbitmqctl("delete_user", u) // the scenario may have deleted it
	}
	for _, tp := range d.topicPerms {
		_ = rabbitmqctl("clear_topic_permissions", "-p", "/", tp[0], tp[1])
	}
	if err := d.observer.Close(); err != nil {
		return err
	}
	return alarmErr
}
