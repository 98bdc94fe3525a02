package queue_test

import (
	"errors"
	"testing"
	"time"

	"github.com/amqpsim/amqpsim/consumer"
	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/queue"
)

// The quorum queue's own consumer timeout (Rules.QuorumConsumerTimeout,
// RabbitMQ 4.3), on the rules of 4.3 that come with it. The library's
// quorum-consumer-timeout*.txt pin the same on 4.3.6 through the broker.

// rules43 are the 4.3 rules the timeout is measured with.
var rules43 = queue.Rules{QuorumConsumerTimeout: true, SplitDeliveryCount: true, DefaultDeliveryLimit: 20,
	ReturnsByConsumerKey: true, QuorumSACPriority: true}

func newQuorum43(t *testing.T, extra protocol.Table) (testQueue, *qenv) {
	t.Helper()
	e := &qenv{env: env{timers: map[queue.Timer]int64{}, consumerTimeout: 30 * time.Minute}}
	q, err := queue.New[int](e, "/", "q", queue.Options{Durable: true, Args: quorumArgs(extra), Rules: rules43})
	if err != nil {
		t.Fatal(err)
	}
	return q, e
}

// maxFirings bounds the consumer timeout firings of one advanceTo: the
// tests time out a handful of deliveries, so a timer that keeps falling
// due is a bug, not a test that needs more.
const maxFirings = 100

// advanceTo moves the env's clock to at, firing the consumer timeout
// timer first when it falls due on the way. A timer set again for the
// time it fired at or before, or more than maxFirings firings, fail the
// test rather than loop.
func advanceTo(t *testing.T, q testQueue, e *qenv, at time.Duration) {
	t.Helper()
	for range maxFirings {
		due, ok := e.timers[queue.ConsumerTimeoutTimer]
		if !ok || due > int64(at) {
			e.now = int64(at)
			return
		}
		e.now = due
		delete(e.timers, queue.ConsumerTimeoutTimer)
		q.TimerFired(queue.ConsumerTimeoutTimer)
		q.Dispatch()
		if again, ok := e.timers[queue.ConsumerTimeoutTimer]; ok && again <= due {
			t.Fatalf("the consumer timeout fired at %v and was set again for %v", time.Duration(due), time.Duration(again))
		}
	}
	t.Fatalf("the consumer timeout fired %d times on the way to %v", maxFirings, at)
}

func prefetched(tag string, prefetch int) *consumer.Consumer[int] {
	groupSeq++
	return consumer.New(consumer.Settings{Tag: tag, Prefetch: prefetch}, &consumer.Group[int]{}, groupSeq)
}

func settle(q testQueue, c *consumer.Consumer[int], how queue.Settlement, ms ...*queue.Message) {
	for _, m := range ms {
		q.Settle([]queue.Settled[int]{{Message: m, Consumer: c}}, how)
	}
	q.Dispatch()
}

// Each delivery is due back at its own time, the queue's timeout after
// it, not the consumer's first: m1 at 3 s, m2 at 4 s. The message goes
// back to the returns, served first, and the consumer hears of each
// timeout once.
func TestQuorumTimeoutPerDelivery(t *testing.T) {
	q, e := newQuorum43(t, protocol.Table{"x-consumer-timeout": int64(3000)})
	a := prefetched("A", 2)
	queue.AddConsumer(q, a)
	enqueue(q, 0, "m1")
	q.Dispatch()
	advanceTo(t, q, e, time.Second)
	enqueue(q, 0, "m2", "m3")
	q.Dispatch()
	if due := e.timers[queue.ConsumerTimeoutTimer]; due != int64(3*time.Second) {
		t.Fatalf("timer at %v, want 3s", time.Duration(due))
	}
	advanceTo(t, q, e, 3*time.Second-1)
	check(t, "before 3s", []string(nil), e.timedOut)
	advanceTo(t, q, e, 3*time.Second)
	check(t, "at 3s", []string{"A:m1"}, e.timedOut)
	check(t, "ready at 3s", []string{"m1", "m3"}, ready(q))
	if q.Unacked() != 1 || q.Stats().TimedOut != 1 {
		t.Errorf("unacked %d timed out %d, want 1 and 1", q.Unacked(), q.Stats().TimedOut)
	}
	advanceTo(t, q, e, 4*time.Second)
	check(t, "at 4s", []string{"A:m1", "A:m2"}, e.timedOut)
	check(t, "ready at 4s", []string{"m1", "m2", "m3"}, ready(q))
	check(t, "deliveries", []string{"A:m1", "A:m2"}, e.delivered)
	if _, ok := e.timers[queue.ConsumerTimeoutTimer]; ok {
		t.Error("the timer runs with nothing out")
	}
	if q.ConsumerCount() != 1 || !a.Paused() {
		t.Errorf("consumers %d paused %t, want the consumer kept, paused", q.ConsumerCount(), a.Paused())
	}
}

// The consumer takes nothing until every timed-out delivery is settled;
// a settlement of one is not a settlement of the message, which stays
// where the timeout put it. The message comes back with x-acquired-count
// 1 and no x-delivery-count: the timeout is no failed delivery, so even
// x-delivery-limit 0 does not dead-letter it.
func TestQuorumTimeoutAckResumes(t *testing.T) {
	q, e := newQuorum43(t, protocol.Table{"x-consumer-timeout": int64(1000), "x-delivery-limit": int64(0)})
	a := prefetched("A", 2)
	queue.AddConsumer(q, a)
	enqueue(q, 0, "m1", "m2")
	q.Dispatch()
	m1, m2 := e.got[0], e.got[1]
	advanceTo(t, q, e, time.Second)
	check(t, "timed out", []string{"A:m1,m2"}, e.timedOut)
	enqueue(q, 0, "m3")
	q.Dispatch()
	settle(q, a, queue.Ack, m1)
	check(t, "after one ack", []string{"A:m1", "A:m2"}, e.delivered)
	check(t, "ready", []string{"m1", "m2", "m3"}, ready(q))
	settle(q, a, queue.Ack, m2)
	check(t, "after both", []string{"A:m1", "A:m2", "A:m1", "A:m2"}, e.delivered)
	if e.dead != nil {
		t.Errorf("dead-lettered %v", e.dead)
	}
	h := e.got[2].Properties.Headers
	if _, has := h["x-delivery-count"]; has || h["x-acquired-count"] != int64(1) || !e.redel[2] {
		t.Errorf("m1 again: headers %v redelivered %t, want x-acquired-count 1 only", h, e.redel[2])
	}
	if q.Unacked() != 2 || q.Stats().TimedOut != 0 {
		t.Errorf("unacked %d timed out %d", q.Unacked(), q.Stats().TimedOut)
	}
}

// A requeue (basic.nack, basic.reject) of the timed-out deliveries alone
// ends the pause, but the consumer takes messages only from its next
// settlement of a delivery it still holds (rabbit_fifo's return/8 does
// not put it back in the service queue); a discard resumes it at once.
func TestQuorumTimeoutRequeueWaits(t *testing.T) {
	for _, tc := range []struct {
		how  queue.Settlement
		want []string
	}{
		{queue.Requeue, []string{"A:m1", "A:m2"}},
		{queue.RequeueFailed, []string{"A:m1", "A:m2"}},
		{queue.Reject, []string{"A:m1", "A:m2", "A:m1"}},
		{queue.Ack, []string{"A:m1", "A:m2", "A:m1"}},
	} {
		q, e := newQuorum43(t, protocol.Table{"x-consumer-timeout": int64(2000)})
		a := prefetched("A", 2)
		queue.AddConsumer(q, a)
		enqueue(q, 0, "m1")
		q.Dispatch()
		advanceTo(t, q, e, time.Second)
		enqueue(q, 0, "m2")
		q.Dispatch()
		advanceTo(t, q, e, 2*time.Second)
		m1, m2 := e.got[0], e.got[1]
		settle(q, a, tc.how, m1)
		check(t, "settled the timed-out delivery", tc.want, e.delivered)
		if a.Paused() {
			t.Errorf("%v: still paused", tc.how)
		}
		settle(q, a, queue.Ack, m2)
		check(t, "after the ack of the delivery still held", []string{"A:m1", "A:m2", "A:m1"}, e.delivered)
	}
}

// x-consumer-timeout on the consumer wins over the queue's whatever the
// values; the queue's argument and policy give the smaller; without
// either the broker's consumer_timeout is read when the consumer joins.
func TestQuorumTimeoutPrecedence(t *testing.T) {
	q, e := newQuorum43(t, protocol.Table{"x-consumer-timeout": int64(5000)})
	q.ApplyPolicy(protocol.Table{"consumer-timeout": int64(2000)})
	byArg := prefetched("arg", 1)
	join := func(c *consumer.Consumer[int]) func(int) *consumer.Consumer[int] {
		return func(int) *consumer.Consumer[int] { return c }
	}
	if err := q.Consume(queue.ConsumeRequest{Args: protocol.Table{"x-consumer-timeout": int64(9000)}, Prefetch: 1}, join(byArg)); err != nil {
		t.Fatal(err)
	}
	byQueue := prefetched("queue", 1)
	queue.AddConsumer(q, byQueue)
	enqueue(q, 0, "m1", "m2")
	q.Dispatch()
	advanceTo(t, q, e, 8*time.Second)
	check(t, "by 8s", []string{"queue:m2"}, e.timedOut)

	q2, e2 := newQuorum43(t, nil)
	e2.consumerTimeout = 4 * time.Second
	global := prefetched("global", 1)
	queue.AddConsumer(q2, global)
	e2.consumerTimeout = time.Hour // read at consume, not later
	enqueue(q2, 0, "m1")
	q2.Dispatch()
	advanceTo(t, q2, e2, 4*time.Second)
	check(t, "global", []string{"global:m1"}, e2.timedOut)

	err := q.Consume(queue.ConsumeRequest{Args: protocol.Table{"x-consumer-timeout": int64(-1)}}, join(prefetched("bad", 1)))
	want := "PRECONDITION_FAILED - invalid arg 'x-consumer-timeout' for queue 'q' in vhost '/': {value_negative,-1}"
	if perr := (*protocol.Error)(nil); !errors.As(err, &perr) || perr.Code != 406 || perr.Text != want || perr.Method != protocol.BasicConsume {
		t.Errorf("consume with x-consumer-timeout -1: %v", err)
	}
}

// A basic.get that must be acked times out too, on the queue's timeout
// at the get; a no-ack consumer and a no-ack get never do.
func TestQuorumTimeoutGetAndNoAck(t *testing.T) {
	q, e := newQuorum43(t, protocol.Table{"x-consumer-timeout": int64(1000)})
	n := consumer.New(consumer.Settings{Tag: "N", NoAck: true}, &consumer.Group[int]{}, 0)
	enqueue(q, 0, "g1", "g2")
	q.Get(true, func(*queue.Message, bool) {})
	q.Get(false, func(*queue.Message, bool) {})
	queue.AddConsumer(q, n)
	advanceTo(t, q, e, time.Second)
	check(t, "timed out", []string{"get:g1"}, e.timedOut)
	check(t, "no-ack consumer", []string{"N:g1"}, e.delivered)
	if q.ConsumerCount() != 1 || q.Unacked() != 0 {
		t.Errorf("consumers %d unacked %d, want the get's one-shot consumer gone", q.ConsumerCount(), q.Unacked())
	}
}

// A single active consumer that holds nothing after its timeout stops
// being active: the next one that has not timed out is activated. With
// all timed out none is active, until one is settled.
func TestQuorumTimeoutSingleActive(t *testing.T) {
	q, e := newQuorum43(t, protocol.Table{"x-consumer-timeout": int64(3000), "x-single-active-consumer": true})
	a, b := prefetched("A", 1), prefetched("B", 1)
	queue.AddConsumer(q, a)
	queue.AddConsumer(q, b)
	enqueue(q, 0, "m1", "m2")
	q.Dispatch()
	advanceTo(t, q, e, 3*time.Second)
	if q.ActiveConsumer() != b {
		t.Fatalf("active %v, want B", q.ActiveConsumer())
	}
	check(t, "B takes m1", []string{"A:m1", "B:m1"}, e.delivered)
	advanceTo(t, q, e, 6*time.Second)
	if q.ActiveConsumer() != nil || q.ConsumerCount() != 0 {
		t.Fatalf("active %v, %d consumers, want none", q.ActiveConsumer(), q.ConsumerCount())
	}
	settle(q, a, queue.Requeue, e.got[0])
	if q.ActiveConsumer() != a {
		t.Fatalf("active %v after A's nack, want A", q.ActiveConsumer())
	}
	check(t, "A takes m1 again", []string{"A:m1", "B:m1", "A:m1"}, e.delivered)
}

// A consumer the client cancelled times out what it still holds, and is
// then forgotten; a channel close takes back the live deliveries only.
func TestQuorumTimeoutCancelledAndClosed(t *testing.T) {
	q, e := newQuorum43(t, protocol.Table{"x-consumer-timeout": int64(1000)})
	a, b := prefetched("A", 1), prefetched("B", 2)
	queue.AddConsumer(q, a)
	enqueue(q, 0, "m1")
	q.Dispatch()
	q.RemoveConsumer(a)
	queue.AddConsumer(q, b)
	advanceTo(t, q, e, 500*time.Millisecond)
	enqueue(q, 0, "m2")
	q.Dispatch()
	advanceTo(t, q, e, time.Second)
	check(t, "timed out", []string{"A:m1"}, e.timedOut)
	if q.ConsumerCount() != 1 {
		t.Errorf("consumers %d, want B only", q.ConsumerCount())
	}
	check(t, "B", []string{"A:m1", "B:m2", "B:m1"}, e.delivered)
	q.RemoveConsumer(b)
	q.Return([]*queue.Message{e.got[0], e.got[1], e.got[2]})
	check(t, "ready after the close", []string{"m2", "m1"}, ready(q))
	if q.Unacked() != 0 || q.Stats().TimedOut != 0 {
		t.Errorf("unacked %d timed out %d", q.Unacked(), q.Stats().TimedOut)
	}
}

// Before 4.3 the queue has no timer: the channel's tick times out its
// deliveries (Caps.ConsumerTimeout).
func TestQuorumNoTimeoutBefore43(t *testing.T) {
	q, e := newQuorum(t, protocol.Table{"x-consumer-timeout": int64(1000)})
	e.consumerTimeout = time.Second
	queue.AddConsumer(q, prefetched("A", 1))
	enqueue(q, 0, "m1")
	q.Dispatch()
	if _, ok := e.timers[queue.ConsumerTimeoutTimer]; ok || !q.Caps().ConsumerTimeout {
		t.Errorf("timer set %t, channel timeout %t", ok, q.Caps().ConsumerTimeout)
	}
}

// The list of deliveries the timeout watches stays as short as what is
// out, also for a consumer that keeps its first delivery while it
// settles thousands after it.
func TestQuorumTimeoutListStaysShort(t *testing.T) {
	q, e := newQuorum43(t, nil)
	a := prefetched("A", 3)
	queue.AddConsumer(q, a)
	enqueue(q, 0, "old")
	q.Dispatch()
	longest := 0
	for i := range 10000 {
		enqueue(q, 0, "m")
		q.Dispatch()
		settle(q, a, queue.Ack, e.got[i+1])
		longest = max(longest, queue.TimeoutListLen(q, a))
	}
	if longest > 2*3+32+1 {
		t.Errorf("the list grew to %d entries for at most 3 deliveries out", longest)
	}
	if q.Unacked() != 1 {
		t.Errorf("unacked %d, want the old delivery", q.Unacked())
	}
}
