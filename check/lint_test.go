package check_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/amqpsim/amqpsim/check"
	"github.com/amqpsim/amqpsim/scenarios"
	"github.com/amqpsim/amqpsim/sim"
)

// run is a broker with one connection and a queue "q", on which a test
// plays a client and then lints the trace.
type run struct {
	t  *testing.T
	b  *sim.Broker
	c  *sim.Connection
	ch *sim.Channel
}

func newRun(t *testing.T, args sim.Table) *run {
	t.Helper()
	return newRunOn(t, sim.DefaultVersion, args)
}

// newRunOn is newRun on release v: 3.10 for a channel-wide qos (4.3,
// the default, denies global_qos and applies global=true per consumer).
func newRunOn(t *testing.T, v sim.Version, args sim.Table) *run {
	t.Helper()
	b := sim.New(sim.Config{Version: v})
	c := b.Connect("app")
	ch, _ := c.Channel()
	if _, err := ch.QueueDeclare("q", sim.QueueOptions{Args: args}); err != nil {
		t.Fatal(err)
	}
	return &run{t: t, b: b, c: c, ch: ch}
}

func (r *run) publish(n int) {
	for i := range n {
		r.b.Publish("/", "", "q", sim.Message{Body: []byte(fmt.Sprint("m", i))})
	}
}

// rules returns the rules Lint reports, once each, in order, every rule on
// but those disabled.
func (r *run) rules(disable ...check.Rule) []check.Rule {
	var out []check.Rule
	for _, f := range check.Lint(r.b.Trace(), check.Options{Disable: disable, Enable: []check.Rule{check.PublishWithoutConfirms}}) {
		if len(out) == 0 || out[len(out)-1] != f.Rule {
			out = append(out, f.Rule)
		}
	}
	return out
}

func want(t *testing.T, got []check.Rule, want ...check.Rule) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("rules %v, want %v", got, want)
	}
}

// ackAll acks every delivery c is given, in turn, until none is left;
// more than most deliveries fail the test (a queue that gives without
// end is a bug, not a long queue).
func ackAll(t *testing.T, ch *sim.Channel, c *sim.Consumer, most int) {
	t.Helper()
	for range most {
		d, ok := c.Next()
		if !ok {
			return
		}
		ch.Ack(d.DeliveryTag, false)
	}
	if _, ok := c.Next(); ok {
		t.Fatalf("consumer %s was given more than %d deliveries", c.Tag(), most)
	}
}

// A consumer with a window, acking all it gets: no findings.
func TestLintCleanConsumer(t *testing.T) {
	r := newRun(t, sim.Table{"x-dead-letter-exchange": ""})
	r.ch.Qos(10, 0, false)
	c, _ := r.ch.Consume("q", sim.ConsumeOptions{Tag: "c"})
	r.publish(20)
	ackAll(t, r.ch, c, 20)
	want(t, r.rules())
}

func TestLintConsumeBeforeQos(t *testing.T) {
	r := newRun(t, nil)
	r.ch.Consume("q", sim.ConsumeOptions{Tag: "c"})
	r.ch.Qos(10, 0, false)
	want(t, r.rules(check.UnlimitedPrefetch), check.ConsumeBeforeQos)
	fresh := newRun(t, nil)
	fresh.ch.Qos(10, 0, false)
	fresh.ch.Consume("q", sim.ConsumeOptions{Tag: "c"})
	want(t, fresh.rules())
	// A second basic.qos meant to replace the first leaves the consumer
	// with the first's window.
	second := newRun(t, nil)
	second.ch.Qos(5, 0, false)
	second.ch.Consume("q", sim.ConsumeOptions{Tag: "c"})
	second.ch.Qos(10, 0, false)
	want(t, second.rules(), check.ConsumeBeforeQos)
}

func TestLintUnlimitedPrefetch(t *testing.T) {
	r := newRun(t, nil)
	r.ch.Consume("q", sim.ConsumeOptions{Tag: "c"})
	want(t, r.rules(), check.UnlimitedPrefetch)
	noAck := newRun(t, nil)
	noAck.ch.Consume("q", sim.ConsumeOptions{Tag: "c", NoAck: true})
	global := newRunOn(t, sim.V3_10, nil) // a channel-wide limit
	global.ch.Qos(50, 0, true)
	global.ch.Consume("q", sim.ConsumeOptions{Tag: "c"})
	want(t, noAck.rules())
	want(t, global.rules())
}

func TestLintSharedPrefetch(t *testing.T) {
	r := newRun(t, nil)
	r.ch.Qos(10, 0, false)
	r.ch.Consume("q", sim.ConsumeOptions{Tag: "a"})
	r.ch.Consume("q", sim.ConsumeOptions{Tag: "b"})
	want(t, r.rules(), check.SharedPrefetch)
	apart := newRun(t, nil)
	ch2, _ := apart.c.Channel()
	for i, ch := range []*sim.Channel{apart.ch, ch2} {
		ch.Qos(10, 0, false)
		ch.Consume("q", sim.ConsumeOptions{Tag: fmt.Sprint("c", i)})
	}
	want(t, apart.rules())
}

// On 3.10, where global=true is a channel-wide limit.
func TestLintQueuesShareChannel(t *testing.T) {
	r := newRunOn(t, sim.V3_10, nil)
	r.ch.QueueDeclare("q2", sim.QueueOptions{})
	r.ch.Qos(10, 0, true)
	r.ch.Consume("q", sim.ConsumeOptions{Tag: "a"})
	r.ch.Consume("q2", sim.ConsumeOptions{Tag: "b"})
	want(t, r.rules(), check.QueuesShareChannel)
	// One queue per channel, or a second consumer of the same queue, is not it.
	apart := newRunOn(t, sim.V3_10, nil)
	apart.ch.QueueDeclare("q2", sim.QueueOptions{})
	ch2, _ := apart.c.Channel()
	for i, ch := range []*sim.Channel{apart.ch, ch2} {
		ch.Qos(10, 0, true)
		ch.Consume([]string{"q", "q2"}[i], sim.ConsumeOptions{Tag: fmt.Sprint("c", i)})
		ch.Consume([]string{"q", "q2"}[i], sim.ConsumeOptions{Tag: fmt.Sprint("d", i)})
	}
	want(t, apart.rules())
}

// On 3.10, where global=true is a channel-wide limit.
func TestLintGlobalLimitCleared(t *testing.T) {
	r := newRunOn(t, sim.V3_10, nil)
	r.ch.Qos(50, 0, true)
	r.ch.Qos(10, 0, false)
	want(t, r.rules(), check.GlobalLimitCleared)
	both := newRunOn(t, sim.V3_10, nil) // the order that keeps both limits
	both.ch.Qos(10, 0, false)
	both.ch.Qos(50, 0, true)
	want(t, both.rules())
	// A global qos of 0 sets no limit, so a per-consumer one after it
	// clears nothing.
	zero := newRunOn(t, sim.V3_10, nil)
	zero.ch.Qos(0, 0, true)
	zero.ch.Qos(10, 0, false)
	want(t, zero.rules())
}

// On 4.3, which denies global_qos, basic.qos global=true is a per-consumer
// prefetch, and Lint judges what the broker did (the trace's
// GlobalDenied), not the flag the client sent: no channel-wide limit is
// cleared, two consumers after it share nothing, a consumer before it
// keeps its window. The same calls on 3.10 are judged the other way.
func TestLintGlobalQosDenied(t *testing.T) {
	for _, v := range []sim.Version{sim.V4_3, sim.V3_10} {
		on43 := v == sim.V4_3
		cleared := newRunOn(t, v, nil)
		cleared.ch.Qos(50, 0, true)
		cleared.ch.Qos(10, 0, false)
		shared := newRunOn(t, v, nil)
		shared.ch.Qos(10, 0, true)
		shared.ch.Consume("q", sim.ConsumeOptions{Tag: "a"})
		shared.ch.Consume("q", sim.ConsumeOptions{Tag: "b"})
		before := newRunOn(t, v, nil)
		before.ch.Qos(5, 0, false)
		before.ch.Consume("q", sim.ConsumeOptions{Tag: "c"})
		before.ch.Qos(10, 0, true)
		if on43 {
			want(t, cleared.rules())
			want(t, shared.rules(), check.SharedPrefetch)
			want(t, before.rules(), check.ConsumeBeforeQos)
			fs := check.Lint(before.b.Trace(), check.Options{})
			if len(fs) != 1 || !strings.Contains(fs[0].Message, "basic.qos(10, global=true), which this release applies per consumer (global_qos is denied), on its channel and keeps prefetch 5") {
				t.Errorf("4.3 consume-before-qos: %v", fs)
			}
		} else {
			want(t, cleared.rules(), check.GlobalLimitCleared)
			want(t, shared.rules())
			want(t, before.rules())
		}
	}
}

func TestLintGetPolling(t *testing.T) {
	r := newRun(t, nil)
	r.publish(3)
	for range 10 {
		r.ch.Get("q", true)
	}
	want(t, r.rules(), check.GetPolling)
	few := newRun(t, nil)
	few.publish(3)
	for range 3 {
		few.ch.Get("q", true)
	}
	want(t, few.rules())
}

func TestLintUnackedAtEnd(t *testing.T) {
	r := newRun(t, nil)
	r.ch.Qos(5, 0, false)
	r.ch.Consume("q", sim.ConsumeOptions{Tag: "c"})
	r.publish(2)
	want(t, r.rules(), check.UnackedAtEnd)
	r.ch.Ack(0, true)
	want(t, r.rules())
}

func TestLintRedeliveryLoop(t *testing.T) {
	for _, tc := range []struct {
		args  sim.Table
		rules []check.Rule
	}{
		{nil, []check.Rule{check.RedeliveryLoop}},
		{sim.Table{"x-dead-letter-exchange": ""}, nil},
	} {
		r := newRun(t, tc.args)
		r.ch.Qos(1, 0, false)
		c, _ := r.ch.Consume("q", sim.ConsumeOptions{Tag: "c"})
		r.publish(1)
		for range 6 {
			d, _ := c.Next()
			r.ch.Nack(d.DeliveryTag, false, true)
		}
		want(t, r.rules(check.UnackedAtEnd), tc.rules...)
	}
}

func TestLintRejectWithoutDLX(t *testing.T) {
	for _, tc := range []struct {
		args  sim.Table
		rules []check.Rule
	}{
		{nil, []check.Rule{check.RejectWithoutDLX}},
		{sim.Table{"x-dead-letter-exchange": ""}, nil},
	} {
		r := newRun(t, tc.args)
		r.publish(1)
		d, _, _ := r.ch.Get("q", false)
		r.ch.Reject(d.DeliveryTag, false)
		want(t, r.rules(), tc.rules...)
	}
}

func TestLintCloseWithUnacked(t *testing.T) {
	for _, n := range []int{100, 99} {
		r := newRun(t, nil)
		ch, _ := r.c.Channel()
		ch.Qos(200, 0, false)
		ch.Consume("q", sim.ConsumeOptions{Tag: "c"})
		r.publish(n)
		ch.Close()
		if got := r.rules(); n == 100 {
			want(t, got, check.CloseWithUnacked)
		} else {
			want(t, got)
		}
	}
}

func TestLintNearConsumerTimeout(t *testing.T) {
	r := newRun(t, nil)
	r.ch.Qos(1, 0, false)
	c, _ := r.ch.Consume("q", sim.ConsumeOptions{Tag: "c"})
	r.publish(1)
	r.b.Advance(25 * time.Minute) // 25 of 30 minutes
	d, _ := c.Next()
	r.ch.Ack(d.DeliveryTag, false)
	want(t, r.rules(), check.NearConsumerTimeout)
	quick := newRun(t, nil)
	quick.ch.Qos(1, 0, false)
	qc, _ := quick.ch.Consume("q", sim.ConsumeOptions{Tag: "c"})
	quick.publish(1)
	quick.b.Advance(time.Minute)
	qd, _ := qc.Next()
	quick.ch.Ack(qd.DeliveryTag, false)
	want(t, quick.rules())
}

func TestLintPublishWithoutConfirms(t *testing.T) {
	r := newRun(t, nil)
	r.ch.Publish("", "q", sim.PublishOptions{}, sim.Message{})
	want(t, r.rules(), check.PublishWithoutConfirms)
	if fs := check.Lint(r.b.Trace(), check.Options{}); len(fs) != 0 {
		t.Errorf("an opt-in rule reported by default: %v", fs)
	}
	for _, mode := range []func(*sim.Channel) error{func(ch *sim.Channel) error { return ch.Confirm() }, (*sim.Channel).Tx} {
		ok := newRun(t, nil)
		mode(ok.ch)
		ok.ch.Publish("", "q", sim.PublishOptions{}, sim.Message{})
		want(t, ok.rules())
	}
}

// A finding names its rule, where it was found and the events that show it.
func TestFindingString(t *testing.T) {
	r := newRun(t, nil)
	r.ch.Consume("q", sim.ConsumeOptions{Tag: "c"})
	fs := check.Lint(r.b.Trace(), check.Options{})
	if len(fs) != 1 {
		t.Fatalf("findings %v", fs)
	}
	if got := fs[0].String(); got != "unlimited-prefetch (app/1, consumer c, queue q; events [3]): a manual-ack consumer with no prefetch limit: RabbitMQ pushes it the whole queue, and on a reconnect against a deep queue the whole backlog arrives at once" {
		t.Errorf("String = %q", got)
	}
	if e := r.b.Trace()[fs[0].Events[0]]; e.Kind != sim.EventCall || e.ConsumerTag != "c" {
		t.Errorf("the cited event is %v", e)
	}
}

// A delivery that did time out is not "near" the consumer timeout: the
// channel.close says what happened. On 4.0, whose consumer timeout closes
// the channel (4.3's quorum queue cancels the consumer instead: the test
// below); the same run with the ack a minute before the timeout is
// reported.
func TestLintNearConsumerTimeoutNotWhenTimedOut(t *testing.T) {
	for _, timedOut := range []bool{true, false} {
		b := sim.New(sim.Config{Version: sim.V4_0})
		ch, _ := b.Connect("app").Channel()
		if _, err := ch.QueueDeclare("q", sim.QueueOptions{Durable: true, Args: sim.Table{"x-queue-type": "quorum"}}); err != nil {
			t.Fatal(err)
		}
		ch.Qos(1, 0, false)
		c, _ := ch.Consume("q", sim.ConsumeOptions{Tag: "c"})
		b.Publish("/", "", "q", sim.Message{Body: []byte("m")})
		d, _ := c.Next()
		if timedOut {
			b.Advance(31 * time.Minute)
			if ch.Err() == nil {
				t.Fatal("the consumer timeout did not close the channel")
			}
		} else {
			b.Advance(29 * time.Minute)
			ch.Ack(d.DeliveryTag, false)
		}
		var got []check.Rule
		for _, f := range check.Lint(b.Trace(), check.Options{}) {
			got = append(got, f.Rule)
		}
		if timedOut {
			want(t, got)
		} else {
			want(t, got, check.NearConsumerTimeout)
		}
	}
}

// On 4.3 a quorum queue's consumer timeout takes the delivery back and
// cancels the consumer (basic.cancel), keeping the channel: the delivery
// timed out all the same, whether the client settles its tag late, which
// 4.3 takes, or never (then only unacked-at-end: the consumer takes
// nothing until its channel settles it). A delivery the queue did not time
// out with the other, acked a few minutes before its own timeout, is
// still reported; so is the 4.0 test's ack a minute before the timeout.
func TestLintNearConsumerTimeoutNotWhenTimedOut43(t *testing.T) {
	start := func(t *testing.T, prefetch int) (*sim.Broker, *sim.Channel, *sim.Consumer) {
		t.Helper()
		b := sim.New(sim.Config{Version: sim.V4_3})
		ch, _ := b.Connect("app").Channel()
		if _, err := ch.QueueDeclare("q", sim.QueueOptions{Durable: true, Args: sim.Table{"x-queue-type": "quorum"}}); err != nil {
			t.Fatal(err)
		}
		ch.Qos(prefetch, 0, false)
		c, _ := ch.Consume("q", sim.ConsumeOptions{Tag: "c"})
		return b, ch, c
	}
	next := func(t *testing.T, c *sim.Consumer) sim.Delivery {
		t.Helper()
		d, ok := c.Next()
		if !ok {
			t.Fatal("no delivery")
		}
		return d
	}
	// timedOut advances past the timeout and checks that 4.3 cancelled
	// the consumer and kept the channel.
	timedOut := func(t *testing.T, b *sim.Broker, ch *sim.Channel, d time.Duration) {
		t.Helper()
		b.Advance(d)
		if err := ch.Err(); err != nil {
			t.Fatalf("the consumer timeout closed the channel: %v", err)
		}
		if cs := ch.Cancels(); len(cs) != 1 || cs[0].ConsumerTag != "c" {
			t.Fatalf("cancellations %v, want the consumer timeout's of c", cs)
		}
	}
	rules := func(b *sim.Broker) []check.Rule {
		var got []check.Rule
		for _, f := range check.Lint(b.Trace(), check.Options{}) {
			got = append(got, f.Rule)
		}
		return got
	}

	t.Run("settled late", func(t *testing.T) {
		b, ch, c := start(t, 1)
		b.Publish("/", "", "q", sim.Message{Body: []byte("m")})
		d := next(t, c)
		timedOut(t, b, ch, 31*time.Minute)
		if err := ch.Ack(d.DeliveryTag, false); err != nil {
			t.Fatal(err)
		}
		again := next(t, c) // the consumer is up again: the message comes back
		ch.Ack(again.DeliveryTag, false)
		want(t, rules(b))
	})
	t.Run("never settled", func(t *testing.T) {
		b, ch, c := start(t, 1)
		b.Publish("/", "", "q", sim.Message{Body: []byte("m")})
		next(t, c)
		timedOut(t, b, ch, 31*time.Minute)
		want(t, rules(b), check.UnackedAtEnd)
	})
	t.Run("another delivery near its own timeout", func(t *testing.T) {
		b, ch, c := start(t, 2)
		b.Publish("/", "", "q", sim.Message{Body: []byte("m1")})
		d1 := next(t, c)
		b.Advance(10 * time.Minute)
		b.Publish("/", "", "q", sim.Message{Body: []byte("m2")})
		d2 := next(t, c)
		timedOut(t, b, ch, 21*time.Minute) // m1 timed out at 30m, m2 is due at 40m
		ch.Ack(d1.DeliveryTag, false)
		b.Advance(5 * time.Minute)
		ch.Ack(d2.DeliveryTag, false) // 26 of its 30 minutes
		ackAll(t, ch, c, 1)           // m1 again
		fs := check.Lint(b.Trace(), check.Options{})
		if len(fs) != 1 || fs[0].Rule != check.NearConsumerTimeout || string(b.Trace()[fs[0].Events[0]].Body) != "m2" {
			t.Fatalf("findings %v, want near-consumer-timeout for m2's delivery", fs)
		}
	})
	t.Run("acked before the timeout", func(t *testing.T) {
		b, ch, c := start(t, 1)
		b.Publish("/", "", "q", sim.Message{Body: []byte("m")})
		d := next(t, c)
		b.Advance(29 * time.Minute)
		ch.Ack(d.DeliveryTag, false)
		want(t, rules(b), check.NearConsumerTimeout)
	})
}

// A finding names a reconnected connection as the failure report does:
// the second connection called invoice-svc is invoice-svc-2 in both.
func TestLintNamesAReconnectAsTheReport(t *testing.T) {
	b := sim.New(sim.Config{})
	first := b.Connect("invoice-svc")
	ch, _ := first.Channel()
	ch.QueueDeclare("q", sim.QueueOptions{})
	ch.Qos(1, 0, false)
	ch.Consume("q", sim.ConsumeOptions{Tag: "c"})
	first.Close()
	ch, _ = b.Connect("invoice-svc").Channel()
	ch.Consume("q", sim.ConsumeOptions{Tag: "c"}) // no prefetch this time

	fs := check.Lint(b.Trace(), check.Options{})
	if len(fs) != 1 || fs[0].Rule != check.UnlimitedPrefetch || fs[0].Conn != "invoice-svc-2" ||
		!strings.HasPrefix(fs[0].String(), "unlimited-prefetch (invoice-svc-2/1, consumer c") {
		t.Fatalf("findings %v, want unlimited-prefetch on invoice-svc-2/1", fs)
	}
	s, _, err := scenarios.FromTrace(b.Trace(), scenarios.TraceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if text := string(s.Format()); !strings.Contains(text, "conn invoice-svc-2\nchannel invoice-svc-2.invoice-svc-2-ch1\nconsume invoice-svc-2-ch1 q tag=c\n") {
		t.Errorf("the report names the reconnect otherwise:\n%s", text)
	}
}
