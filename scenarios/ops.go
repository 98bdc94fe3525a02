package scenarios

import (
	"fmt"
	"strings"
	"time"

	"github.com/amqpsim/amqpsim/protocol"
)

// Op is one operation of a scenario: a step line. String returns the
// canonical line, which Parse reads back to an equal Op. The concrete types
// are the structs below; a scenario can be built from them in Go (see New).
type Op interface {
	String() string
	isOp()
}

// Conn opens a connection: "conn c1", as guest, or "conn c2 user=app
// password=s3cret". A connection the broker refuses shows why ("c2 <-
// login refused", "c2 <- connection.close 530 ...") and stays closed.
type Conn struct{ Name, User, Password string }

// OpenChannel opens a channel on a connection: "channel c1.ch1". Channel
// names are unique in a scenario; steps refer to the channel by Name.
type OpenChannel struct{ Conn, Name string }

// Close closes a channel or a connection, by name: "close ch1", "close c1".
type Close struct{ Name string }

// DeclareQueue is queue.declare: "declare-queue ch1 orders durable x-max-priority=5".
// With NoWait the client asks for no declare-ok ("nowait"), so the step
// shows nothing unless the broker closes the channel.
type DeclareQueue struct {
	Channel, Queue                          string
	Passive, Durable, Exclusive, AutoDelete bool
	NoWait                                  bool
	Args                                    protocol.Table
}

// DeclareExchange is exchange.declare: "declare-exchange ch1 logs fanout".
type DeclareExchange struct {
	Channel, Exchange, Kind                string
	Passive, Durable, AutoDelete, Internal bool
	Args                                   protocol.Table
}

// DeleteQueue is queue.delete: "delete-queue ch1 orders if-empty".
type DeleteQueue struct {
	Channel, Queue    string
	IfUnused, IfEmpty bool
}

// DeleteExchange is exchange.delete: "delete-exchange ch1 logs if-unused".
type DeleteExchange struct {
	Channel, Exchange string
	IfUnused          bool
}

// Bind is queue.bind: "bind ch1 orders logs key=info".
type Bind struct {
	Channel, Queue, Exchange, Key string
	Args                          protocol.Table
}

// Unbind is queue.unbind: "unbind ch1 orders logs key=info".
type Unbind struct {
	Channel, Queue, Exchange, Key string
	Args                          protocol.Table
}

// Purge is queue.purge: "purge ch1 orders".
type Purge struct{ Channel, Queue string }

// Qos is basic.qos: "qos ch1 2", "qos ch1 10 global", "qos ch1 0 size=1024".
type Qos struct {
	Channel string
	Count   int
	Size    int
	Global  bool
}

// Consume is basic.consume with an explicit tag:
// "consume ch1 orders tag=A no-ack exclusive x-priority=5". An option
// x-NAME=V, or arg.NAME=V for a name without the x- prefix, is a consumer
// argument (likewise for queue, exchange and binding arguments).
type Consume struct {
	Channel, Queue, Tag string
	NoAck, Exclusive    bool
	Args                protocol.Table
}

// Cancel is basic.cancel: "cancel ch1 A".
type Cancel struct{ Channel, Tag string }

// Publish is basic.publish of one message per body, in order:
// "publish ch1 orders m1 m2 exchange=logs mandatory persistent priority=3
// header.kind=x". The second word is the routing key (the queue's name for
// the default exchange). immediate sets the flag RabbitMQ refuses (540).
type Publish struct {
	Channel, Exchange, Key string
	Bodies                 []string
	Mandatory, Immediate   bool
	Props                  protocol.Properties
}

// Confirm is confirm.select: "confirm ch1".
type Confirm struct{ Channel string }

// ExchangeBind is exchange.bind: "bind-exchange ch1 dst src key=k", messages
// exchange src routes with key go on to exchange dst.
type ExchangeBind struct {
	Channel, Destination, Source, Key string
	Args                              protocol.Table
}

// ExchangeUnbind is exchange.unbind: "unbind-exchange ch1 dst src key=k".
type ExchangeUnbind struct {
	Channel, Destination, Source, Key string
	Args                              protocol.Table
}

// SetPolicy sets a policy of the vhost "/": "policy p1 ^orders$
// arg.max-length=2 apply-to=queues priority=1". The definition's keys are
// RabbitMQ's policy keys (no x- prefix), written as arg.KEY=VALUE; the
// pattern must start with ^ (the recorder prefixes names after it).
type SetPolicy struct {
	Name, Pattern, ApplyTo string
	Priority               int
	Definition             protocol.Table
}

// ClearPolicy clears a policy: "clear-policy p1".
type ClearPolicy struct{ Name string }

// Tx is tx.select ("tx ch1"), tx.commit ("commit ch1") or tx.rollback
// ("rollback ch1").
type Tx struct {
	Channel string
	Method  TxMethod
}

// TxMethod says which tx method a Tx step is.
type TxMethod uint8

// The tx methods.
const (
	TxSelect TxMethod = iota
	TxCommit
	TxRollback
)

var txVerbs = [...]string{TxSelect: "tx", TxCommit: "commit", TxRollback: "rollback"}

// call runs the client method of o's tx method.
func (o Tx) call(sel, commit, rollback func() error) error {
	return [...]func() error{TxSelect: sel, TxCommit: commit, TxRollback: rollback}[o.Method]()
}

// Get is basic.get: "get ch1 orders no-ack".
type Get struct {
	Channel, Queue string
	NoAck          bool
}

// Settle is basic.ack, basic.nack or basic.reject (Method "ack", "nack",
// "reject"). It names the delivery by its message (the body; the channel's
// latest delivery of that body) or by Tag when Msg is empty:
// "ack ch1 m3", "ack ch1 #0 multiple", "nack ch1 m2 multiple requeue=false",
// "reject ch1 m1 requeue". nack and reject requeue unless requeue=false.
type Settle struct {
	Method   string
	Channel  string
	Msg      string
	Tag      uint64
	Multiple bool
	Requeue  bool
}

// Recover is basic.recover: "recover ch1" (requeue=true),
// "recover ch1 requeue=false".
type Recover struct {
	Channel string
	Requeue bool
}

// Flow is channel.flow: "flow ch1 on", "flow ch1 off".
type Flow struct {
	Channel string
	Active  bool
}

// Advance moves the clock: the simulator's virtual clock, or real time
// against a broker: "advance 5s".
type Advance struct{ D time.Duration }

// ShowQueue observes a queue's counts from outside the scenario's
// connections: "queue orders". The result line is
// "orders ready=N unacked=N consumers=N", "orders not found" or
// "orders locked" (exclusive to another connection).
type ShowQueue struct{ Queue string }

// ShowHeld prints, for every consumer of an open channel and every channel's
// basic.get deliveries, what it holds unsettled: "held".
type ShowHeld struct{}

// ShowHeaders prints the headers of the channel's latest delivery (to a
// consumer or by basic.get) of a message, one line per header:
// "headers ch1 m1".
type ShowHeaders struct{ Channel, Msg string }

// ShowEnvelope prints the exchange and routing key of the channel's latest
// delivery (to a consumer or by basic.get) of a message, as
// "exchange=X key=K": "envelope ch1 m1". Dead-lettering rewrites both.
type ShowEnvelope struct{ Channel, Msg string }

func (Conn) isOp()            {}
func (OpenChannel) isOp()     {}
func (Close) isOp()           {}
func (DeclareQueue) isOp()    {}
func (DeclareExchange) isOp() {}
func (DeleteQueue) isOp()     {}
func (DeleteExchange) isOp()  {}
func (Bind) isOp()            {}
func (Unbind) isOp()          {}
func (Purge) isOp()           {}
func (Qos) isOp()             {}
func (Consume) isOp()         {}
func (Cancel) isOp()          {}
func (Publish) isOp()         {}
func (Confirm) isOp()         {}
func (ExchangeBind) isOp()    {}
func (ExchangeUnbind) isOp()  {}
func (Tx) isOp()              {}
func (SetPolicy) isOp()       {}
func (ClearPolicy) isOp()     {}
func (Get) isOp()             {}
func (Settle) isOp()          {}
func (Recover) isOp()         {}
func (Flow) isOp()            {}
func (Advance) isOp()         {}
func (ShowQueue) isOp()       {}
func (ShowHeld) isOp()        {}
func (ShowHeaders) isOp()     {}
func (ShowEnvelope) isOp()    {}

// line joins words, dropping empty ones.
func line(words ...string) string {
	out := words[:0:0]
	for _, w := range words {
		if w != "" {
			out = append(out, w)
		}
	}
	return strings.Join(out, " ")
}

func flagIf(on bool, name string) string {
	if on {
		return name
	}
	return ""
}

// String returns the Conn step line.
func (o Conn) String() string {
	w := []string{"conn", word(o.Name)}
	if o.User != "" {
		w = append(w, "user="+optWord(o.User), "password="+optWord(o.Password))
	}
	return line(w...)
}

// String returns the OpenChannel step line.
func (o OpenChannel) String() string {
	return line("channel", word(o.Conn)+"."+word(o.Name))
}

// String returns the Close step line.
func (o Close) String() string { return line("close", word(o.Name)) }

// String returns the DeclareQueue step line.
func (o DeclareQueue) String() string {
	return line(append([]string{"declare-queue", word(o.Channel), word(o.Queue),
		flagIf(o.Passive, "passive"), flagIf(o.Durable, "durable"), flagIf(o.Exclusive, "exclusive"),
		flagIf(o.AutoDelete, "auto-delete"), flagIf(o.NoWait, "nowait")}, formatArgs(o.Args)...)...)
}

// String returns the DeclareExchange step line.
func (o DeclareExchange) String() string {
	return line(append([]string{"declare-exchange", word(o.Channel), word(o.Exchange), word(o.Kind),
		flagIf(o.Passive, "passive"), flagIf(o.Durable, "durable"), flagIf(o.AutoDelete, "auto-delete"),
		flagIf(o.Internal, "internal")}, formatArgs(o.Args)...)...)
}

// String returns the DeleteQueue step line.
func (o DeleteQueue) String() string {
	return line("delete-queue", word(o.Channel), word(o.Queue), flagIf(o.IfUnused, "if-unused"), flagIf(o.IfEmpty, "if-empty"))
}

// String returns the DeleteExchange step line.
func (o DeleteExchange) String() string {
	return line("delete-exchange", word(o.Channel), word(o.Exchange), flagIf(o.IfUnused, "if-unused"))
}

func bindLine(verb, ch, q, x, key string, args protocol.Table) string {
	k := ""
	if key != "" {
		k = "key=" + optWord(key)
	}
	return line(append([]string{verb, word(ch), word(q), word(x), k}, formatArgs(args)...)...)
}

// String returns the Bind step line.
func (o Bind) String() string { return bindLine("bind", o.Channel, o.Queue, o.Exchange, o.Key, o.Args) }

// String returns the Unbind step line.
func (o Unbind) String() string {
	return bindLine("unbind", o.Channel, o.Queue, o.Exchange, o.Key, o.Args)
}

// String returns the Purge step line.
func (o Purge) String() string { return line("purge", word(o.Channel), word(o.Queue)) }

// String returns the Qos step line.
func (o Qos) String() string {
	size := ""
	if o.Size != 0 {
		size = fmt.Sprintf("size=%d", o.Size)
	}
	return line("qos", word(o.Channel), fmt.Sprint(o.Count), flagIf(o.Global, "global"), size)
}

// String returns the Consume step line.
func (o Consume) String() string {
	return line(append([]string{"consume", word(o.Channel), word(o.Queue), "tag=" + optWord(o.Tag),
		flagIf(o.NoAck, "no-ack"), flagIf(o.Exclusive, "exclusive")}, formatArgs(o.Args)...)...)
}

// String returns the Cancel step line.
func (o Cancel) String() string { return line("cancel", word(o.Channel), word(o.Tag)) }

// String returns the Publish step line.
func (o Publish) String() string {
	w := []string{"publish", word(o.Channel), word(o.Key)}
	for _, b := range o.Bodies {
		w = append(w, word(b))
	}
	if o.Exchange != "" {
		w = append(w, "exchange="+optWord(o.Exchange))
	}
	w = append(w, flagIf(o.Mandatory, "mandatory"), flagIf(o.Immediate, "immediate"))
	return line(append(w, formatProps(o.Props)...)...)
}

// String returns the Confirm step line.
func (o Confirm) String() string { return line("confirm", word(o.Channel)) }

// String returns the ExchangeBind step line.
func (o ExchangeBind) String() string {
	return bindLine("bind-exchange", o.Channel, o.Destination, o.Source, o.Key, o.Args)
}

// String returns the ExchangeUnbind step line.
func (o ExchangeUnbind) String() string {
	return bindLine("unbind-exchange", o.Channel, o.Destination, o.Source, o.Key, o.Args)
}

// String returns the SetPolicy step line.
func (o SetPolicy) String() string {
	w := []string{"policy", word(o.Name), word(o.Pattern)}
	if o.ApplyTo != "" {
		w = append(w, "apply-to="+optWord(o.ApplyTo))
	}
	if o.Priority != 0 {
		w = append(w, fmt.Sprintf("priority=%d", o.Priority))
	}
	return line(append(w, formatArgs(o.Definition)...)...)
}

// String returns the ClearPolicy step line.
func (o ClearPolicy) String() string { return line("clear-policy", word(o.Name)) }

// String returns the Tx step line.
func (o Tx) String() string { return line(txVerbs[o.Method], word(o.Channel)) }

// String returns the Get step line.
func (o Get) String() string {
	return line("get", word(o.Channel), word(o.Queue), flagIf(o.NoAck, "no-ack"))
}

// String returns the Settle step line.
func (o Settle) String() string {
	target := fmt.Sprintf("#%d", o.Tag)
	if o.Msg != "" {
		target = word(o.Msg)
	}
	requeue := ""
	if o.Method != "ack" {
		requeue = "requeue"
		if !o.Requeue {
			requeue = "requeue=false"
		}
	}
	return line(o.Method, word(o.Channel), target, flagIf(o.Multiple, "multiple"), requeue)
}

// String returns the Recover step line.
func (o Recover) String() string {
	return line("recover", word(o.Channel), flagIf(!o.Requeue, "requeue=false"))
}

// String returns the Flow step line.
func (o Flow) String() string {
	state := "off"
	if o.Active {
		state = "on"
	}
	return line("flow", word(o.Channel), state)
}

// String returns the Advance step line.
func (o Advance) String() string { return line("advance", o.D.String()) }

// String returns the ShowQueue step line.
func (o ShowQueue) String() string { return line("queue", word(o.Queue)) }

// String returns the ShowHeld step line.
func (ShowHeld) String() string { return "held" }

// String returns the ShowHeaders step line.
func (o ShowHeaders) String() string { return line("headers", word(o.Channel), word(o.Msg)) }

// String returns the ShowEnvelope step line.
func (o ShowEnvelope) String() string { return line("envelope", word(o.Channel), word(o.Msg)) }

// propNames are the message properties publish accepts as options, in the
// order they are printed.
var propNames = []string{"content-type", "content-encoding", "delivery-mode", "priority",
	"correlation-id", "reply-to", "expiration", "message-id", "type", "user-id", "app-id"}

func formatProps(p protocol.Properties) []string {
	var out []string
	str := func(k, v string) {
		if v != "" {
			out = append(out, k+"="+optWord(v))
		}
	}
	str("content-type", p.ContentType)
	str("content-encoding", p.ContentEncoding)
	switch p.DeliveryMode {
	case 0:
	case 2:
		out = append(out, "persistent")
	default:
		out = append(out, fmt.Sprintf("delivery-mode=%d", p.DeliveryMode))
	}
	if p.Priority != 0 {
		out = append(out, fmt.Sprintf("priority=%d", p.Priority))
	}
	str("correlation-id", p.CorrelationID)
	str("reply-to", p.ReplyTo)
	str("expiration", p.Expiration)
	str("message-id", p.MessageID)
	str("type", p.Type)
	str("user-id", p.UserID)
	str("app-id", p.AppID)
	return append(out, formatTable("header.", p.Headers)...)
}
