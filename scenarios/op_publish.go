package scenarios

import (
	"context"
	"errors"
	"fmt"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

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

func init() {
	register(&verb{name: "publish", usage: "publish CHANNEL KEY BODY... [exchange=X] [mandatory] [immediate] [persistent] [PROPERTY=V...] [header.NAME=V...]",
		minPos: 3, maxPos: -1, flags: []string{"mandatory", "immediate", "persistent"}, options: append([]string{"exchange"}, propNames...), props: true,
		method: protocol.BasicPublish, build: buildPublish,
		fromCall: func(w *traceWriter, e sim.Event, ch string) Op { return publishOp(ch, e) }})
}

func (Publish) isOp()             {}
func (o Publish) channel() string { return o.Channel }

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

func buildPublish(a *argSet) (Op, error) {
	p := Publish{Channel: a.str(0), Key: a.str(1), Mandatory: a.flags["mandatory"], Immediate: a.flags["immediate"]}
	for _, t := range a.pos[2:] {
		p.Bodies = append(p.Bodies, t.val)
	}
	p.Exchange = a.opts["exchange"].val
	if a.flags["persistent"] {
		p.Props.DeliveryMode = 2
	}
	if n, ok, err := a.intOpt("delivery-mode", 8); err != nil {
		return nil, err
	} else if ok {
		p.Props.DeliveryMode = uint8(n)
	}
	if n, _, err := a.intOpt("priority", 8); err != nil {
		return nil, err
	} else {
		p.Props.Priority = uint8(n)
	}
	for k, dst := range map[string]*string{"content-type": &p.Props.ContentType, "content-encoding": &p.Props.ContentEncoding,
		"correlation-id": &p.Props.CorrelationID, "reply-to": &p.Props.ReplyTo, "expiration": &p.Props.Expiration,
		"message-id": &p.Props.MessageID, "type": &p.Props.Type, "user-id": &p.Props.UserID, "app-id": &p.Props.AppID} {
		*dst = a.opts[k].val
	}
	p.Props.Headers = a.headers
	return p, nil
}

// publishOp is the publish step of a publish event.
func publishOp(ch string, e sim.Event) Publish {
	p := Publish{Channel: ch, Key: e.RoutingKey, Exchange: e.Exchange, Bodies: []string{string(e.Body)}}
	if po, ok := e.Options.(sim.PublishOptions); ok {
		p.Mandatory, p.Immediate = po.Mandatory, po.Immediate
	}
	if e.Properties != nil {
		p.Props = *e.Properties
	}
	return p
}

// run publishes one message per body, a Publish of one body each, and
// stops at the first that fails. On a channel in confirm mode it counts
// each publish the broker is to confirm.
func (o Publish) run(r *runner, ch *rchan) ([]string, reply, error) {
	var err error
	for i, b := range o.Bodies {
		one := o
		one.Bodies = []string{b}
		if _, err = r.d.do(ch.name, one); err != nil {
			if i > 0 && errors.Is(err, errRefused) {
				// The broker closed the channel over an earlier body of
				// the step, and the client saw it before it sent this
				// one, or not: whether it did is a race in the client,
				// and the close shows either way.
				err = nil
			}
			break
		}
		if ch.confirm {
			ch.published++
			ch.pending[ch.published] = true
		}
	}
	return nil, reply{}, err
}

// runSim publishes the first body: run sends one at a time.
func (o Publish) runSim(ch *sim.Channel) (reply, error) {
	return reply{}, ch.Publish(o.Exchange, o.Key, sim.PublishOptions{Mandatory: o.Mandatory, Immediate: o.Immediate}, sim.Message{Properties: o.Props, Body: []byte(o.Bodies[0])})
}

func (o Publish) runAMQP(d *amqpDriver, ch *amqp.Channel) (reply, error) {
	key := o.Key
	if o.Exchange == "" {
		key = d.p(key)
	}
	return reply{}, ch.PublishWithContext(context.Background(), d.p(o.Exchange), key, o.Mandatory, o.Immediate, d.publishing(o))
}

func (d *amqpDriver) publishing(o Publish) amqp.Publishing {
	p := o.Props
	h := d.deathNames(table(p.Headers))
	if o.Exchange == "" {
		h = d.ccNames(h)
	}
	return amqp.Publishing{
		Headers: h, ContentType: p.ContentType, ContentEncoding: p.ContentEncoding,
		DeliveryMode: p.DeliveryMode, Priority: p.Priority, CorrelationId: p.CorrelationID, ReplyTo: p.ReplyTo,
		Expiration: p.Expiration, MessageId: p.MessageID, Type: p.Type, UserId: p.UserID, AppId: p.AppID,
		Body: []byte(o.Bodies[0]),
	}
}

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

// deathNames prefixes the names a published message's dead-lettering
// headers refer to, as steps' names are, so that a message republished with
// the x-death a result showed names the run's queues: a broker that extends
// x-death finds its entry by queue and reason (rabbit_dead_letter
// x_death_event_key in 3.10). Routing keys are queue names when the
// exchange is the default one "".
func (d *amqpDriver) deathNames(h amqp.Table) amqp.Table {
	for _, k := range []string{"x-first-death-queue", "x-first-death-exchange", "x-last-death-queue", "x-last-death-exchange"} {
		if s, ok := h[k].(string); ok {
			h[k] = d.p(s)
		}
	}
	deaths, _ := h["x-death"].([]any)
	for _, e := range deaths {
		death, ok := e.(amqp.Table)
		if !ok {
			continue
		}
		x, _ := death["exchange"].(string)
		for _, k := range []string{"queue", "exchange"} {
			if s, ok := death[k].(string); ok {
				death[k] = d.p(s)
			}
		}
		if keys, ok := death["routing-keys"].([]any); ok && x == "" {
			for i, key := range keys {
				if s, ok := key.(string); ok {
					keys[i] = d.p(s)
				}
			}
		}
	}
	return h
}

// ccNames prefixes the CC and BCC routing keys of a message published to
// the default exchange "", whose keys are queue names, as steps' names are.
func (d *amqpDriver) ccNames(h amqp.Table) amqp.Table {
	for _, k := range []string{"CC", "BCC"} {
		keys, ok := h[k].([]any)
		if !ok {
			continue
		}
		out := make([]any, len(keys))
		for i, key := range keys {
			if s, ok := key.(string); ok {
				key = d.p(s)
			}
			out[i] = key
		}
		h[k] = out
	}
	return h
}
