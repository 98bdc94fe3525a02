package scenarios

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"regexp"
	"slices"
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
	ctl    string // the broker's rabbitmqctl, a command line (RecordOptions.Rabbitmqctl)
	window time.Duration
	prefix string
	name   string // the scenario's name, for connection names

	// dial connects a client; nil dials TCP.
	dial func(network, addr string) (net.Conn, error)
	// sim is the simulator behind the in-memory wire (nil against a
	// broker); the driver then runs in a synctest bubble, and waits with
	// synctest.Wait instead of a quiet window.
	sim *wireSim
	// cluster controls the real cluster a cluster scenario is recorded
	// on (nil otherwise); its nodes' URLs replace url.
	cluster *clusterCtl

	mu sync.Mutex
	// closedBy names the connections the broker sent connection.close;
	// lost those that ended with an error of the client's own (watch).
	closedBy map[string]bool
	lost     map[string]string // → dropCause
	last     time.Time         // latest frame from the broker
	events   []event
	chanOf   map[string]map[uint16]string // conn → channel number → name
	// lateDone is, per channel, closed once its latest pending method's
	// late answer is in events: the next one's waits for it (do).
	lateDone map[string]chan struct{}

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
	// which are changed now (op_alarm.go).
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

func newAMQPDriver(url, ctl, scenario string, window time.Duration, cluster *clusterCtl) (*amqpDriver, error) {
	if window <= 0 {
		window = DefaultWindow
	}
	if ctl == "" {
		ctl = os.Getenv("RABBITMQCTL")
	}
	var rnd [3]byte
	rand.Read(rnd[:])
	d := &amqpDriver{url: url, ctl: ctl, window: window, prefix: "s" + hex.EncodeToString(rnd[:]) + ".", name: scenario,
		chanOf: map[string]map[uint16]string{}, conns: map[string]*amqp.Connection{}, taps: map[string]*tap{},
		chans: map[string]*amqp.Channel{}, cluster: cluster}
	return d, d.start()
}

// start connects the observer.
func (d *amqpDriver) start() error {
	if err := d.observe(); err != nil {
		return err
	}
	d.version, _ = d.observer.Properties["version"].(string)
	return nil
}

// observe connects the observer, unless it is connected: on a cluster, to
// the lowest-numbered running node, as the simulator's driver does.
func (d *amqpDriver) observe() error {
	if d.observer != nil && !d.observer.IsClosed() {
		return nil
	}
	d.obsCh = nil
	u, dial := d.url, d.dial
	switch {
	case d.cluster != nil:
		u = d.cluster.urls[d.cluster.view.firstUp()-1]
	case d.sim != nil && d.sim.nodes > 1:
		n := firstRunning(d.sim.b)
		dial = func(network, addr string) (net.Conn, error) { return d.sim.dialNode(n) }
	}
	obs, err := amqp.DialConfig(u, amqp.Config{Properties: amqp.Table{"connection_name": "amqpsim observer " + d.name}, Dial: dial})
	if err != nil {
		return fmt.Errorf("connecting to %s: %w", redact(u), err)
	}
	d.observer = obs
	return nil
}

// closeObserver closes the observer's connection, unless a node going
// down closed it.
func (d *amqpDriver) closeObserver() error {
	if d.observer.IsClosed() {
		return nil
	}
	return d.observer.Close()
}

// clustered reports whether the driver runs a cluster scenario.
func (d *amqpDriver) clustered() bool { return d.cluster != nil || d.sim != nil && d.sim.nodes > 1 }

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
func newWireDriver(s *Scenario, reads Reads) (*amqpDriver, error) {
	cfg := sim.Config{Seed: s.Seed, Version: s.Version}
	s.Cluster.config(&cfg)
	s.Settings.config(&cfg)
	b, err := sim.Open(cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Path, err)
	}
	w := newWireSim(b, cfg, reads)
	d := &amqpDriver{url: "amqp://guest:guest@amqpsim/", name: s.Name, dial: w.dial, sim: w,
		chanOf: map[string]map[uint16]string{}, conns: map[string]*amqp.Connection{}, taps: map[string]*tap{},
		chans: map[string]*amqp.Channel{}}
	if err := d.start(); err != nil {
		w.close()
		return nil, err
	}
	return d, nil
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
	d.dropped()
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

// do runs a channel operation through amqp091-go. On a cluster, a method
// the broker has not answered by the time the simulator behind the wire
// is idle, or within the pending time on a real cluster, is pending: its
// call goes on in the background, and a late success shows as an event.
func (d *amqpDriver) do(name string, op chanOp) (reply, error) {
	ch := d.chans[name]
	if ch.IsClosed() {
		return reply{}, errRefused
	}
	if !d.clustered() || asyncOp(op) {
		// A publish or a settlement asks for no answer: amqp091-go
		// returns once it is written, on a cluster too, and the next
		// body of a publish goes out before a refusal of this one comes
		// back, as against a broker.
		rep, err := op.runAMQP(d, ch)
		return rep, amqpErr(err)
	}
	type answer struct {
		rep reply
		err error
	}
	done := make(chan answer, 1)
	go func() {
		rep, err := op.runAMQP(d, ch)
		done <- answer{rep, err}
	}()
	if d.sim != nil {
		d.sim.wait()
		select {
		case a := <-done:
			return a.rep, amqpErr(a.err)
		default:
		}
	} else {
		select {
		case a := <-done:
			return a.rep, amqpErr(a.err)
		case <-time.After(d.cluster.pending):
		}
	}
	// A channel's answers come in the order of its methods, but each
	// pending call returns on a goroutine of its own: the late answers
	// are shown in the channel's order, each after the one before.
	conn := d.connOf(name)
	d.mu.Lock()
	if d.lateDone == nil {
		d.lateDone = map[string]chan struct{}{}
	}
	before, mine := d.lateDone[name], make(chan struct{})
	d.lateDone[name] = mine
	d.mu.Unlock()
	go func() {
		defer close(mine)
		a := <-done
		if before != nil {
			<-before
		}
		if a.err == nil {
			d.mu.Lock()
			d.events = append(d.events, event{kind: evLate, conn: conn, ch: name, text: op.String()})
			d.last = time.Now()
			d.mu.Unlock()
		}
	}()
	return reply{}, errPending
}

// asyncOp reports whether a channel operation's method has no answer.
func asyncOp(op chanOp) bool {
	switch op.(type) {
	case Publish, Settle:
		return true
	}
	return false
}

// connOf names a channel's connection.
func (d *amqpDriver) connOf(ch string) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	for conn, chans := range d.chanOf {
		for _, name := range chans {
			if name == ch {
				return conn
			}
		}
	}
	return ""
}

// watch reports, on a cluster, a connection that ends without a
// connection.close as dropped: its node crashed. amqp091-go's error is
// then its own, not the server's; but so it may be around a
// connection.close too, when a stopping node resets the socket (it does
// not wait for close-ok) and a write of the client's fails before or
// after it reads the close. So settle decides, once the broker has been
// quiet: a lost connection whose close the tap never saw was dropped.
func (d *amqpDriver) watch(conn string, c *amqp.Connection) {
	if !d.clustered() {
		return
	}
	closed := c.NotifyClose(make(chan *amqp.Error, 1))
	go func() {
		if err, ok := <-closed; ok && err != nil && !err.Server {
			d.mu.Lock()
			if d.lost == nil {
				d.lost = map[string]string{}
			}
			d.lost[conn] = dropCause(err.Reason)
			d.last = time.Now()
			d.mu.Unlock()
		}
	}()
}

// dropCause reads how a connection ended from amqp091-go's error: the
// socket reset (a crashed node's: RabbitMQ's sockets linger 0), the
// client's heartbeat deadline passed (a hung node), or, "", closed.
func dropCause(reason string) string {
	switch {
	case strings.Contains(reason, "connection reset by peer"):
		return dropReset
	case strings.Contains(reason, "i/o timeout"):
		return dropTimeout
	}
	return ""
}

// dropped turns the connections lost without a connection.close into
// events. Caller holds d.mu.
func (d *amqpDriver) dropped() {
	for _, conn := range slices.Sorted(maps.Keys(d.lost)) {
		if !d.closedBy[conn] {
			d.events = append(d.events, event{kind: evDropped, conn: conn, text: d.lost[conn]})
		}
		delete(d.lost, conn)
	}
}

// fault changes the cluster: the simulator's behind the wire, or a real
// one through its control command.
func (d *amqpDriver) fault(op faultOp) error {
	if d.sim != nil {
		return op.runSim(d.sim.b)
	}
	if d.cluster == nil {
		return fmt.Errorf("%s: a step for a cluster: record the scenario with a cluster (amqpsim record --cluster)", op)
	}
	return d.cluster.fault(op, d.prefix)
}

// admin runs an operator step: on the simulator behind the wire directly,
// on a broker through rabbitmqctl.
func (d *amqpDriver) admin(op adminOp) error {
	if d.sim != nil {
		return op.runSim(d.sim.b)
	}
	return op.runCtl(d)
}

// user prefixes a user name; guest is the broker's own.
func (d *amqpDriver) user(name string) string {
	if name == "guest" || name == "" {
		return name
	}
	return d.prefix + name
}

// pattern puts the run's prefix after a leading ^ of an expression,
// leaving "", unanchored ones and ^amq\. alone.
func (d *amqpDriver) pattern(re string) string {
	if d.prefix == "" || !strings.HasPrefix(re, "^") || strings.HasPrefix(re, `^amq\.`) {
		return re
	}
	return "^" + regexp.QuoteMeta(d.prefix) + re[1:]
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
	var restoreErr error
	if d.cluster != nil {
		// Heal and start what the steps left down, so that the run's
		// queues can be deleted and the next run finds the cluster whole.
		restoreErr = d.cluster.restore(d.prefix)
		if alarmErr == nil {
			alarmErr = restoreErr
		}
	}
	for _, c := range d.conns {
		if !c.IsClosed() {
			c.Close()
		}
	}
	if d.sim != nil {
		// Nothing to delete: the broker goes with the run.
		err := d.closeObserver()
		d.sim.close()
		return err
	}
	var ch *amqp.Channel
	reopen := func() bool {
		if ch != nil && !ch.IsClosed() {
			return true
		}
		if err := d.observe(); err != nil {
			return false
		}
		var err error
		ch, err = d.observer.Channel()
		return err == nil
	}
	d.mu.Lock()
	queues := slices.Clone(d.queues)
	d.mu.Unlock()
	for _, q := range queues {
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
		_ = d.rabbitmqctl("clear_policy", "-p", "/", p) // the scenario may have cleared it
	}
	for _, p := range d.opPolicies {
		_ = d.rabbitmqctl("clear_operator_policy", "-p", "/", p)
	}
	for _, u := range d.users {
		_ = d.rabbitmqctl("delete_user", u) // the scenario may have deleted it
	}
	for _, tp := range d.topicPerms {
		_ = d.rabbitmqctl("clear_topic_permissions", "-p", "/", tp[0], tp[1])
	}
	if err := d.closeObserver(); err != nil {
		return err
	}
	return alarmErr
}

// BrokerVersion connects to a broker and returns the RabbitMQ version it
// announces ("4.3.6"), which says whose recording its answers are.
func BrokerVersion(url string) (string, error) {
	c, err := amqp.DialConfig(url, amqp.Config{Properties: amqp.Table{"connection_name": "amqpsim version check"}})
	if err != nil {
		return "", fmt.Errorf("connecting to %s: %w", redact(url), err)
	}
	defer c.Close()
	v, _ := c.Properties["version"].(string)
	if v == "" {
		return "", fmt.Errorf("the broker at %s announces no version", redact(url))
	}
	return v, nil
}
