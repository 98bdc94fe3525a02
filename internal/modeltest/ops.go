package modeltest

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/scenarios"
	"github.com/amqpsim/amqpsim/sim"
)

// This file holds what the model, the world and the checker share about
// the operations: the queue arguments the generators use, RabbitMQ's
// errors as the test compares them, and the few facts read off a
// scenarios.Op.

// The connection and channel that stand for the broker's own publish
// (Broker.Publish, which has no channel). The world publishes on
// BrokerChannel with Broker.Publish; replayed from a scenario file it is a
// publish on a channel of a connection that does nothing else, which
// RabbitMQ handles the same way (no mandatory flag, no confirms).
const (
	BrokerConn    = "broker"
	BrokerChannel = "pub"
)

// qArgs are a queue's declare arguments as the generators choose them. The
// zero value is no arguments. Dead-lettering always goes through the
// default exchange ("").
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
	// Quorum is x-queue-type=quorum (declared durable); a quorum queue
	// takes no other argument above but x-message-ttl, the dead-letter
	// ones and x-single-active-consumer, and x-delivery-limit = Limit
	// when HasLimit.
	Quorum   bool
	HasLimit bool
	Limit    int
}

// dropHead reports whether the queue drops from the head when over a limit.
func (a qArgs) dropHead() bool { return a.Overflow == "" || a.Overflow == "drop-head" }

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
	add(a.Quorum, "x-queue-type", "quorum")
	add(a.HasLimit, "x-delivery-limit", int32(a.Limit))
	return out
}

// argTable is the declare argument table of a.
func argTable(a qArgs) protocol.Table {
	kvs := argList(a)
	if len(kvs) == 0 {
		return nil
	}
	t := protocol.Table{}
	for _, kv := range kvs {
		t[kv.key] = kv.val
	}
	return t
}

// argsOf reads a declare's argument table back. The harness understands
// only the arguments the generators use, with the types they use (those a
// scenario file reads back as well); anything else is a test bug.
func argsOf(t protocol.Table) qArgs {
	var a qArgs
	num := func(k string) (int, bool) {
		v, ok := t[k]
		if !ok {
			return 0, false
		}
		n, isInt := v.(int32)
		if !isInt {
			panic(fmt.Sprintf("modeltest: argument %s=%v (%T): the harness takes 32-bit integers", k, v, v))
		}
		return int(n), true
	}
	str := func(k string) (string, bool) {
		v, ok := t[k]
		if !ok {
			return "", false
		}
		s, isStr := v.(string)
		if !isStr {
			panic(fmt.Sprintf("modeltest: argument %s=%v (%T): the harness takes a string", k, v, v))
		}
		return s, true
	}
	for k := range t {
		switch k {
		case "x-expires", "x-message-ttl", "x-max-length", "x-max-length-bytes", "x-max-priority",
			"x-overflow", "x-dead-letter-exchange", "x-dead-letter-routing-key", "x-single-active-consumer",
			"x-queue-type", "x-delivery-limit":
		default:
			panic(fmt.Sprintf("modeltest: queue argument %s is not one the harness models", k))
		}
	}
	a.Expires, _ = num("x-expires")
	a.TTL, a.HasTTL = num("x-message-ttl")
	a.MaxLen, a.HasMaxLen = num("x-max-length")
	a.MaxBytes, a.HasMaxBytes = num("x-max-length-bytes")
	a.MaxPrio, _ = num("x-max-priority")
	a.Overflow, _ = str("x-overflow")
	a.DLRK, _ = str("x-dead-letter-routing-key")
	a.Limit, a.HasLimit = num("x-delivery-limit")
	if x, ok := str("x-queue-type"); ok {
		if x != "quorum" {
			panic("modeltest: the harness declares classic and quorum queues only")
		}
		a.Quorum = true
	}
	if x, ok := str("x-dead-letter-exchange"); ok {
		if x != "" {
			panic("modeltest: dead-lettering goes through the default exchange only")
		}
		a.DLX = true
	}
	if v, ok := t["x-single-active-consumer"]; ok {
		a.SAC = v == true
	}
	return a
}

func argsLabel(a qArgs) string {
	var sb strings.Builder
	for _, kv := range argList(a) {
		if v, ok := kv.val.(string); ok {
			fmt.Fprintf(&sb, " %s=%q", kv.key, v)
		} else {
			fmt.Fprintf(&sb, " %s=%v", kv.key, kv.val)
		}
	}
	return sb.String()
}

// xPriority is a consume's x-priority argument (0 when absent).
func xPriority(o scenarios.Consume) int {
	if v, ok := o.Args["x-priority"].(int32); ok {
		return int(v)
	}
	return 0
}

// body is a publish's one message: the harness publishes one body per
// step, so that every step's trace names the message it routes.
func body(o scenarios.Publish) string {
	if len(o.Bodies) != 1 {
		panic(fmt.Sprintf("modeltest: %q: the harness publishes one body per step", o))
	}
	return o.Bodies[0]
}

// expiration is a publish's expiration property as a TTL in ms.
func expiration(o scenarios.Publish) (ttl int, ok bool) {
	if o.Props.Expiration == "" {
		return 0, false
	}
	n, err := strconv.Atoi(o.Props.Expiration)
	if err != nil {
		panic(fmt.Sprintf("modeltest: %q: expiration must be a number of ms", o))
	}
	return n, true
}

// message is what a publish sends.
func message(o scenarios.Publish) sim.Message {
	return sim.Message{Properties: sim.Properties{Priority: o.Props.Priority, Expiration: o.Props.Expiration}, Body: []byte(body(o))}
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
