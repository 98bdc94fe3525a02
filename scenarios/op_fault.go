package scenarios

import (
	"cmp"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// FaultText is the explanation of the closes a Fault step makes, and of
// those amqptest's fault schedules inject: a connection.close 320 reads
// "CONNECTION_FORCED - fault injected by amqptest", as "rabbitmqctl
// close_connection PID 'fault injected by amqptest'" makes RabbitMQ send
// (measured on 3.10.8, 4.0.5 and 4.3.6).
const FaultText = "fault injected by amqptest"

// FaultKind is what a Fault step does.
type FaultKind string

// The faults a step injects, as amqptest's schedules do.
const (
	// FaultCloseChannel closes a channel from the broker's side with 406
	// PRECONDITION_FAILED - FaultText, its unacked deliveries requeued.
	FaultCloseChannel FaultKind = "close-channel"
	// FaultCloseConnection closes a connection with 320
	// CONNECTION_FORCED - FaultText, as rabbitmqctl close_connection does.
	FaultCloseConnection FaultKind = "close-connection"
	// FaultConsumerTimeout times a channel's consumer out now, as the
	// consumer timeout does (sim.Channel.ForceConsumerTimeout).
	FaultConsumerTimeout FaultKind = "consumer-timeout"
	// FaultNackPublishes nacks the next Count publishes in confirm mode
	// (sim.Broker.NackPublishes).
	FaultNackPublishes FaultKind = "nack-publishes"
	// FaultRestart restarts the broker (sim.Broker.Restart).
	FaultRestart FaultKind = "restart"
	// FaultCloseEveryConnection closes every connection with 320
	// CONNECTION_FORCED - FaultText; it is only armed (AtDelivery).
	FaultCloseEveryConnection FaultKind = "close-every-connection"
)

// faultKinds are the kinds, in the order the usage names them.
var faultKinds = []FaultKind{FaultCloseChannel, FaultCloseConnection, FaultConsumerTimeout, FaultNackPublishes, FaultRestart,
	FaultCloseEveryConnection}

// armedActions are the kinds a Fault arms at a delivery, and what the
// simulator does then.
var armedActions = map[FaultKind]sim.FaultAction{FaultCloseChannel: sim.FaultCloseChannel,
	FaultCloseConnection: sim.FaultCloseConnection, FaultCloseEveryConnection: sim.FaultCloseEveryConnection,
	FaultConsumerTimeout: sim.FaultConsumerTimeout}

// Fault injects a fault into the broker, as a failure report writes the
// faults of the run it comes from (FromTrace, TraceOptions.Faults): now,
// "fault close-channel ch1", "fault close-connection c1", "fault
// consumer-timeout ch1", "fault nack-publishes 2", "fault restart"; or
// armed to land right behind the broker's Nth delivery since its start
// (sim.Broker.CloseAtDelivery), on that delivery's channel or connection,
// as amqptest's schedules arm their closes: "fault close-channel
// at-delivery=5", "fault close-every-connection at-delivery=3".
//
// The simulator takes every fault. A real broker takes a close-connection
// now, by rabbitmqctl close_connection; it cannot take the others on
// command, nor land a close between two deliveries, so a recording stops
// there with a *NotConfirmableError that says why.
type Fault struct {
	Kind  FaultKind
	Name  string // the channel (close-channel, consumer-timeout) or the connection (close-connection)
	Count int    // nack-publishes: how many
	// AtDelivery, when set, arms the fault to land right behind the
	// broker's AtDelivery-th delivery, on its channel or connection.
	AtDelivery int
	// Code and Text are a close's reply code and text, when not the
	// defaults (406 for a channel, 320 for a connection; FaultText):
	// "fault close-channel ch1 code=404 text="gone"".
	Code int
	Text string
}

func init() {
	register(&verb{name: "fault", usage: "fault close-channel|close-connection NAME [code=N] [text=T] | consumer-timeout CH | nack-publishes N | restart | KIND at-delivery=N",
		minPos: 1, maxPos: 2, options: []string{"code", "text", "at-delivery"}, what: "a fault", build: buildFault})
}

// defaultCode is the reply code of a close a fault makes.
func (o Fault) defaultCode() int {
	if o.Kind == FaultCloseConnection || o.Kind == FaultCloseEveryConnection {
		return protocol.ConnectionForced
	}
	return protocol.PreconditionFailed
}

// withDefaults leaves out a code and text that are the defaults.
func (o Fault) withDefaults() Fault {
	if o.Code == o.defaultCode() {
		o.Code = 0
	}
	if o.Text == FaultText {
		o.Text = ""
	}
	return o
}

// closeError is the error a close-channel or close-connection closes with.
func (o Fault) closeError() *protocol.Error {
	return protocol.Errorf(cmp.Or(o.Code, o.defaultCode()), protocol.Method{}, "%s", cmp.Or(o.Text, FaultText))
}

func buildFault(a *argSet) (Op, error) {
	k := FaultKind(a.str(0))
	if _, ok := a.opts["code"]; ok && k != FaultCloseChannel && k != FaultCloseConnection {
		return nil, a.errAt(a.opts["code"], "only a close takes code=")
	}
	if _, ok := a.opts["text"]; ok && k != FaultCloseChannel && k != FaultCloseConnection {
		return nil, a.errAt(a.opts["text"], "only a close takes text=")
	}
	if t, ok := a.opts["at-delivery"]; ok {
		if _, armed := armedActions[k]; !armed {
			return nil, a.errAt(t, "only close-channel, close-connection, close-every-connection and consumer-timeout take at-delivery=")
		}
		n, _, err := a.intOpt("at-delivery", 31)
		if err != nil || n < 1 {
			return nil, a.errAt(t, "expected at-delivery=N, N 1 or more, got %q", t.val)
		}
		if len(a.pos) > 1 {
			return nil, a.errAt(a.pos[1], "an armed fault names no channel or connection: it acts on its delivery's")
		}
		for _, o := range []string{"code", "text"} {
			if t, ok := a.opts[o]; ok {
				return nil, a.errAt(t, "an armed fault closes with its default %s", o)
			}
		}
		return Fault{Kind: k, AtDelivery: n}, nil
	}
	switch k {
	case FaultCloseChannel, FaultCloseConnection, FaultConsumerTimeout:
		if len(a.pos) != 2 {
			return nil, a.errAt(a.pos[0], "expected a name after fault %s", k)
		}
		code, _, err := a.intOpt("code", 16)
		if err != nil {
			return nil, err
		}
		if t, ok := a.opts["code"]; ok && protocol.CodeName(code) == "" {
			return nil, a.errAt(t, "unknown reply code %d", code)
		}
		return Fault{Kind: k, Name: a.str(1), Code: code, Text: a.opts["text"].val}.withDefaults(), nil
	case FaultNackPublishes:
		if len(a.pos) != 2 {
			return nil, a.errAt(a.pos[0], "expected a count after fault nack-publishes")
		}
		n, err := strconv.Atoi(a.str(1))
		if err != nil || n < 1 {
			return nil, a.errAt(a.pos[1], "expected a count of 1 or more, got %q", a.str(1))
		}
		return Fault{Kind: k, Count: n}, nil
	case FaultRestart:
		if len(a.pos) != 1 {
			return nil, a.errAt(a.pos[1], "unexpected %q after fault restart", a.str(1))
		}
		return Fault{Kind: k}, nil
	case FaultCloseEveryConnection:
		return nil, a.errAt(a.pos[0], "fault close-every-connection is only armed: add at-delivery=N")
	}
	kinds := make([]string, len(faultKinds))
	for i, k := range faultKinds {
		kinds[i] = string(k)
	}
	return nil, a.errAt(a.pos[0], "unknown fault %q (expected %s)", a.str(0), strings.Join(kinds, ", "))
}

func (Fault) isOp() {}

// String returns the Fault step line.
func (o Fault) String() string {
	if o.AtDelivery > 0 {
		return line("fault", string(o.Kind), "at-delivery="+strconv.Itoa(o.AtDelivery))
	}
	switch o.Kind {
	case FaultNackPublishes:
		return line("fault", string(o.Kind), strconv.Itoa(o.Count))
	case FaultRestart:
		return line("fault", string(o.Kind))
	}
	w := []string{"fault", string(o.Kind), word(o.Name)}
	if o.Code != 0 {
		w = append(w, "code="+strconv.Itoa(o.Code))
	}
	if o.Text != "" {
		w = append(w, "text="+optWord(o.Text))
	}
	return line(w...)
}

func (o Fault) checkNames(n *names) string {
	if o.AtDelivery > 0 {
		return ""
	}
	switch o.Kind {
	case FaultCloseChannel, FaultConsumerTimeout:
		if n.chans[o.Name] == "" {
			return fmt.Sprintf("unknown channel %q", o.Name)
		}
	case FaultCloseConnection:
		if !n.conns[o.Name] {
			return fmt.Sprintf("unknown connection %q", o.Name)
		}
	}
	return ""
}

func (o Fault) run(r *runner, _ *rchan) ([]string, reply, error) {
	switch {
	case o.AtDelivery > 0:
	case o.Kind == FaultCloseChannel, o.Kind == FaultConsumerTimeout:
		if c := r.byChan[o.Name]; c == nil || c.closed {
			return nil, reply{}, errRefused
		}
	case o.Kind == FaultCloseConnection:
		if c := r.byConn[o.Name]; c == nil || c.closed {
			return nil, reply{}, errRefused
		}
	}
	return nil, reply{}, r.d.inject(o)
}

// NotConfirmableError is a recording's error at a step a real broker
// cannot take on command: a fault only the simulator injects.
type NotConfirmableError struct {
	Step string // the step
	Why  string // why a broker cannot take it, and what comes closest
}

func (e *NotConfirmableError) Error() string {
	return fmt.Sprintf("a real broker cannot take %q: %s", e.Step, e.Why)
}

// notConfirmable says why a broker cannot take each fault it cannot.
var notConfirmable = map[FaultKind]string{
	FaultCloseChannel: "RabbitMQ closes a channel only when a method on it fails, never on command " +
		"(a client's own error, such as an ack of an unknown delivery tag, comes closest)",
	FaultConsumerTimeout: "RabbitMQ times a consumer out only once a delivery is unacked past its consumer_timeout, " +
		"a node-wide setting, never after a given delivery",
	FaultNackPublishes: "RabbitMQ nacks a publish only when a queue refuses it (x-overflow reject-publish), never on command",
	FaultRestart: "a whole broker is not restarted on command here: it would close every other client's connections " +
		"(rabbitmqctl stop_app and start_app come closest); on a cluster, a stop-node and start-node are taken",
}

// injectSim injects a fault into a simulator: into conn or ch, the
// simulator's connection or channel that the fault names.
func injectSim(b *sim.Broker, o Fault, conn *sim.Connection, ch *sim.Channel) error {
	if o.AtDelivery > 0 {
		return b.CloseAtDelivery(sim.DeliveryFault{N: o.AtDelivery, FromStart: true, Action: armedActions[o.Kind], Err: o.closeError()})
	}
	switch o.Kind {
	case FaultCloseChannel, FaultConsumerTimeout:
		if ch == nil {
			return errRefused
		}
	case FaultCloseConnection:
		if conn == nil {
			return errRefused
		}
	}
	switch o.Kind {
	case FaultCloseChannel:
		ch.CloseWithError(o.closeError())
	case FaultCloseConnection:
		conn.CloseWithError(o.closeError())
	case FaultConsumerTimeout:
		return ch.ForceConsumerTimeout()
	case FaultNackPublishes:
		b.NackPublishes(o.Count)
	case FaultRestart:
		b.Restart()
	default:
		return fmt.Errorf("scenarios: unknown fault %q", o.Kind)
	}
	return nil
}

func (d *simDriver) inject(o Fault) error {
	return injectSim(d.b, o, d.conns[o.Name], d.chans[o.Name])
}

// inject injects a fault into the simulator behind the wire, or, on a
// broker, closes a connection with rabbitmqctl close_connection: the
// connection whose peer port is the client's local port.
func (d *amqpDriver) inject(o Fault) error {
	if d.sim != nil {
		conn, ch := d.simTarget(o.Name)
		return injectSim(d.sim.b, o, conn, ch)
	}
	if o.AtDelivery > 0 {
		return &NotConfirmableError{Step: o.String(), Why: fmt.Sprintf("the simulator closes right behind delivery %d, "+
			"before any other delivery; RabbitMQ closes a connection on command (rabbitmqctl close_connection), "+
			"but not between two deliveries of one dispatch", o.AtDelivery)}
	}
	if o.Kind != FaultCloseConnection {
		return &NotConfirmableError{Step: o.String(), Why: notConfirmable[o.Kind]}
	}
	if o.Code != 0 {
		return &NotConfirmableError{Step: o.String(), Why: "rabbitmqctl close_connection closes with 320 only"}
	}
	c := d.conns[o.Name]
	_, port, _ := strings.Cut(c.LocalAddr().String(), ":")
	out, err := d.rabbitmqctlOut("list_connections", "pid", "peer_port")
	if err != nil {
		return err
	}
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) == 2 && f[1] == port {
			return d.rabbitmqctl("close_connection", f[0], cmp.Or(o.Text, FaultText))
		}
	}
	return errors.New("scenarios: rabbitmqctl list_connections does not show connection " + o.Name)
}

// simTarget finds, on the simulator behind the wire, the connection or
// channel a step names.
func (d *amqpDriver) simTarget(name string) (*sim.Connection, *sim.Channel) {
	conn := name
	if _, ok := d.chans[name]; ok {
		conn = d.connOf(name)
	}
	for _, c := range d.sim.b.Connections() {
		if c.Name() != "amqpsim "+d.name+" "+conn {
			continue
		}
		d.mu.Lock()
		defer d.mu.Unlock()
		for _, ch := range c.Channels() {
			if d.chanOf[conn][ch.ID()] == name {
				return c, ch
			}
		}
		return c, nil
	}
	return nil, nil
}

func (d *traceDriver) inject(o Fault) error {
	_ = d.shadow.inject(o)
	return nil
}
