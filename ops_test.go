package amqpsim_test

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/amqpsim/amqpsim/sim"
)

// This file holds the operations the state-machine test performs, their
// readable labels, and how they are applied to the simulator.

type opKind int

const (
	opConnect opKind = iota
	opCloseConn
	opOpenChannel
	opCloseChannel
	opDeclare
	opBrokerPublish
	opPublish
	opConfirm
	opQos
	opConsume
	opCancel
	opGet
	opAck
	opNack
	opReject
	opRecover
	opPurge
	opDelete
	opAdvance
)

// qArgs are a queue's declare arguments. The zero value is no arguments.
// Dead-lettering always goes through the default exchange ("").
type qArgs struct {
	MaxPrio     int  // x-max-priority; 0: none
	SAC         bool // x-single-active-consumer
	HasTTL      bool // x-message-ttl = TTL ms
	TTL         int
	Expires     int // x-expires ms; 0: none
	HasMaxLen   bool
	MaxLen      int // x-max-length
	HasMaxBytes bool
	MaxBytes    int    // x-max-length-bytes
	Overflow    string // x-overflow; "": absent (drop-head)
	DLX         bool   // x-dead-letter-exchange = ""
	DLRK        string // x-dead-letter-routing-key; "": absent
}

// dropHead reports whether the queue drops from the head when over a limit.
func (a qArgs) dropHead() bool { return a.Overflow == "" || a.Overflow == "drop-head" }

// op is one concrete operation. Handles (Conn, Ch, Cons) index the lists of
// connections, channels and consumers in creation order; an operation that
// creates one gets the next index whether or not it succeeds.
type op struct {
	Kind opKind
	Conn int // connection handle (Connect creates it)
	Ch   int // channel handle (OpenChannel creates it)
	Cons int // consumer handle (Consume creates it)

	Queue     string
	Args      qArgs // declare
	Passive   bool
	Body      string
	Priority  uint8
	Expire    string // publish: the expiration property
	Mandatory bool
	Exchange  string // publish: "" or a missing exchange
	Count     int
	Size      int
	Global    bool
	Tag       string
	NoAck     bool
	Exclusive bool
	XPrio     int
	HasXPrio  bool
	DTag      uint64
	Multiple  bool
	Requeue   bool
	IfUnused  bool
	IfEmpty   bool
	D         time.Duration

	Label string // "conn1.ch2": the channel (or connection) as the model names it
}

func (o op) String() string {
	flags := func(fs ...string) string {
		var out []string
		for i := 0; i+1 < len(fs); i += 2 {
			if fs[i] != "" {
				out = append(out, fs[i+1])
			}
		}
		if len(out) == 0 {
			return ""
		}
		return "," + strings.Join(out, ",")
	}
	on := func(b bool) string {
		if b {
			return "y"
		}
		return ""
	}
	switch o.Kind {
	case opConnect:
		return fmt.Sprintf("%s = broker.Connect()", o.Label)
	case opCloseConn:
		return fmt.Sprintf("%s.Close()", o.Label)
	case opOpenChannel:
		return fmt.Sprintf("%s = Channel()", o.Label)
	case opCloseChannel:
		return fmt.Sprintf("%s.Close()", o.Label)
	case opDeclare:
		return fmt.Sprintf("%s.QueueDeclare(%s%s%s)", o.Label, o.Queue, argsLabel(o.Args), flags(on(o.Passive), "passive"))
	case opBrokerPublish:
		return fmt.Sprintf("broker.Publish(%s,%s%s%s)", o.Queue, o.Body, prioLabel(o.Priority), expLabel(o.Expire))
	case opPublish:
		x := ""
		if o.Exchange != "" {
			x = "exchange=" + o.Exchange + ","
		}
		return fmt.Sprintf("%s.Publish(%s%s,%s%s%s%s)", o.Label, x, o.Queue, o.Body, prioLabel(o.Priority), expLabel(o.Expire), flags(on(o.Mandatory), "mandatory"))
	case opConfirm:
		return fmt.Sprintf("%s.Confirm()", o.Label)
	case opQos:
		s := ""
		if o.Size != 0 {
			s = fmt.Sprintf(",size=%d", o.Size)
		}
		return fmt.Sprintf("%s.Qos(%d%s%s)", o.Label, o.Count, s, flags(on(o.Global), "global"))
	case opConsume:
		x := ""
		if o.HasXPrio {
			x = fmt.Sprintf(",x-priority=%d", o.XPrio)
		}
		return fmt.Sprintf("%s.Consume(%s,tag=%s%s%s)", o.Label, o.Queue, o.Tag, flags(on(o.NoAck), "no-ack", on(o.Exclusive), "exclusive"), x)
	case opCancel:
		return fmt.Sprintf("%s.Cancel(%s)", o.Label, o.Tag)
	case opGet:
		return fmt.Sprintf("%s.Get(%s%s)", o.Label, o.Queue, flags(on(o.NoAck), "no-ack"))
	case opAck:
		return fmt.Sprintf("%s.Ack(%d%s)", o.Label, o.DTag, flags(on(o.Multiple), "multiple"))
	case opNack:
		return fmt.Sprintf("%s.Nack(%d%s)", o.Label, o.DTag, flags(on(o.Multiple), "multiple", on(o.Requeue), "requeue"))
	case opReject:
		return fmt.Sprintf("%s.Reject(%d%s)", o.Label, o.DTag, flags(on(o.Requeue), "requeue"))
	case opRecover:
		return fmt.Sprintf("%s.Recover(requeue=%t)", o.Label, o.Requeue)
	case opPurge:
		return fmt.Sprintf("%s.QueuePurge(%s)", o.Label, o.Queue)
	case opDelete:
		return fmt.Sprintf("%s.QueueDelete(%s%s)", o.Label, o.Queue, flags(on(o.IfUnused), "if-unused", on(o.IfEmpty), "if-empty"))
	case opAdvance:
		return fmt.Sprintf("broker.Advance(%s)", o.D)
	}
	return fmt.Sprintf("op(%d)", o.Kind)
}

func argsLabel(a qArgs) string {
	var sb strings.Builder
	for _, kv := range argList(a) {
		if v, ok := kv.val.(string); ok {
			fmt.Fprintf(&sb, ",%s=%q", kv.key, v)
		} else {
			fmt.Fprintf(&sb, ",%s=%v", kv.key, kv.val)
		}
	}
	return sb.String()
}

func prioLabel(p uint8) string {
	if p == 0 {
		return ""
	}
	return fmt.Sprintf(",priority=%d", p)
}

func expLabel(e string) string {
	if e == "" {
		return ""
	}
	return ",expiration=" + e
}

type argKV struct {
	key string
	val any
}

// argList is a queue's arguments as the declare sends them, in RabbitMQ's
// checking order (rabbit_amqqueue:declare_args/0).
func argList(a qArgs) []argKV {
	var out []argKV
	add := func(ok bool, key string, val any) {
		if ok {
			out = append(out, argKV{key, val})
		}
	}
	add(a.Expires > 0, "x-expires", int32(a.Expires))
	add(a.HasTTL, "x-message-ttl", int32(a.TTL))
	add(a.DLX, "x-dead-letter-exchange", "")
	add(a.DLRK != "", "x-dead-letter-routing-key", a.DLRK)
	add(a.HasMaxLen, "x-max-length", int32(a.MaxLen))
	add(a.HasMaxBytes, "x-max-length-bytes", int32(a.MaxBytes))
	add(a.MaxPrio > 0, "x-max-priority", int32(a.MaxPrio))
	add(a.Overflow != "", "x-overflow", a.Overflow)
	add(a.SAC, "x-single-active-consumer", true)
	return out
}

// queueArgTable is the declare argument table.
func queueArgTable(a qArgs) sim.Table {
	kvs := argList(a)
	if len(kvs) == 0 {
		return nil
	}
	t := sim.Table{}
	for _, kv := range kvs {
		t[kv.key] = kv.val
	}
	return t
}

// errInfo is an error as the test compares it: a protocol error's code, text,
// method and scope, or "closed" with the protocol error that closed it.
type errInfo struct {
	Closed bool
	Code   int
	Text   string
	Method string
	Hard   bool
	Other  string // any other error's text
}

func errOf(err error) *errInfo {
	if err == nil {
		return nil
	}
	e := &errInfo{Closed: errors.Is(err, sim.ErrClosed)}
	var perr *sim.Error
	if errors.As(err, &perr) {
		e.Code, e.Text, e.Method, e.Hard = perr.Code, perr.Text, perr.Method.String(), perr.Hard
	} else if !e.Closed {
		e.Other = err.Error()
	}
	return e
}

// result is what one operation returned.
type result struct {
	Err     *errInfo
	GetOK   bool
	Get     *sim.Delivery
	Info    *sim.QueueInfo
	N       int
	Channel uint16
}

// simWorld drives the simulator.
type simWorld struct {
	b     *sim.Broker
	conns []*sim.Connection
	chans []*sim.Channel
	cons  []*sim.Consumer
}

func newSimWorld(seed uint64) *simWorld {
	return &simWorld{b: sim.New(sim.Config{Seed: seed})}
}

func (w *simWorld) apply(o op) result {
	var r result
	var err error
	switch o.Kind {
	case opConnect:
		w.conns = append(w.conns, w.b.Connect(fmt.Sprintf("conn%d", len(w.conns)+1)))
	case opCloseConn:
		err = w.conns[o.Conn].Close()
	case opOpenChannel:
		ch, e := w.conns[o.Conn].Channel()
		w.chans = append(w.chans, ch)
		if ch != nil {
			r.Channel = ch.ID()
		}
		err = e
	case opCloseChannel:
		err = w.chans[o.Ch].Close()
	case opDeclare:
		info, e := w.chans[o.Ch].QueueDeclare(o.Queue, sim.QueueOptions{Passive: o.Passive, Args: queueArgTable(o.Args)})
		if e == nil {
			r.Info = &info
		}
		err = e
	case opBrokerPublish:
		err = w.b.Publish("/", "", o.Queue, publishMessage(o))
	case opPublish:
		err = w.chans[o.Ch].Publish(o.Exchange, o.Queue, sim.PublishOptions{Mandatory: o.Mandatory}, publishMessage(o))
	case opConfirm:
		err = w.chans[o.Ch].Confirm()
	case opQos:
		err = w.chans[o.Ch].Qos(o.Count, o.Size, o.Global)
	case opConsume:
		c, e := w.chans[o.Ch].Consume(o.Queue, consumeOptions(o))
		w.cons = append(w.cons, c)
		err = e
	case opCancel:
		err = w.chans[o.Ch].Cancel(o.Tag)
	case opGet:
		d, ok, e := w.chans[o.Ch].Get(o.Queue, o.NoAck)
		d.MessageID = 0 // the simulator's own numbering, which the model does not predict
		if ok {
			r.GetOK, r.Get = true, &d
		}
		err = e
	case opAck:
		err = w.chans[o.Ch].Ack(o.DTag, o.Multiple)
	case opNack:
		err = w.chans[o.Ch].Nack(o.DTag, o.Multiple, o.Requeue)
	case opReject:
		err = w.chans[o.Ch].Reject(o.DTag, o.Requeue)
	case opRecover:
		err = w.chans[o.Ch].Recover(o.Requeue)
	case opPurge:
		r.N, err = w.chans[o.Ch].QueuePurge(o.Queue)
	case opDelete:
		r.N, err = w.chans[o.Ch].QueueDelete(o.Queue, sim.QueueDeleteOptions{IfUnused: o.IfUnused, IfEmpty: o.IfEmpty})
	case opAdvance:
		w.b.Advance(o.D)
	}
	r.Err = errOf(err)
	return r
}

func publishMessage(o op) sim.Message {
	return sim.Message{Properties: sim.Properties{Priority: o.Priority, Expiration: o.Expire}, Body: []byte(o.Body)}
}

func consumeOptions(o op) sim.ConsumeOptions {
	co := sim.ConsumeOptions{Tag: o.Tag, NoAck: o.NoAck, Exclusive: o.Exclusive}
	if o.HasXPrio {
		co.Args = sim.Table{"x-priority": int32(o.XPrio)}
	}
	return co
}

// observation is everything a client or an operator can see after a step.
type observation struct {
	Result    result
	Consumers []consumerObs // by consumer handle
	Channels  []channelObs  // by channel handle
	Conns     []*errInfo    // by connection handle: why it closed, nil while open
	Queues    []sim.QueueStats
	Ready     map[string][]string // ready bodies per queue, in delivery order
}

type consumerObs struct {
	Tag       string
	New       []sim.Delivery // deliveries since the previous step
	Cancelled bool
}

type channelObs struct {
	Err      *errInfo // why it closed; nil while open
	Returns  []sim.Return
	Confirms []sim.Confirmation
	Cancels  []sim.Cancellation
	Stats    *sim.ChannelStats // nil once closed
}

func (w *simWorld) observe(r result) observation {
	o := observation{Result: r, Ready: map[string][]string{}}
	for _, c := range w.cons {
		if c == nil {
			o.Consumers = append(o.Consumers, consumerObs{})
			continue
		}
		o.Consumers = append(o.Consumers, consumerObs{Tag: c.Tag(), New: withoutIDs(c.Deliveries()), Cancelled: c.Cancelled()})
	}
	for _, ch := range w.chans {
		if ch == nil {
			o.Channels = append(o.Channels, channelObs{})
			continue
		}
		co := channelObs{Err: errOf(ch.Err()), Returns: ch.Returns(), Confirms: ch.Confirms(), Cancels: ch.Cancels()}
		if co.Err == nil {
			st := ch.Stats()
			co.Stats = &st
		}
		o.Channels = append(o.Channels, co)
	}
	for _, c := range w.conns {
		o.Conns = append(o.Conns, errOf(c.Err()))
	}
	o.Queues = w.b.Queues()
	for _, q := range o.Queues {
		ms, err := w.b.QueueMessages(q.Vhost, q.Name)
		if err != nil {
			panic(err)
		}
		var bodies []string
		for _, m := range ms {
			bodies = append(bodies, string(m.Body))
		}
		o.Ready[q.Name] = bodies
	}
	return o
}

// withoutIDs clears the simulator's message identities, which the model
// does not predict (the checker follows them in the trace).
func withoutIDs(ds []sim.Delivery) []sim.Delivery {
	for i := range ds {
		ds[i].MessageID = 0
	}
	return ds
}
