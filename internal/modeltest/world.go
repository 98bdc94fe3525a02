package modeltest

import (
	"fmt"

	"github.com/amqpsim/amqpsim/scenarios"
	"github.com/amqpsim/amqpsim/sim"
)

// world applies scenario operations to a simulator and observes it. It
// performs the calls the scenarios package's simulator driver performs for
// the same steps, but keeps the simulator's typed results (the
// sim.Delivery of a get, the queue.declare-ok, the *sim.Consumer to read
// deliveries from), which the driver flattens into result lines. The one
// difference: a publish on BrokerChannel is Broker.Publish.
type world struct {
	b      *sim.Broker
	conns  []*sim.Connection // by connection handle
	chans  []*sim.Channel    // by channel handle; nil if the open failed
	cons   []*sim.Consumer   // by consumer handle; nil if the consume failed
	connBy map[string]int
	chanBy map[string]int
}

// Release is the RabbitMQ release the reference model restates and every
// simulator the harness builds simulates: 3.10, whose rules the model was
// written from (scenarios/library's 3.10.8 recordings), whatever
// sim.DefaultVersion is.
var Release = sim.V3_10

func newWorld(seed uint64) *world {
	return &world{b: sim.New(sim.Config{Seed: seed, Version: Release}), connBy: map[string]int{}, chanBy: map[string]int{}}
}

// apply performs one operation on the simulator.
func (w *world) apply(op scenarios.Op) result {
	var r result
	var err error
	ch := func(name string) *sim.Channel { return w.chans[w.chanBy[name]] }
	switch o := op.(type) {
	case scenarios.Conn:
		w.connBy[o.Name] = len(w.conns)
		w.conns = append(w.conns, w.b.Connect(o.Name))
	case scenarios.OpenChannel:
		c, e := w.conns[w.connBy[o.Conn]].Channel()
		w.chanBy[o.Name] = len(w.chans)
		w.chans = append(w.chans, c)
		if c != nil {
			r.Channel = c.ID()
		}
		err = e
	case scenarios.Close:
		if i, ok := w.chanBy[o.Name]; ok {
			err = w.chans[i].Close()
		} else {
			err = w.conns[w.connBy[o.Name]].Close()
		}
	case scenarios.DeclareQueue:
		info, e := ch(o.Channel).QueueDeclare(o.Queue, sim.QueueOptions{Passive: o.Passive, Durable: o.Durable, AutoDelete: o.AutoDelete, Args: o.Args})
		if e == nil {
			r.Info = &info
		}
		err = e
	case scenarios.Publish:
		if o.Channel == BrokerChannel {
			err = w.b.Publish("/", o.Exchange, o.Key, message(o))
		} else {
			err = ch(o.Channel).Publish(o.Exchange, o.Key, sim.PublishOptions{Mandatory: o.Mandatory}, message(o))
		}
	case scenarios.Confirm:
		err = ch(o.Channel).Confirm()
	case scenarios.Qos:
		err = ch(o.Channel).Qos(o.Count, o.Size, o.Global)
	case scenarios.Consume:
		c, e := ch(o.Channel).Consume(o.Queue, sim.ConsumeOptions{Tag: o.Tag, NoAck: o.NoAck, Exclusive: o.Exclusive, Args: o.Args})
		w.cons = append(w.cons, c)
		err = e
	case scenarios.Cancel:
		err = ch(o.Channel).Cancel(o.Tag)
	case scenarios.Get:
		d, ok, e := ch(o.Channel).Get(o.Queue, o.NoAck)
		d.MessageID = 0 // the simulator's own numbering, which the model does not predict
		if ok {
			r.GetOK, r.Get = true, &d
		}
		err = e
	case scenarios.Settle:
		switch o.Method {
		case "ack":
			err = ch(o.Channel).Ack(o.Tag, o.Multiple)
		case "nack":
			err = ch(o.Channel).Nack(o.Tag, o.Multiple, o.Requeue)
		default:
			err = ch(o.Channel).Reject(o.Tag, o.Requeue)
		}
	case scenarios.Recover:
		err = ch(o.Channel).Recover(o.Requeue)
	case scenarios.Purge:
		r.N, err = ch(o.Channel).QueuePurge(o.Queue)
	case scenarios.DeleteQueue:
		r.N, err = ch(o.Channel).QueueDelete(o.Queue, sim.QueueDeleteOptions{IfUnused: o.IfUnused, IfEmpty: o.IfEmpty})
	case scenarios.Advance:
		w.b.Advance(o.D)
	case scenarios.ShowQueue, scenarios.ShowHeld:
		// Observations of a scenario file: the harness observes every step.
	default:
		panic(fmt.Sprintf("modeltest: the harness cannot run %T (%s)", op, op))
	}
	r.Err = errOf(err)
	return r
}

// observe takes what the simulator shows after a step.
func (w *world) observe(r result) observation {
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
			panic(err) // the queue was just listed
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
