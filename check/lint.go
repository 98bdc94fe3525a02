package check

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/amqpsim/amqpsim/sim"
)

// Rule names a lint rule.
type Rule string

// The lint rules.
const (
	// ConsumeBeforeQos: a consumer was created before basic.qos on its
	// channel, or before a second one meant to replace the first; it
	// keeps the window it was created with.
	ConsumeBeforeQos Rule = "consume-before-qos"
	// UnlimitedPrefetch: a manual-ack consumer has no prefetch limit.
	UnlimitedPrefetch Rule = "unlimited-prefetch"
	// SharedPrefetch: several manual-ack consumers on one channel with a
	// per-consumer prefetch; the channel holds prefetch × consumers.
	SharedPrefetch Rule = "shared-prefetch"
	// QueuesShareChannel: manual-ack consumers of several queues on one
	// channel.
	QueuesShareChannel Rule = "queues-share-channel"
	// GlobalLimitCleared: a basic.qos with global=false removed the
	// channel-wide limit an earlier one set.
	GlobalLimitCleared Rule = "global-limit-cleared"
	// GetPolling: basic.get in a loop.
	GetPolling Rule = "get-polling"
	// UnackedAtEnd: deliveries still unacked when the trace ends.
	UnackedAtEnd Rule = "unacked-at-end"
	// RedeliveryLoop: one message redelivered over and over from a queue
	// without a dead-letter exchange.
	RedeliveryLoop Rule = "redelivery-loop"
	// RejectWithoutDLX: rejected messages dropped by a queue without a
	// dead-letter exchange.
	RejectWithoutDLX Rule = "reject-without-dlx"
	// CloseWithUnacked: a channel closed holding many unacked deliveries.
	CloseWithUnacked Rule = "close-with-unacked"
	// NearConsumerTimeout: an unacked delivery older than most of the
	// consumer timeout. The deliveries that did time out are not
	// reported: those of a channel the consumer timeout closed (before
	// 4.3; the channel.close, 406, says so), and those a 4.3 quorum queue
	// took back (the basic.cancel it sent says so, sim.Event.Count how
	// many), whether the client settled them late or never.
	NearConsumerTimeout Rule = "near-consumer-timeout"
	// PublishWithoutConfirms: messages published on a channel in neither
	// confirm nor tx mode. It is off unless Options.Enable names it: many
	// publishers rightly do without confirms.
	PublishWithoutConfirms Rule = "publish-without-confirms"
)

// optIn are the rules Lint applies only when Options.Enable names them.
var optIn = []Rule{PublishWithoutConfirms}

// Options tune Lint. The zero value uses the defaults given per field.
type Options struct {
	// Disable switches rules off; Enable switches on the rules that are
	// off by default (PublishWithoutConfirms).
	Disable []Rule
	Enable  []Rule
	// ConsumerTimeout is the broker's consumer_timeout; 0 means 30 min.
	ConsumerTimeout time.Duration
	// GetPolls is how many basic.gets on one queue make a polling loop;
	// 0 means 10.
	GetPolls int
	// Redeliveries is how many redeliveries of one message make a loop; 0
	// means 5.
	Redeliveries int
	// BlastRadius is how many unacked deliveries a channel may hold when
	// it closes before it is reported; 0 means 100.
	BlastRadius int
}

func (o Options) withDefaults() Options {
	if o.ConsumerTimeout == 0 {
		o.ConsumerTimeout = sim.DefaultConsumerTimeout
	}
	if o.GetPolls == 0 {
		o.GetPolls = 10
	}
	if o.Redeliveries == 0 {
		o.Redeliveries = 5
	}
	if o.BlastRadius == 0 {
		o.BlastRadius = 100
	}
	return o
}

// Finding is one lint finding: the rule, where, the events that show it
// (indices into the trace), and what it means. Conn is the connection's
// label (sim.ConnLabels): its name, with "-2", "-3" for a later
// connection of the same name, as a failure report (scenarios.FromTrace)
// names it.
type Finding struct {
	Rule        Rule
	Conn        string
	Channel     uint16
	ConsumerTag string
	Queue       string
	Events      []int
	Message     string
}

// String renders the finding on one line.
func (f Finding) String() string {
	var where []string
	if f.Conn != "" {
		where = append(where, fmt.Sprintf("%s/%d", f.Conn, f.Channel))
	}
	if f.ConsumerTag != "" {
		where = append(where, "consumer "+f.ConsumerTag)
	}
	if f.Queue != "" {
		where = append(where, "queue "+f.Queue)
	}
	return fmt.Sprintf("%s (%s; events %v): %s", f.Rule, strings.Join(where, ", "), f.Events, f.Message)
}

// Lint reports what the client did wrong in trace, in the order the rules
// are listed, then by where each was found first. It judges what the
// broker did, which the trace says: on a release that denies global_qos
// (4.3, the default) a basic.qos with global=true is a per-consumer
// prefetch (sim.Event.GlobalDenied), so it sets no channel-wide limit for
// global-limit-cleared to see cleared, and consume-before-qos,
// unlimited-prefetch and shared-prefetch count it per consumer.
func Lint(trace []sim.Event, o Options) []Finding {
	o = o.withDefaults()
	st := replay(trace)
	var out []Finding
	for _, r := range rules {
		if slices.Contains(o.Disable, r.name) || slices.Contains(optIn, r.name) && !slices.Contains(o.Enable, r.name) {
			continue
		}
		out = append(out, r.find(st, o)...)
	}
	return out
}

type rule struct {
	name Rule
	find func(st *state, o Options) []Finding
}

var rules = []rule{
	{ConsumeBeforeQos, consumeBeforeQos},
	{UnlimitedPrefetch, unlimitedPrefetch},
	{SharedPrefetch, sharedPrefetch},
	{QueuesShareChannel, queuesShareChannel},
	{GlobalLimitCleared, globalLimitCleared},
	{GetPolling, getPolling},
	{UnackedAtEnd, unackedAtEnd},
	{RedeliveryLoop, redeliveryLoop},
	{RejectWithoutDLX, rejectWithoutDLX},
	{CloseWithUnacked, closeWithUnacked},
	{NearConsumerTimeout, nearConsumerTimeout},
	{PublishWithoutConfirms, publishWithoutConfirms},
}

func consumeBeforeQos(st *state, _ Options) []Finding {
	var out []Finding
	for _, ch := range st.chans {
		for _, q := range ch.qosCalls {
			var before []*cons
			for _, c := range ch.consumers {
				if c.at < q.at && !c.noAck && c.prefetch != q.count && !q.global {
					before = append(before, c)
				}
			}
			qos := fmt.Sprintf("basic.qos(%d)", q.count)
			if q.denied {
				qos = fmt.Sprintf("basic.qos(%d, global=true), which this release applies per consumer (global_qos is denied),", q.count)
			}
			for _, c := range before {
				out = append(out, Finding{Rule: ConsumeBeforeQos, Conn: ch.conn, Channel: ch.id, ConsumerTag: c.tag, Queue: c.queue,
					Events:  []int{c.at, q.at},
					Message: fmt.Sprintf("the consumer was created before %s on its channel and keeps prefetch %s: RabbitMQ applies a per-consumer qos only to consumers created after it", qos, window(c.prefetch))})
			}
		}
	}
	return out
}

func unlimitedPrefetch(st *state, _ Options) []Finding {
	var out []Finding
	for _, ch := range st.chans {
		for _, c := range ch.consumers {
			if !c.noAck && c.prefetch == 0 && c.globalAt == 0 && !c.reply {
				out = append(out, Finding{Rule: UnlimitedPrefetch, Conn: ch.conn, Channel: ch.id, ConsumerTag: c.tag, Queue: c.queue,
					Events:  []int{c.at},
					Message: "a manual-ack consumer with no prefetch limit: RabbitMQ pushes it the whole queue, and on a reconnect against a deep queue the whole backlog arrives at once"})
			}
		}
	}
	return out
}

func sharedPrefetch(st *state, _ Options) []Finding {
	var out []Finding
	for _, ch := range st.chans {
		var ack []*cons
		for _, c := range ch.consumers {
			if !c.noAck && c.prefetch > 0 {
				ack = append(ack, c)
			}
		}
		if len(ack) < 2 {
			continue
		}
		total, events := 0, []int{}
		for _, c := range ack {
			total += c.prefetch
			events = append(events, c.at)
		}
		out = append(out, Finding{Rule: SharedPrefetch, Conn: ch.conn, Channel: ch.id, Events: events,
			Message: fmt.Sprintf("%d manual-ack consumers share the channel with per-consumer prefetch: the channel may hold %d unacked deliveries, not %d", len(ack), total, ack[0].prefetch)})
	}
	return out
}

func queuesShareChannel(st *state, _ Options) []Finding {
	var out []Finding
	for _, ch := range st.chans {
		var queues []string
		var events []int
		for _, c := range ch.consumers {
			if !c.noAck && !c.reply && !slices.Contains(queues, c.queue) {
				queues = append(queues, c.queue)
				events = append(events, c.at)
			}
		}
		if len(queues) < 2 {
			continue
		}
		out = append(out, Finding{Rule: QueuesShareChannel, Conn: ch.conn, Channel: ch.id, Events: events,
			Message: fmt.Sprintf("consumers of %d queues (%s) share one channel: an error on any of them closes the channel and requeues every queue's deliveries, and a channel-wide prefetch lets one queue's backlog fill the window the others need", len(queues), strings.Join(queues, ", "))})
	}
	return out
}

func globalLimitCleared(st *state, _ Options) []Finding {
	var out []Finding
	for _, ch := range st.chans {
		set := -1
		for _, q := range ch.qosCalls {
			switch {
			case q.global && q.count > 0:
				set = q.at
			case !q.global && set >= 0:
				out = append(out, Finding{Rule: GlobalLimitCleared, Conn: ch.conn, Channel: ch.id, Events: []int{set, q.at},
					Message: "basic.qos with global=false removed the channel-wide limit set before it: RabbitMQ keeps only the per-consumer one"})
				set = -1
			}
		}
	}
	return out
}

// byQueue groups events by queue: the queues in the order first seen,
// and each queue's event indices.
func byQueue(events []at) (order []string, by map[string][]int) {
	by = map[string][]int{}
	for _, e := range events {
		if _, seen := by[e.queue]; !seen {
			order = append(order, e.queue)
		}
		by[e.queue] = append(by[e.queue], e.at)
	}
	return order, by
}

func getPolling(st *state, o Options) []Finding {
	var out []Finding
	for _, ch := range st.chans {
		order, perQueue := byQueue(ch.gets)
		for _, q := range order {
			if ev := perQueue[q]; len(ev) >= o.GetPolls {
				out = append(out, Finding{Rule: GetPolling, Conn: ch.conn, Channel: ch.id, Queue: q, Events: ev[:o.GetPolls],
					Message: fmt.Sprintf("%d basic.get calls on one queue: polling is a round trip per message and no prefetch window applies; basic.consume lets the broker push", len(ev))})
			}
		}
	}
	return out
}

func unackedAtEnd(st *state, _ Options) []Finding {
	var out []Finding
	for _, ch := range st.chans {
		if ch.closed || len(ch.unacked) == 0 {
			continue
		}
		var events []int
		for _, d := range ch.unacked {
			events = append(events, d.at)
		}
		out = append(out, Finding{Rule: UnackedAtEnd, Conn: ch.conn, Channel: ch.id, Events: events,
			Message: fmt.Sprintf("%d deliveries were never acked, nacked or rejected: a missing settlement path holds them until the channel closes and they are redelivered", len(ch.unacked))})
	}
	return out
}

func redeliveryLoop(st *state, o Options) []Finding {
	var out []Finding
	for _, id := range st.msgOrder {
		m := st.msgs[id]
		if len(m.redeliveries) >= o.Redeliveries && !st.dlx[m.queue] {
			out = append(out, Finding{Rule: RedeliveryLoop, Queue: m.queue, Events: m.redeliveries,
				Message: fmt.Sprintf("message %q was redelivered %d times from a queue without a dead-letter exchange: a message the consumer cannot handle loops forever", m.body, len(m.redeliveries))})
		}
	}
	return out
}

func rejectWithoutDLX(st *state, _ Options) []Finding {
	var out []Finding
	order, perQueue := byQueue(st.rejected)
	for _, q := range order {
		out = append(out, Finding{Rule: RejectWithoutDLX, Queue: q, Events: perQueue[q],
			Message: fmt.Sprintf("%d messages rejected without requeue from a queue without a dead-letter exchange: RabbitMQ drops them silently", len(perQueue[q]))})
	}
	return out
}

func closeWithUnacked(st *state, o Options) []Finding {
	var out []Finding
	for _, c := range st.closes {
		if c.unacked >= o.BlastRadius {
			out = append(out, Finding{Rule: CloseWithUnacked, Conn: c.conn, Channel: c.channel, Events: []int{c.at},
				Message: fmt.Sprintf("the channel closed holding %d unacked deliveries: RabbitMQ requeues them all, and every one is delivered again", c.unacked)})
		}
	}
	return out
}

func nearConsumerTimeout(st *state, o Options) []Finding {
	var out []Finding
	limit := o.ConsumerTimeout * 8 / 10
	for _, ch := range st.chans {
		for _, d := range ch.oldest {
			if d.age >= limit && !d.timedOut {
				out = append(out, Finding{Rule: NearConsumerTimeout, Conn: ch.conn, Channel: ch.id, ConsumerTag: d.ctag, Events: []int{d.at},
					Message: fmt.Sprintf("a delivery stayed unacked for %v of the %v consumer timeout: past it, RabbitMQ before 4.3 closes the channel with 406 and redelivers everything, and 4.3's quorum queue takes the delivery back and cancels the consumer", d.age, o.ConsumerTimeout)})
				break
			}
		}
	}
	return out
}

func publishWithoutConfirms(st *state, _ Options) []Finding {
	var out []Finding
	for _, ch := range st.chans {
		if len(ch.unconfirmedPublishes) == 0 {
			continue
		}
		out = append(out, Finding{Rule: PublishWithoutConfirms, Conn: ch.conn, Channel: ch.id, Events: ch.unconfirmedPublishes[:1],
			Message: fmt.Sprintf("%d messages published without publisher confirms or a transaction: the client cannot know whether the broker took them", len(ch.unconfirmedPublishes))})
	}
	return out
}

func window(n int) string {
	if n == 0 {
		return "unlimited"
	}
	return fmt.Sprint(n)
}
