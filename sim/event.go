package sim

import (
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/amqpsim/amqpsim/protocol"
)

// EventKind says what an Event records.
type EventKind uint8

// The kinds of events, in the order a message's life usually shows them.
const (
	// EventConnectionOpen: a client connected to Vhost.
	EventConnectionOpen EventKind = iota + 1
	// EventConnectionClose: a connection closed, by its client (Err nil)
	// or by an error (Err).
	EventConnectionClose
	// EventChannelOpen: a channel opened.
	EventChannelOpen
	// EventChannelClose: an error closed a channel (Err). A client's own
	// channel.close is an EventCall.
	EventChannelClose
	// EventCall: a client called Method on Channel; the fields its
	// arguments name are set, and Options holds its options struct, if any.
	EventCall
	// EventPublish: Broker.Publish routed a message without a channel.
	EventPublish
	// EventPush: the broker sent Method to a client: basic.deliver,
	// basic.get-ok, basic.get-empty, basic.return, basic.ack or
	// basic.nack (a publisher confirm), basic.cancel, channel.close or
	// connection.close.
	EventPush
	// EventSettle: an unacked delivery left its channel's ledger: acked,
	// rejected, or requeued (Requeue).
	EventSettle
	// EventDeadLetter: a message left Queue for Reason ("rejected",
	// "expired", "maxlen"), towards the queue's dead-letter exchange if it
	// has one.
	EventDeadLetter
	// EventDeadLetterCycle: dead-lettering from Queue skipped the target
	// queue Target, which would close a cycle; the copy is dropped.
	EventDeadLetterCycle
	// EventPublishRejected: Queue refused a message (x-overflow
	// reject-publish), or Broker.NackPublishes did (no Queue, Reason
	// "nack injected").
	EventPublishRejected
	// EventDiscarded: Queue discarded a message it could not deliver at
	// once (x-message-ttl 0, no dead-letter exchange).
	EventDiscarded
	// EventQueueDeleted: Queue was deleted with Count ready messages.
	EventQueueDeleted
	// EventQueueExpired: Queue's x-expires ran out.
	EventQueueExpired
	// EventRestart: the broker restarted (Broker.Restart); the closes and
	// deletions it caused follow.
	EventRestart
	// EventBlocked: a resource alarm blocked the connection as it
	// published (Reason: "low on memory", ...); EventUnblocked: the
	// alarms cleared (Broker.SetAlarm).
	EventBlocked
	EventUnblocked
	// EventNode: a cluster node stopped, crashed or started (Reason
	// "stop", "kill", "start"; Node its number), or the nodes were
	// partitioned (Reason "partition", Nodes the groups) or healed
	// ("heal"); the closes and cancellations it caused follow.
	EventNode
)

var eventKindNames = [...]string{
	EventConnectionOpen:  "connection.open",
	EventConnectionClose: "connection.close",
	EventChannelOpen:     "channel.open",
	EventChannelClose:    "channel.close",
	EventCall:            "call",
	EventPublish:         "publish",
	EventPush:            "push",
	EventSettle:          "settled",
	EventDeadLetter:      "dead-letter",
	EventDeadLetterCycle: "dead-letter.cycle",
	EventPublishRejected: "queue.rejected",
	EventDiscarded:       "queue.discarded",
	EventQueueDeleted:    "queue.deleted",
	EventQueueExpired:    "queue.expired",
	EventRestart:         "broker.restart",
	EventBlocked:         "connection.blocked",
	EventUnblocked:       "connection.unblocked",
	EventNode:            "cluster.node",
}

// String returns the kind's name as String of an Event shows it.
func (k EventKind) String() string {
	if int(k) < len(eventKindNames) && eventKindNames[k] != "" {
		return eventKindNames[k]
	}
	return "EventKind(" + strconv.Itoa(int(k)) + ")"
}

// Event is one entry of the broker's trace: a method a client called, a
// frame the broker pushed to a client, or a change the broker made on its
// own. Fields that do not apply to the kind are zero. Read the fields;
// String is for people and golden files, and nothing should parse it.
type Event struct {
	At      time.Duration // virtual time since the broker started
	Kind    EventKind
	Method  protocol.Method // EventCall: the method called; EventPush: the method sent
	Conn    string          // connection name; "" for broker-wide events
	Channel uint16
	Vhost   string

	Queue       string
	Exchange    string
	RoutingKey  string
	ConsumerTag string
	DeliveryTag uint64 // a delivery's tag, or a confirm's publish tag
	Multiple    bool
	Requeue     bool
	Redelivered bool
	NoAck       bool
	Global      bool // basic.qos, as the client sent it
	// GlobalDenied is set on a basic.qos with Global that the broker
	// applied per consumer: the release denies global_qos (4.3,
	// Profile.GlobalQosDenied), as the trace's readers (check.Lint) need
	// to know.
	GlobalDenied bool
	// Count is basic.qos's prefetch count, basic.get-ok's messages left,
	// a deleted queue's ready messages, or, on the basic.cancel a 4.3
	// quorum queue's consumer timeout sent (Reason
	// ReasonConsumerTimeout), how many of the consumer's deliveries the
	// queue took back: its oldest ones not taken back before.
	Count int
	// MessageID identifies a message from its publish on: the copies one
	// publish routes to several queues share it, redeliveries keep it, and
	// a dead-lettered copy gets a new one.
	MessageID uint64
	// Body is a delivery's or a returned message's body, and a publish's
	// (EventCall basic.publish, EventPublish), with its Properties.
	Body       []byte
	Properties *protocol.Properties
	// Reason is EventDeadLetter's reason; EventBlocked's and
	// connection.blocked's; an EventChannelClose's ReasonConsumerTimeout
	// when the consumer timeout closed the channel, and a basic.cancel
	// push's when a 4.3 quorum queue's consumer timeout cancelled the
	// consumer (see Count).
	Reason string
	// Dropped is set on an EventDeadLetter whose queue has no dead-letter
	// exchange (or one that does not exist): the message is gone.
	// Otherwise Exchange is the dead-letter exchange.
	Dropped bool
	Target  string // EventDeadLetterCycle's skipped queue; exchange.bind's destination; exchange.declare's type
	// Node is, in a cluster (Config.Nodes), the node of a connection's
	// events, and the node an EventNode stopped, killed or started; 0 on
	// a broker of one node. Nodes are an EventNode partition's groups.
	Node  int
	Nodes [][]int
	Err   *Error // why a channel or connection closed, or why routing failed (an EventDeadLetter dropped)
	// Options is EventCall's options struct (QueueOptions, ConsumeOptions,
	// ExchangeOptions, PublishOptions, ...), when the method takes one,
	// or a binding's arguments (a Table), when it has some.
	Options any
}

// String renders the event on one line, stable for golden files: the
// time, the connection and channel, what happened, then the fields that
// are set.
func (e Event) String() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s ", e.At)
	if e.Conn != "" {
		sb.WriteString(e.Conn)
		if e.Channel != 0 {
			fmt.Fprintf(&sb, "/%d", e.Channel)
		}
		sb.WriteByte(' ')
	}
	switch e.Kind {
	case EventCall:
		sb.WriteString(e.Method.String())
	case EventPush:
		sb.WriteString("-> " + e.Method.String())
	default:
		sb.WriteString(e.Kind.String())
	}
	field := func(name, value string) {
		sb.WriteByte(' ')
		sb.WriteString(name)
		sb.WriteByte('=')
		sb.WriteString(value)
	}
	flag := func(name string, set bool) {
		if set {
			sb.WriteByte(' ')
			sb.WriteString(name)
		}
	}
	if e.Kind == EventConnectionOpen {
		field("vhost", e.Vhost)
	}
	if e.Node != 0 {
		field("node", strconv.Itoa(e.Node))
	}
	if e.Nodes != nil {
		field("groups", fmt.Sprint(e.Nodes))
	}
	if e.Queue != "" || e.Kind == EventCall && queueMethods[e.Method] {
		field("queue", strconv.Quote(e.Queue))
	}
	if e.Exchange != "" || e.Method == protocol.BasicPublish || e.Kind == EventPublish {
		field("exchange", strconv.Quote(e.Exchange))
	}
	if e.RoutingKey != "" || e.Method == protocol.BasicPublish || e.Kind == EventPublish {
		field("key", strconv.Quote(e.RoutingKey))
	}
	if e.ConsumerTag != "" {
		field("ctag", e.ConsumerTag)
	}
	if e.DeliveryTag != 0 || tagMethods[e.Method] {
		field("tag", strconv.FormatUint(e.DeliveryTag, 10))
	}
	if e.Method == protocol.BasicQos || e.Method == protocol.BasicGetOk || e.Kind == EventQueueDeleted ||
		e.Method == protocol.BasicCancel && e.Reason == ReasonConsumerTimeout {
		field("count", strconv.Itoa(e.Count))
	}
	flag("multiple", e.Multiple)
	flag("requeue", e.Requeue)
	flag("redelivered", e.Redelivered)
	flag("no-ack", e.NoAck)
	flag("global", e.Global)
	flag("global-denied", e.GlobalDenied)
	flag("dropped", e.Dropped)
	if e.Reason != "" {
		field("reason", e.Reason)
	}
	if e.Target != "" {
		field("target", strconv.Quote(e.Target))
	}
	if e.Body != nil {
		field("body", strconv.Quote(string(e.Body)))
	}
	if e.Options != nil {
		fmt.Fprintf(&sb, " %+v", e.Options)
	}
	if e.Err != nil {
		fmt.Fprintf(&sb, " %d (%s) %s", e.Err.Code, e.Err.Method, e.Err.Text)
	}
	return sb.String()
}

// ConnLabels returns, for each event of trace, the label of its
// connection ("" for broker-wide events): the connection's name, and for
// a later connection opened under a name already used (a client that
// reconnects keeps its connection_name) that name with "-2", "-3", ...,
// the first suffix no earlier connection's label has. An event belongs to
// the latest connection opened under its name. scenarios.FromTrace and
// check.Lint name connections so, that a finding and a report agree.
func ConnLabels(trace []Event) []string {
	labels := make([]string, len(trace))
	used := map[string]bool{}
	current := map[string]string{} // name → label of the latest connection so named
	for i, e := range trace {
		if e.Conn == "" {
			continue
		}
		if e.Kind == EventConnectionOpen {
			label := e.Conn
			for n := 2; used[label]; n++ {
				label = e.Conn + "-" + strconv.Itoa(n)
			}
			used[label] = true
			current[e.Conn] = label
		}
		if l, ok := current[e.Conn]; ok {
			labels[i] = l
		} else {
			labels[i] = e.Conn
		}
	}
	return labels
}

// tableOption is a binding's arguments as Event.Options: nil (no field)
// when there are none.
func tableOption(args Table) any {
	if len(args) == 0 {
		return nil
	}
	return maps.Clone(args)
}

// queueMethods name a queue, possibly "" (the channel's last queue).
var queueMethods = map[protocol.Method]bool{
	protocol.QueueDeclare: true, protocol.QueueBind: true, protocol.QueueUnbind: true, protocol.QueuePurge: true,
	protocol.QueueDelete: true, protocol.BasicConsume: true, protocol.BasicGet: true,
}

// tagMethods carry a delivery tag, possibly 0.
var tagMethods = map[protocol.Method]bool{
	protocol.BasicAck: true, protocol.BasicNack: true, protocol.BasicReject: true,
}

// Trace returns a copy of every event so far, in order.
func (b *Broker) Trace() []Event {
	b.mu.Lock()
	defer b.mu.unlockView()
	return append([]Event(nil), b.trace...)
}

// tracing reports whether events are recorded; callers check it before
// building an event, so that the hot path builds nothing with NoTrace.
func (b *Broker) tracing() bool { return !b.cfg.NoTrace }

// record appends e to the trace with the current virtual time; caller
// holds the lock.
func (b *Broker) record(e Event) {
	if b.cfg.NoTrace {
		return
	}
	e.At = b.now.Sub(b.cfg.Start)
	b.trace = append(b.trace, e)
}

// connEvent is an event on connection c (nil for broker-wide) and channel
// ch.
func connEvent(kind EventKind, c *Connection, ch uint16) Event {
	e := Event{Kind: kind, Channel: ch}
	if c != nil {
		e.Conn, e.Vhost = c.name, c.vhost.name
		if c.b.clustered() {
			e.Node = c.node
		}
	}
	return e
}
