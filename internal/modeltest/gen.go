package modeltest

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/scenarios"
	"pgregory.net/rapid"
)

// The generators: rapid actions that draw scenarios.Op values from the
// model's state and step them. Each operation is drawn complete, names
// included, so the sequence is a scenario as it stands.

const (
	maxOpenConns    = 3
	maxOpenChannels = 4
	maxLiveCons     = 6
)

var queueNames = []string{"q1", "q2", "q3"}

// openConns returns the open connections the generators use (the
// publisher's is not one of them).
func (h *harness) openConns() []*mConn {
	var out []*mConn
	for _, c := range h.model.conns {
		if !c.closed && c.name != BrokerConn {
			out = append(out, c)
		}
	}
	return out
}

// userChans returns the generators' channels, open or closed.
func (h *harness) userChans(open bool) []*mChan {
	var out []*mChan
	for _, ch := range h.model.chans {
		if ch != nil && ch.closed != open && ch.name != BrokerChannel {
			out = append(out, ch)
		}
	}
	return out
}

func (h *harness) liveCons() []*mCons {
	var out []*mCons
	for _, c := range h.model.cons {
		if c != nil && !c.cancelled {
			out = append(out, c)
		}
	}
	return out
}

func names[T any](xs []T, name func(T) string) []string {
	var out []string
	for _, x := range xs {
		out = append(out, name(x))
	}
	return out
}

func chanName(ch *mChan) string { return ch.name }
func connName(c *mConn) string  { return c.name }

// channel picks a channel for a method: almost always an open one, now and
// then a closed one (the call must fail with the reason it closed).
func (h *harness) channel(t *rapid.T) *mChan {
	open := h.userChans(true)
	if len(open) == 0 {
		// Keep the sequence going: reopen rather than skip.
		conns := h.openConns()
		if len(conns) == 0 {
			h.connect()
			conns = h.openConns()
		}
		h.openChannel(rapid.SampledFrom(names(conns, connName)).Draw(t, "conn"))
		open = h.userChans(true)
	}
	name := rapid.SampledFrom(names(open, chanName)).Draw(t, "channel")
	if oneIn(t, 30, "closedChannel?") {
		if closed := h.userChans(false); len(closed) > 0 {
			name = rapid.SampledFrom(names(closed, chanName)).Draw(t, "channel")
		}
	}
	return h.model.chans[h.model.chanBy[name]]
}

// queue picks a queue name: mostly a declared queue, sometimes any of q1-q3,
// now and then one that never exists.
func (h *harness) queue(t *rapid.T) string {
	declared := slices.Sorted(maps.Keys(h.model.queues))
	switch {
	case oneIn(t, 40, "missingQueue?"):
		return "nosuch"
	case len(declared) > 0 && !oneIn(t, 20, "anyQueue?"):
		return rapid.SampledFrom(declared).Draw(t, "queue")
	}
	return rapid.SampledFrom(queueNames).Draw(t, "queue")
}

// oneIn is true about once in n draws. rapid favours small values (and
// shrinks toward them), so the rare outcome is the largest value, and n
// over 10 takes two draws to stay rare.
func oneIn(t *rapid.T, n int, label string) bool {
	if n > 10 {
		m := (n + 9) / 10
		return rapid.IntRange(1, 10).Draw(t, label) == 10 && rapid.IntRange(1, m).Draw(t, label) == m
	}
	return rapid.IntRange(1, n).Draw(t, label) == n
}

// destructive thins out the operations that tear state down.
func destructive(t *rapid.T) {
	if rapid.Bool().Draw(t, "destroy?") {
		t.Skip("not this time")
	}
}

func (h *harness) qos(t *rapid.T, ch *mChan) {
	o := scenarios.Qos{Channel: ch.name, Count: rapid.IntRange(0, 3).Draw(t, "count"), Global: rapid.Bool().Draw(t, "global")}
	if oneIn(t, 60, "prefetchSize?") {
		o.Size = 1024
	}
	h.step(o)
}

// connect opens the next connection: conn1, conn2, ... (the publisher's
// does not count).
func (h *harness) connect() {
	n := 1
	for _, c := range h.model.conns {
		if c.name != BrokerConn {
			n++
		}
	}
	h.step(scenarios.Conn{Name: fmt.Sprintf("conn%d", n)})
}

func (h *harness) openChannel(conn string) {
	h.chans++
	h.step(scenarios.OpenChannel{Conn: conn, Name: fmt.Sprintf("ch%d", h.chans)})
}

func (h *harness) declare(t *rapid.T, ch *mChan, name string) {
	q := h.model.queues[name]
	// A quorum queue is redeclared as it is (the harness does not model
	// the errors of a redeclaration that changes the queue type).
	if q != nil && q.args.Quorum || q == nil && oneIn(t, 3, "quorum?") {
		h.declareQuorum(t, ch, name, q)
		return
	}
	// 40% plain, 25% priority, 35% single active consumer.
	var args qArgs
	switch "nnnnppPssSsSpPSnsn-n"[rapid.IntRange(0, 19).Draw(t, "args")] {
	case 'p':
		args.MaxPrio = 2
	case 'P':
		args.MaxPrio = 5
	case 's':
		args.SAC = true
	case 'S':
		args.SAC, args.MaxPrio = true, 2
	case '-':
		args.SAC = true
	}
	// Then, independently, the time and length limits and dead-lettering
	// of sections 7 and 8. Dead-lettering goes through the default
	// exchange, to a queue of the model, or by the message's own key (its
	// queue), or nowhere.
	if oneIn(t, 3, "x-message-ttl?") {
		args.HasTTL, args.TTL = true, rapid.SampledFrom([]int{1000, 0, 1, 60000}).Draw(t, "x-message-ttl")
	}
	if oneIn(t, 6, "x-expires?") {
		args.Expires = rapid.SampledFrom([]int{1500, 90000}).Draw(t, "x-expires")
	}
	if oneIn(t, 4, "x-max-length?") {
		args.HasMaxLen, args.MaxLen = true, rapid.IntRange(0, 3).Draw(t, "x-max-length")
	}
	if oneIn(t, 8, "x-max-length-bytes?") {
		args.HasMaxBytes, args.MaxBytes = true, rapid.SampledFrom([]int{4, 0, 8}).Draw(t, "x-max-length-bytes")
	}
	if args.HasMaxLen || args.HasMaxBytes || oneIn(t, 20, "x-overflow?") {
		args.Overflow = rapid.SampledFrom([]string{"", "reject-publish", "reject-publish-dlx", "drop-head"}).Draw(t, "x-overflow")
	}
	drawDeadLetter(t, name, &args)
	// Auto-delete queues go when their last consumer does (section 5).
	autoDelete := oneIn(t, 8, "auto-delete?")
	if q != nil && !oneIn(t, 5, "inequivalent?") {
		args, autoDelete = q.args, q.autoDel // mostly an equivalent redeclaration
	}
	passive := oneIn(t, 20, "passive?")
	h.step(scenarios.DeclareQueue{Channel: ch.name, Queue: name, Passive: passive, AutoDelete: autoDelete, Args: argTable(args)})
}

// declareQuorum declares a quorum queue (durable, as it must be), maybe
// single active consumer or with x-message-ttl, with x-delivery-limit 0-2
// or none and dead-lettering as a classic queue's,
// or redeclares q as it is.
func (h *harness) declareQuorum(t *rapid.T, ch *mChan, name string, q *mQueue) {
	var args qArgs
	if q != nil {
		args = q.args
	} else {
		args.Quorum = true
		args.SAC = oneIn(t, 3, "x-single-active-consumer?")
		if oneIn(t, 3, "x-message-ttl?") {
			args.HasTTL, args.TTL = true, rapid.SampledFrom([]int{1000, 0, 1, 60000}).Draw(t, "x-message-ttl")
		}
		if rapid.Bool().Draw(t, "deliveryLimit?") {
			args.HasLimit, args.Limit = true, rapid.IntRange(0, 2).Draw(t, "x-delivery-limit")
		}
		drawDeadLetter(t, name, &args)
	}
	passive := oneIn(t, 20, "passive?")
	h.step(scenarios.DeclareQueue{Channel: ch.name, Queue: name, Passive: passive, Durable: true, Args: argTable(args)})
}

// drawDeadLetter maybe gives queue name's args dead-lettering through the
// default exchange: mostly to the next queue in the ring q1 -> q2 -> q3 ->
// q1, which makes chains and cycles.
func drawDeadLetter(t *rapid.T, name string, args *qArgs) {
	if oneIn(t, 2, "x-dead-letter-exchange?") {
		i := slices.Index(queueNames, name)
		next, other := queueNames[(i+1)%3], queueNames[(i+2)%3]
		args.DLX = true
		args.DLRK = rapid.SampledFrom([]string{next, next, other, name, "", "nosuch"}).Draw(t, "x-dead-letter-routing-key")
	}
}

func (h *harness) setup(t *rapid.T) {
	h.connect()
	h.openChannel("conn1")
	if rapid.Bool().Draw(t, "secondChannel?") {
		h.openChannel("conn1")
	}
	first := h.model.chans[0]
	h.declare(t, first, "q1")
	if rapid.Bool().Draw(t, "q2?") {
		h.declare(t, first, "q2")
	}
}

// deliveryTag picks a delivery tag to settle: mostly one outstanding on
// the channel, sometimes 0, sometimes any tag (which may be unknown: 406).
func (h *harness) deliveryTag(t *rapid.T, ch *mChan, method string) uint64 {
	var tags []uint64
	for _, e := range ch.ledger {
		tags = append(tags, e.tag)
	}
	if len(tags) == 0 && !oneIn(t, 10, "settleNothing?") {
		t.Skip("nothing to settle")
	}
	switch {
	case len(tags) > 0 && !oneIn(t, 6, "otherTag?"):
		return rapid.SampledFrom(tags).Draw(t, "tag")
	case method != "reject" && !oneIn(t, 3, "anyTag?"):
		return 0
	default:
		return rapid.Uint64Range(1, ch.lastTag+1).Draw(t, "tag")
	}
}

// publish publishes 1-4 messages, one a step: on a channel, or as the
// broker's own publish on the publisher channel, opened when first used.
func (h *harness) publish(t *rapid.T, viaBroker bool) {
	n := rapid.IntRange(1, 4).Draw(t, "messages")
	channel := BrokerChannel
	if viaBroker {
		h.publisherChannel()
	} else {
		channel = h.channel(t).name
	}
	for range n {
		h.msgs++
		o := scenarios.Publish{Channel: channel, Key: h.queue(t), Bodies: []string{fmt.Sprintf("m%d", h.msgs)}}
		if oneIn(t, 4, "priority?") {
			o.Props.Priority = uint8(rapid.IntRange(1, 6).Draw(t, "priority"))
		}
		if oneIn(t, 4, "expiration?") {
			o.Props.Expiration = rapid.SampledFrom([]string{"1000", "0", "1", "5000", "60000"}).Draw(t, "expiration")
		}
		if !viaBroker {
			o.Mandatory = rapid.Bool().Draw(t, "mandatory")
			if oneIn(t, 100, "missingExchange?") {
				o.Exchange = "nosuch"
			}
		}
		h.step(o)
	}
}

// publisherChannel opens the publisher's connection and channel unless
// they are open.
func (h *harness) publisherChannel() {
	if h.model.connBy[BrokerConn] == nil {
		h.step(scenarios.Conn{Name: BrokerConn})
		h.step(scenarios.OpenChannel{Conn: BrokerConn, Name: BrokerChannel})
	}
}

func (h *harness) consume(t *rapid.T, ch *mChan, queue string) {
	o := scenarios.Consume{Channel: ch.name, Queue: queue}
	// A fresh tag, or now and then one live on this channel (530). Tags are
	// never reused on a channel after a cancel: RabbitMQ keys consumer
	// credit by tag, and a new consumer would inherit the old one's
	// settlements (not modelled).
	dup := slices.Sorted(maps.Keys(ch.live))
	if len(dup) > 0 && oneIn(t, 20, "reuseTag?") {
		o.Tag = rapid.SampledFrom(dup).Draw(t, "tag")
	} else {
		h.tags++
		o.Tag = fmt.Sprintf("c%d", h.tags)
	}
	o.NoAck = oneIn(t, 5, "noAck?")
	o.Exclusive = oneIn(t, 10, "exclusive?")
	if oneIn(t, 6, "x-priority?") {
		o.Args = protocol.Table{"x-priority": int32(rapid.IntRange(-1, 2).Draw(t, "x-priority"))}
	}
	h.step(o)
}

func (h *harness) settle(t *rapid.T, method string) {
	ch := h.channel(t)
	o := scenarios.Settle{Method: method, Channel: ch.name, Tag: h.deliveryTag(t, ch, method)}
	if method != "reject" {
		if o.Tag == 0 {
			o.Multiple = !oneIn(t, 10, "notMultiple?") // tag 0 alone is unknown
		} else {
			o.Multiple = oneIn(t, 3, "multiple?")
		}
	}
	if method != "ack" {
		o.Requeue = rapid.Bool().Draw(t, "requeue")
	}
	h.step(o)
}

// weights makes some actions more frequent: rapid picks among action names
// uniformly, so an action of weight n gets n names ("Ack", "Ack#2", ...).
var weights = map[string]int{
	"ChannelPublish": 3, "BrokerPublish": 2, "Consume": 3, "Ack": 4, "Get": 3, "Qos": 2, "Advance": 2,
}

func (h *harness) actions() map[string]func(*rapid.T) {
	acts := h.baseActions()
	for name, n := range weights {
		for i := 2; i <= n; i++ {
			acts[fmt.Sprintf("%s#%d", name, i)] = acts[name]
		}
	}
	return acts
}

var advances = []time.Duration{time.Millisecond, time.Second, time.Minute, 31 * time.Minute, 100 * time.Millisecond, 10 * time.Second}
