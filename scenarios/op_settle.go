package scenarios

import (
	"fmt"
	"strconv"
	"strings"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

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

func init() {
	register(settleVerb("ack", protocol.BasicAck), settleVerb("nack", protocol.BasicNack), settleVerb("reject", protocol.BasicReject))
}

func settleVerb(m string, method protocol.Method) *verb {
	v := &verb{name: m, usage: m + " CHANNEL MSG|#TAG [multiple]", minPos: 2, maxPos: 2, flags: []string{"multiple"}, options: []string{"multiple"},
		method: method}
	if m != "ack" {
		v.usage += " [requeue|requeue=false]"
		v.flags = append(v.flags, "requeue")
		v.options = append(v.options, "requeue")
	}
	if m == "reject" {
		v.usage = "reject CHANNEL MSG|#TAG [requeue|requeue=false]"
		v.flags, v.options = []string{"requeue"}, []string{"requeue"}
	}
	v.build = func(a *argSet) (Op, error) {
		s := Settle{Method: m, Channel: a.str(0)}
		t := a.pos[1]
		if strings.HasPrefix(t.val, "#") && !t.quoted {
			n, err := strconv.ParseUint(t.val[1:], 10, 64)
			if err != nil {
				return nil, a.errAt(t, "expected a delivery tag #N, got %q", t.val)
			}
			s.Tag = n
		} else {
			s.Msg = t.val
		}
		var err error
		if s.Multiple, err = a.boolOpt("multiple", a.flags["multiple"]); err != nil {
			return nil, err
		}
		if m != "ack" {
			if s.Requeue, err = a.boolOpt("requeue", true); err != nil {
				return nil, err
			}
		}
		return s, nil
	}
	v.fromCall = func(w *traceWriter, e sim.Event, ch string) Op {
		return Settle{Method: m, Channel: ch, Tag: e.DeliveryTag, Multiple: m != "reject" && e.Multiple, Requeue: m != "ack" && e.Requeue}
	}
	return v
}

func (Settle) isOp()             {}
func (o Settle) channel() string { return o.Channel }

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

// resolve names the delivery by its tag: the channel's latest delivery of
// the message. ok is false when the channel has had none.
func (o Settle) resolve(ch *rchan) (s Settle, ok bool) {
	if o.Msg == "" {
		return o, true
	}
	tag, ok := ch.lastTag[o.Msg]
	o.Tag, o.Msg = tag, ""
	return o, ok
}

// run sends the settlement by tag; the drivers see no message names.
func (o Settle) run(r *runner, ch *rchan) ([]string, reply, error) {
	s, ok := o.resolve(ch)
	if !ok {
		return ch.noDelivery(o.Msg), reply{}, errNotSent
	}
	rep, err := r.d.do(ch.name, s)
	return nil, rep, err
}

// call runs the client method of o's method.
func (o Settle) call(ack func(uint64, bool) error, nack func(uint64, bool, bool) error, reject func(uint64, bool) error) error {
	switch o.Method {
	case "ack":
		return ack(o.Tag, o.Multiple)
	case "nack":
		return nack(o.Tag, o.Multiple, o.Requeue)
	}
	return reject(o.Tag, o.Requeue)
}

func (o Settle) runSim(ch *sim.Channel) (reply, error) {
	return reply{}, o.call(ch.Ack, ch.Nack, ch.Reject)
}

func (o Settle) runAMQP(_ *amqpDriver, ch *amqp.Channel) (reply, error) {
	return reply{}, o.call(ch.Ack, ch.Nack, ch.Reject)
}

// apply ends what the settlement settled, or, in a transaction, stages it
// for the commit.
func (o Settle) apply(r *runner, ch *rchan, _ reply) []string {
	s, _ := o.resolve(ch)
	how := "acked"
	if s.Method != "ack" {
		how = s.Method + " drop"
		if s.Requeue {
			how = s.Method + " requeue"
		}
	}
	match := func(h *Holding) bool { return h.staged == "" && h.Tag == s.Tag }
	if s.Multiple {
		match = func(h *Holding) bool { return h.staged == "" && (s.Tag == 0 || h.Tag <= s.Tag) }
	}
	if ch.tx { // ended at commit, given back to the channel by rollback
		for _, h := range ch.held {
			if match(h) {
				h.staged = how
			}
		}
		return nil
	}
	r.endHeld(ch, match, how)
	return nil
}
