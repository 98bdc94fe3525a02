package amqpsim_test

// Model-based property tests of the whole broker (DESIGN.md, "Testing").
//
// TestModel runs random sequences of operations on up to 3 open connections,
// up to 4 open channels, 3 queues and up to 6 live consumers. Queues may
// have x-max-priority, x-single-active-consumer, x-message-ttl (0 too),
// x-expires, x-max-length and x-max-length-bytes with any x-overflow, and
// dead-letter through the default exchange to another queue, to
// themselves, or nowhere (so chains and cycles happen); messages may have
// a priority and an expiration; the clock advances by 1 ms to 31 minutes.
// After every operation it
//
//   - compares everything a client or operator can observe (each consumer's
//     deliveries with their x-death headers, get results, errors, which
//     channels and connections are closed, returns, confirms and their
//     nacks, broker cancels, queue stats, ready lists, channel and consumer
//     stats) with a naive reference model (model_test.go);
//   - checks DESIGN.md's invariants 1-7 and 9 from the simulator's
//     observations and its own trace alone (invariants_test.go), among them
//     conservation: every routed message is in exactly one place - ready,
//     unacked, or gone as acknowledged, rejected, expired, dropped,
//     refused at publish, purged or deleted - and a dead-lettered one
//     moves on to its next queue;
//
// and at the end of each sequence it replays the operations on a fresh
// broker and requires the same trace (invariant 10). Invariant 8 (round
// robin) is checked by the model comparison, which fixes who gets each
// message.
//
// The default run is 1,000 sequences; AMQPSIM_CHECKS=n (or -rapid.checks=n)
// runs n. A failure prints the shrunk sequence, one operation per line
// ("conn1.ch2.Ack(3,multiple)"), and a diff of model and simulator, and
// writes the sequence as a scenario file to record against RabbitMQ as a
// regression test (counterexample_test.go; AMQPSIM_COUNTEREXAMPLES=dir, or
// =testdata for testdata/counterexamples/).

import (
	"flag"
	"fmt"
	"maps"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"pgregory.net/rapid"
)

// steps is the average number of actions per sequence unless -rapid.steps
// says otherwise.
const steps = "100"

const (
	maxOpenConns    = 3
	maxOpenChannels = 4
	maxLiveCons     = 6
)

var queueNames = []string{"q1", "q2", "q3"}

// harness runs one sequence against the simulator, the model and the
// invariant checker.
type harness struct {
	t     tb
	seed  uint64
	sim   *simWorld
	model *model
	inv   *checker
	ops   []op
	msgs  int // bodies are m1, m2, ...
	tags  int // consumer tags are c1, c2, ...
	// failure is the first line of the check that failed, for the header
	// of a counterexample file.
	failure string
}

// tb is what the harness needs of *rapid.T or *testing.T.
type tb interface {
	Helper()
	Logf(format string, args ...any)
	Fatalf(format string, args ...any)
}

func newHarness(t *rapid.T, mutant bool) *harness {
	return newHarnessSeed(t, rapid.Uint64Range(1, 4).Draw(t, "seed"), mutant)
}

func newHarnessSeed(t tb, seed uint64, mutant bool) *harness {
	h := &harness{t: t, seed: seed, sim: newSimWorld(seed), model: newModel(seed), inv: newChecker()}
	h.model.mutant = mutant
	return h
}

// replay runs written-out operations, filling in their handles' labels.
func (h *harness) replay(ops ...op) {
	for _, o := range ops {
		switch o.Kind {
		case opConnect:
			o.Conn, o.Label = len(h.model.conns), fmt.Sprintf("conn%d", len(h.model.conns)+1)
		case opCloseConn:
			o.Label = h.model.conns[o.Conn].name
		case opOpenChannel:
			o.Ch = len(h.model.chans)
			_, o.Label = h.model.nextChannel(o.Conn)
		case opConsume:
			o.Cons = len(h.model.cons)
			fallthrough
		default:
			if o.Kind != opBrokerPublish && o.Kind != opAdvance {
				o.Label = h.model.chans[o.Ch].label
			}
		}
		h.step(o)
	}
	h.checkDeterminism()
}

// diffOpts make a model/simulator diff readable: bodies as text.
var diffOpts = []cmp.Option{
	cmpopts.EquateEmpty(),
	cmp.Transformer("text", func(b []byte) string { return string(b) }),
}

// step performs one operation everywhere and checks the outcome.
func (h *harness) step(o op) {
	t := h.t
	t.Helper()
	h.ops = append(h.ops, o)
	t.Logf("%3d  %s", len(h.ops), o)
	got := h.sim.observe(h.sim.apply(o))
	want := h.model.observe(h.model.apply(o))
	if !reflect.DeepEqual(got, want) {
		if diff := cmp.Diff(want, got, diffOpts...); diff != "" {
			h.failure = fmt.Sprintf("after %s the simulator and the model disagree", o)
			t.Fatalf("after %s the simulator and the model disagree (-model +simulator):\n%s", o, diff)
		}
	}
	if bad := h.inv.check(o, got, h.sim.b.Trace()); len(bad) > 0 {
		first, _, _ := strings.Cut(bad[0], "\n")
		h.failure = fmt.Sprintf("after %s: %s", o, first)
		t.Fatalf("after %s:\n%s", o, joinLines(bad))
	}
}

// checkDeterminism replays the sequence on a fresh broker: the trace must
// be the same (invariant 10).
func (h *harness) checkDeterminism() {
	w := newSimWorld(h.seed)
	for _, o := range h.ops {
		w.apply(o)
	}
	first, replay := h.sim.b.Trace(), w.b.Trace()
	if reflect.DeepEqual(first, replay) {
		return
	}
	if diff := cmp.Diff(first, replay); diff != "" {
		h.failure = "invariant 10: the same operations gave a different trace"
		h.t.Fatalf("invariant 10: the same operations gave a different trace (-first +replay):\n%s", diff)
	}
}

// Model state the generators choose from.

func (h *harness) openConns() []int {
	var out []int
	for i, c := range h.model.conns {
		if !c.closed {
			out = append(out, i)
		}
	}
	return out
}

func (h *harness) openChans() []int {
	var out []int
	for i, ch := range h.model.chans {
		if ch != nil && !ch.closed {
			out = append(out, i)
		}
	}
	return out
}

func (h *harness) liveCons() []int {
	var out []int
	for i, c := range h.model.cons {
		if c != nil && !c.cancelled {
			out = append(out, i)
		}
	}
	return out
}

// channel picks a channel for a method: almost always an open one, now and
// then a closed one (the call must fail with the reason it closed).
func (h *harness) channel(t *rapid.T) (int, *mChan) {
	open := h.openChans()
	if len(open) == 0 {
		// Keep the sequence going: reopen rather than skip.
		conns := h.openConns()
		if len(conns) == 0 {
			h.connect()
			conns = h.openConns()
		}
		h.openChannel(rapid.SampledFrom(conns).Draw(t, "conn"))
		open = h.openChans()
	}
	i := rapid.SampledFrom(open).Draw(t, "channel")
	if oneIn(t, 30, "closedChannel?") {
		var closed []int
		for j, ch := range h.model.chans {
			if ch != nil && ch.closed {
				closed = append(closed, j)
			}
		}
		if len(closed) > 0 {
			i = rapid.SampledFrom(closed).Draw(t, "channel")
		}
	}
	return i, h.model.chans[i]
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

func (h *harness) qos(t *rapid.T, i int) {
	o := op{Kind: opQos, Ch: i, Label: h.model.chans[i].label, Count: rapid.IntRange(0, 3).Draw(t, "count"), Global: rapid.Bool().Draw(t, "global")}
	if oneIn(t, 60, "prefetchSize?") {
		o.Size = 1024
	}
	h.step(o)
}

func (h *harness) connect() {
	h.step(op{Kind: opConnect, Conn: len(h.model.conns), Label: fmt.Sprintf("conn%d", len(h.model.conns)+1)})
}

func (h *harness) openChannel(conn int) {
	_, label := h.model.nextChannel(conn)
	h.step(op{Kind: opOpenChannel, Conn: conn, Ch: len(h.model.chans), Label: label})
}

func (h *harness) declare(t *rapid.T, ch int, name string) {
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
	if oneIn(t, 2, "x-dead-letter-exchange?") {
		// Mostly the next queue in the ring q1 -> q2 -> q3 -> q1, which
		// makes chains and cycles.
		i := slices.Index(queueNames, name)
		next, other := queueNames[(i+1)%3], queueNames[(i+2)%3]
		args.DLX = true
		args.DLRK = rapid.SampledFrom([]string{next, next, other, name, "", "nosuch"}).Draw(t, "x-dead-letter-routing-key")
	}
	if q := h.model.queues[name]; q != nil && !oneIn(t, 5, "inequivalent?") {
		args = q.args // mostly an equivalent redeclaration
	}
	passive := oneIn(t, 20, "passive?")
	h.step(op{Kind: opDeclare, Ch: ch, Queue: name, Args: args, Passive: passive, Label: h.model.chans[ch].label})
}

func (h *harness) setup(t *rapid.T) {
	h.connect()
	h.openChannel(0)
	if rapid.Bool().Draw(t, "secondChannel?") {
		h.openChannel(0)
	}
	h.declare(t, 0, "q1")
	if rapid.Bool().Draw(t, "q2?") {
		h.declare(t, 0, "q2")
	}
}

// deliveryTag picks a delivery tag to settle: mostly one outstanding on
// the channel, sometimes 0, sometimes any tag (which may be unknown: 406).
func (h *harness) deliveryTag(t *rapid.T, ch *mChan, kind opKind) uint64 {
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
	case kind != opReject && !oneIn(t, 3, "anyTag?"):
		return 0
	default:
		return rapid.Uint64Range(1, ch.lastTag+1).Draw(t, "tag")
	}
}

func (h *harness) publish(t *rapid.T, viaBroker bool) {
	n := rapid.IntRange(1, 4).Draw(t, "messages")
	var ch int
	var mc *mChan
	if !viaBroker {
		ch, mc = h.channel(t)
	}
	for range n {
		h.msgs++
		o := op{Kind: opBrokerPublish, Queue: h.queue(t), Body: fmt.Sprintf("m%d", h.msgs)}
		if oneIn(t, 4, "priority?") {
			o.Priority = uint8(rapid.IntRange(1, 6).Draw(t, "priority"))
		}
		if oneIn(t, 4, "expiration?") {
			o.Expire = rapid.SampledFrom([]string{"1000", "0", "1", "5000", "60000"}).Draw(t, "expiration")
		}
		if !viaBroker {
			o.Kind, o.Ch, o.Label = opPublish, ch, mc.label
			o.Mandatory = rapid.Bool().Draw(t, "mandatory")
			if oneIn(t, 100, "missingExchange?") {
				o.Exchange = "nosuch"
			}
		}
		h.step(o)
	}
}

func (h *harness) consume(t *rapid.T, i int, queue string) {
	ch := h.model.chans[i]
	o := op{Kind: opConsume, Ch: i, Cons: len(h.model.cons), Label: ch.label, Queue: queue}
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
		o.HasXPrio, o.XPrio = true, rapid.IntRange(-1, 2).Draw(t, "x-priority")
	}
	h.step(o)
}

func (h *harness) settle(t *rapid.T, kind opKind) {
	i, ch := h.channel(t)
	o := op{Kind: kind, Ch: i, Label: ch.label, DTag: h.deliveryTag(t, ch, kind)}
	if kind != opReject {
		if o.DTag == 0 {
			o.Multiple = !oneIn(t, 10, "notMultiple?") // tag 0 alone is unknown
		} else {
			o.Multiple = oneIn(t, 3, "multiple?")
		}
	}
	if kind != opAck {
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

func (h *harness) baseActions() map[string]func(*rapid.T) {
	return map[string]func(*rapid.T){
		"Connect": func(t *rapid.T) {
			if len(h.openConns()) >= maxOpenConns {
				t.Skip("enough connections")
			}
			h.connect()
		},
		"CloseConnection": func(t *rapid.T) {
			destructive(t)
			i := rapid.IntRange(0, len(h.model.conns)-1).Draw(t, "conn")
			h.step(op{Kind: opCloseConn, Conn: i, Label: h.model.conns[i].name})
		},
		"OpenChannel": func(t *rapid.T) {
			conns := h.openConns()
			if len(conns) == 0 || len(h.openChans()) >= maxOpenChannels {
				t.Skip("no connection or enough channels")
			}
			h.openChannel(rapid.SampledFrom(conns).Draw(t, "conn"))
			if rapid.Bool().Draw(t, "qos?") {
				h.qos(t, len(h.model.chans)-1)
			}
		},
		"CloseChannel": func(t *rapid.T) {
			destructive(t)
			i, ch := h.channel(t)
			h.step(op{Kind: opCloseChannel, Ch: i, Label: ch.label})
		},
		"QueueDeclare": func(t *rapid.T) {
			i, _ := h.channel(t)
			h.declare(t, i, rapid.SampledFrom(queueNames).Draw(t, "queue"))
		},
		"BrokerPublish":  func(t *rapid.T) { h.publish(t, true) },
		"ChannelPublish": func(t *rapid.T) { h.publish(t, false) },
		"ConfirmSelect": func(t *rapid.T) {
			i, ch := h.channel(t)
			h.step(op{Kind: opConfirm, Ch: i, Label: ch.label})
		},
		"Qos": func(t *rapid.T) {
			i, _ := h.channel(t)
			h.qos(t, i)
		},
		"Consume": func(t *rapid.T) {
			if len(h.liveCons()) >= maxLiveCons {
				t.Skip("enough consumers")
			}
			i, _ := h.channel(t)
			h.consume(t, i, h.queue(t))
		},
		// ConsumeEach consumes from every queue on one channel, and
		// PublishEach sends a message to every queue: they make channels
		// whose global limit spans several queues common.
		"ConsumeEach": func(t *rapid.T) {
			i, _ := h.channel(t)
			for _, q := range slices.Sorted(maps.Keys(h.model.queues)) {
				if len(h.liveCons()) < maxLiveCons && !h.model.chans[i].closed {
					h.consume(t, i, q)
				}
			}
		},
		"PublishEach": func(t *rapid.T) {
			for _, q := range slices.Sorted(maps.Keys(h.model.queues)) {
				h.msgs++
				h.step(op{Kind: opBrokerPublish, Queue: q, Body: fmt.Sprintf("m%d", h.msgs)})
			}
		},
		"Cancel": func(t *rapid.T) {
			live := h.liveCons()
			if len(live) == 0 || oneIn(t, 10, "unknownTag?") {
				i, ch := h.channel(t)
				h.step(op{Kind: opCancel, Ch: i, Label: ch.label, Tag: "nosuch"})
				return
			}
			c := h.model.cons[rapid.SampledFrom(live).Draw(t, "consumer")]
			h.step(op{Kind: opCancel, Ch: indexOf(h.model.chans, c.ch), Label: c.ch.label, Tag: c.tag})
		},
		"Get": func(t *rapid.T) {
			i, ch := h.channel(t)
			h.step(op{Kind: opGet, Ch: i, Label: ch.label, Queue: h.queue(t), NoAck: oneIn(t, 4, "noAck?")})
		},
		"Ack":    func(t *rapid.T) { h.settle(t, opAck) },
		"Nack":   func(t *rapid.T) { h.settle(t, opNack) },
		"Reject": func(t *rapid.T) { h.settle(t, opReject) },
		"Recover": func(t *rapid.T) {
			i, ch := h.channel(t)
			h.step(op{Kind: opRecover, Ch: i, Label: ch.label, Requeue: !oneIn(t, 20, "requeueFalse?")})
		},
		"QueuePurge": func(t *rapid.T) {
			i, ch := h.channel(t)
			h.step(op{Kind: opPurge, Ch: i, Label: ch.label, Queue: h.queue(t)})
		},
		"QueueDelete": func(t *rapid.T) {
			destructive(t)
			i, ch := h.channel(t)
			h.step(op{Kind: opDelete, Ch: i, Label: ch.label, Queue: h.queue(t),
				IfUnused: oneIn(t, 4, "ifUnused?"), IfEmpty: oneIn(t, 4, "ifEmpty?")})
		},
		"Advance": func(t *rapid.T) {
			d := rapid.SampledFrom([]time.Duration{time.Millisecond, time.Second, time.Minute, 31 * time.Minute, 100 * time.Millisecond, 10 * time.Second}).Draw(t, "duration")
			h.step(op{Kind: opAdvance, D: d})
		},
	}
}

func indexOf[T comparable](s []T, x T) int {
	for i, e := range s {
		if e == x {
			return i
		}
	}
	panic("not found")
}

// prop is one sequence. done, if set, sees each finished harness; cx, if
// set, writes the sequence rapid reports as failing as a scenario file.
func prop(mutant bool, done func(*harness), cx *counterexamples) func(*rapid.T) {
	return func(t *rapid.T) {
		h := newHarness(t, mutant)
		passed := false
		if cx != nil {
			final := cx.reported
			t.Cleanup(func() { cx.ended(h, final, passed && !t.Failed(), t.Failed()) })
		}
		h.setup(t)
		t.Repeat(h.actions())
		h.checkDeterminism()
		if done != nil {
			done(h)
		}
		passed = true
	}
}

// cmdline records the flags set on the command line, before these tests
// set any themselves (flag.Visit cannot tell the two apart later).
var cmdline = sync.OnceValue(func() map[string]bool {
	set := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
})

// withRapidFlag sets a rapid flag for the duration of a test, unless the
// command line set it.
func withRapidFlag(t *testing.T, name, value string) {
	if cmdline()[name] {
		return
	}
	f := flag.Lookup(name)
	if f == nil {
		t.Fatalf("no flag %s", name)
	}
	old := f.Value.String()
	if err := flag.Set(name, value); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = flag.Set(name, old) })
}

// checks is the number of sequences: AMQPSIM_CHECKS, else RAPID_CHECKS or
// -rapid.checks if given, else 1,000.
func checks(t *testing.T) {
	if s := os.Getenv("AMQPSIM_CHECKS"); s != "" {
		if _, err := strconv.Atoi(s); err != nil {
			t.Fatalf("AMQPSIM_CHECKS=%q: %v", s, err)
		}
		withRapidFlag(t, "rapid.checks", s)
		return
	}
	if _, ok := os.LookupEnv("RAPID_CHECKS"); !ok {
		withRapidFlag(t, "rapid.checks", "1000")
	}
}

func TestModel(t *testing.T) {
	checks(t)
	withRapidFlag(t, "rapid.steps", steps)
	cx := newCounterexamples(t, "")
	rapid.Check(cx, prop(false, nil, cx))
}

// TestModelRegressions replays sequences that once found a simulator bug.
func TestModelRegressions(t *testing.T) {
	conn := op{Kind: opConnect}
	open := op{Kind: opOpenChannel}
	pub := func(body string) op { return op{Kind: opBrokerPublish, Queue: "q1", Body: body} }
	for _, tc := range []struct {
		name string
		ops  []op
	}{
		// ChannelStats.NextTag was never filled in (always 0).
		{"next tag", []op{conn, open, {Kind: opDeclare, Queue: "q1"}, pub("m1"), {Kind: opGet, Queue: "q1"}}},
		// basic.get deliveries were requeued as one group, so m1 overtook
		// m2; RabbitMQ 3.10.8 settles each get on its own, in tag order,
		// and the prefetch-1 consumer gets m2.
		{"get deliveries settle one by one", []op{
			conn, open, open, {Kind: opDeclare, Queue: "q1"}, pub("m1"), pub("m2"),
			{Kind: opGet, Queue: "q1"}, {Kind: opGet, Queue: "q1"},
			{Kind: opNack, DTag: 1, Requeue: true}, {Kind: opGet, Queue: "q1"},
			{Kind: opQos, Ch: 1, Count: 1}, {Kind: opConsume, Ch: 1, Queue: "q1", Tag: "c1"},
			{Kind: opNack, DTag: 0, Multiple: true, Requeue: true},
		}},
		// Two channels time out at the same tick time: the one whose tick
		// was scheduled first closes first.
		{"consumer timeouts in tick order", []op{
			conn, open, open, {Kind: opDeclare, Queue: "q1"}, pub("m1"), pub("m2"),
			{Kind: opConsume, Queue: "q1", Tag: "c1"}, {Kind: opAck, DTag: 1},
			{Kind: opAdvance, D: time.Millisecond},
			{Kind: opConsume, Ch: 1, Queue: "q1", Tag: "c2"}, pub("m3"), pub("m4"),
			{Kind: opAdvance, D: 31 * time.Minute},
		}},
		// A message dead-lettered into a queue that the same flush had
		// already dispatched (q1, emptied when the consumer timeout closed
		// the channel) was never dispatched again: its TTL timer was never
		// set, and it never expired.
		{"dead-lettered into a queue already dispatched", []op{
			conn, open,
			{Kind: opDeclare, Queue: "q1", Args: qArgs{HasTTL: true, TTL: 1000}},
			{Kind: opDeclare, Queue: "q2", Args: qArgs{HasTTL: true, TTL: 1000, DLX: true, DLRK: "q1"}},
			{Kind: opBrokerPublish, Queue: "q2", Body: "m1"},
			{Kind: opConsume, Queue: "q1", Tag: "c1"},
			{Kind: opConsume, Queue: "q2", Tag: "c2"},
			{Kind: opAdvance, D: 31 * time.Minute},
		}},
		// A channel closing with its connection requeued into a drop-head
		// queue whose dropped head was dead-lettered to a queue with a
		// consumer on the connection's next channel, which got it
		// although the connection was already closing.
		{"no deliveries to a closing connection", []op{
			conn, open, open,
			{Kind: opDeclare, Queue: "q1", Args: qArgs{HasMaxLen: true, MaxLen: 1, DLX: true, DLRK: "q2"}},
			{Kind: opDeclare, Queue: "q2"},
			{Kind: opConsume, Ch: 1, Queue: "q2", Tag: "c1"},
			pub("m1"), {Kind: opGet, Queue: "q1"}, pub("m2"),
			{Kind: opCloseConn},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			newHarnessSeed(t, 1, false).replay(tc.ops...)
		})
	}
}

// TestModelCoverage checks that the generated sequences reach the
// situations the model is there to check; run it with -v to see how often.
func TestModelCoverage(t *testing.T) {
	// A fixed seed keeps the counts, and the test, stable.
	withRapidFlag(t, "rapid.checks", "300")
	withRapidFlag(t, "rapid.steps", steps)
	withRapidFlag(t, "rapid.seed", "20261130")
	total := map[string]int{}
	cx := newCounterexamples(t, "")
	rapid.Check(cx, prop(false, func(h *harness) {
		for k, n := range h.model.cover {
			total[k] += n
		}
	}, cx))
	for _, want := range []string{
		"consumer blocked by its prefetch",
		"consumer blocked by the global limit",
		"several consumers unblocked at once",
		"global limit released to several queues",
		"global limit switched on with basic.get deliveries unacked",
		"delivery filled the global limit",
		"single active consumer promoted",
		"redelivery to a consumer",
		"priority message delivered",
		"round robin within a band",
		"unroutable mandatory message returned",
		"error 403 basic.consume",
		"error 404 basic.consume",
		"error 406 basic.ack",
		"error 406 basic.nack",
		"error 406 basic.reject",
		"error 406 queue.declare",
		"error 406 queue.delete",
		"error 530 basic.consume",
		"error 540 basic.qos",
		"error 540 basic.recover",
		"consumer timeout",
		"message expired at the head",
		"message dropped from the head (max-length)",
		"reject-publish nack",
		"dead-lettered into another queue",
		"dead-lettered message delivered (expired)",
		"queue deleted by x-expires",
	} {
		if total[want] == 0 {
			t.Errorf("no sequence reached %q", want)
		}
	}
	keys := slices.Sorted(maps.Keys(total))
	for _, k := range keys {
		t.Logf("%6d  %s", total[k], k)
	}
}

// TestModelFailureIsReadable runs the test against a model with a planted
// bug (consumers get one more than the channel's prefetch) and checks that
// rapid's report shows the shrunk sequence as readable operations and the
// model/simulator diff.
func TestModelFailureIsReadable(t *testing.T) {
	withRapidFlag(t, "rapid.checks", "100")
	withRapidFlag(t, "rapid.nofailfile", "true")
	withRapidFlag(t, "rapid.shrinktime", "20s")
	rec := &recordingTB{name: t.Name()}
	rapid.Check(rec, prop(true, nil, nil))
	out := rec.out.String()
	if !rec.failed {
		t.Fatalf("the planted bug was not found; output:\n%s", out)
	}
	for _, want := range []string{
		"[rapid] failed",
		"conn1 = broker.Connect()",
		"conn1.ch1 = Channel()",
		".Consume(q1,tag=c",
		"the simulator and the model disagree (-model +simulator)",
		"Prefetch:",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q; it is:\n%s", want, out)
		}
	}
	if testing.Verbose() {
		t.Logf("the report of a planted bug:\n%s", out)
	}
}

// recordingTB is a rapid.TB that records instead of failing.
type recordingTB struct {
	name   string
	out    strings.Builder
	failed bool
}

func (r *recordingTB) Helper()                       {}
func (r *recordingTB) Name() string                  { return r.name }
func (r *recordingTB) Logf(format string, a ...any)  { fmt.Fprintf(&r.out, format+"\n", a...) }
func (r *recordingTB) Log(a ...any)                  { fmt.Fprintln(&r.out, a...) }
func (r *recordingTB) Skipf(format string, a ...any) { r.Logf(format, a...) }
func (r *recordingTB) Skip(a ...any)                 { r.Log(a...) }
func (r *recordingTB) SkipNow()                      {}
func (r *recordingTB) Errorf(format string, a ...any) {
	r.failed = true
	r.Logf(format, a...)
}
func (r *recordingTB) Error(a ...any)                 { r.failed = true; r.Log(a...) }
func (r *recordingTB) Fatalf(format string, a ...any) { r.Errorf(format, a...) }
func (r *recordingTB) Fatal(a ...any)                 { r.Error(a...) }
func (r *recordingTB) FailNow()                       { r.failed = true }
func (r *recordingTB) Fail()                          { r.failed = true }
func (r *recordingTB) Failed() bool                   { return r.failed }
