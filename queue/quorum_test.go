package queue_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/amqpsim/amqpsim/consumer"
	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/queue"
)

// qenv is env that also keeps what the queue delivered and dead-lettered,
// to look at headers and flags.
type qenv struct {
	env
	got    []*queue.Message
	redel  []bool
	deadMs []*queue.Message
}

func (e *qenv) Deliver(c *consumer.Consumer[int], m *queue.Message, redelivered bool) {
	e.env.Deliver(c, m, redelivered)
	e.got = append(e.got, m)
	e.redel = append(e.redel, redelivered)
}

func (e *qenv) DeadLetter(m *queue.Message, reason string) {
	e.env.DeadLetter(m, reason)
	e.deadMs = append(e.deadMs, m)
}

func quorumArgs(extra protocol.Table) protocol.Table {
	args := protocol.Table{"x-queue-type": "quorum"}
	for k, v := range extra {
		args[k] = v
	}
	return args
}

func newQuorum(t *testing.T, extra protocol.Table) (testQueue, *qenv) {
	t.Helper()
	e := &qenv{env: env{timers: map[queue.Timer]int64{}}}
	q, err := queue.New[int](e, "/", "q", queue.Options{Durable: true, Args: quorumArgs(extra)})
	if err != nil {
		t.Fatal(err)
	}
	return q, e
}

func deliveryCount(m *queue.Message) (any, bool) {
	if m.Properties == nil {
		return nil, false
	}
	v, ok := m.Properties.Headers["x-delivery-count"]
	return v, ok
}

// Declare checks come in RabbitMQ 3.10.8's order: argument values, other queue types' arguments, then auto-delete, exclusive-owner, non-durable.
func TestQuorumDeclareChecks(t *testing.T) {
	const pre = "PRECONDITION_FAILED - "
	tests := []struct {
		o    queue.Options
		code int
		text string
	}{
		{queue.Options{AutoDelete: true, Exclusive: true}, 406, pre + "invalid property 'auto-delete' for queue 'q' in vhost '/'"},
		{queue.Options{Exclusive: true}, 406, pre + "invalid property 'exclusive-owner' for queue 'q' in vhost '/'"},
		{queue.Options{}, 406, pre + "invalid property 'non-durable' for queue 'q' in vhost '/'"},
		{queue.Options{AutoDelete: true, Args: protocol.Table{"x-max-priority": int32(5)}}, 406,
			pre + "invalid arg 'x-max-priority' for queue 'q' in vhost '/' of queue type rabbit_quorum_queue"},
		{queue.Options{Durable: true, Args: protocol.Table{"x-max-priority": int32(300)}}, 406,
			pre + "invalid arg 'x-max-priority' for queue 'q' in vhost '/' of queue type rabbit_quorum_queue"},
		{queue.Options{Durable: true, Args: protocol.Table{"x-max-length": "ten", "x-max-priority": int32(5)}}, 406,
			pre + "invalid arg 'x-max-length' for queue 'q' in vhost '/': \"expected integer, got longstr\""},
		{queue.Options{Durable: true, Args: protocol.Table{"x-queue-mode": "lazy"}}, 406,
			pre + "invalid arg 'x-queue-mode' for queue 'q' in vhost '/' of queue type rabbit_quorum_queue"},
		{queue.Options{Durable: true, Args: protocol.Table{"x-delivery-limit": "lots", "x-dead-letter-strategy": "at-least-once"}}, 0, ""},
	}
	for i, tt := range tests {
		tt.o.Args = quorumArgs(tt.o.Args)
		_, err := queue.New[int](&env{}, "/", "q", tt.o)
		var perr *protocol.Error
		switch {
		case tt.code == 0 && err != nil:
			t.Errorf("%d: %v", i, err)
		case tt.code != 0 && (!errors.As(err, &perr) || perr.Code != tt.code || perr.Text != tt.text):
			t.Errorf("%d: err = %v, want %d %s", i, err, tt.code, tt.text)
		}
	}
}

// Redeclaring compares x-delivery-limit by value, and x-queue-type against a classic queue.
func TestQuorumEquivalent(t *testing.T) {
	q, _ := newQuorum(t, protocol.Table{"x-delivery-limit": int64(2)})
	same := queue.Options{Durable: true, Args: quorumArgs(protocol.Table{"x-delivery-limit": int32(2)})}
	if err := q.Equivalent(same); err != nil {
		t.Errorf("int32 2 vs long 2: %v", err)
	}
	err := q.Equivalent(queue.Options{Durable: true, Args: protocol.Table{"x-delivery-limit": int64(2)}})
	want := "PRECONDITION_FAILED - inequivalent arg 'x-queue-type' for queue 'q' in vhost '/': received none but current is the value 'quorum' of type 'longstr'"
	if perr := (*protocol.Error)(nil); !errors.As(err, &perr) || perr.Text != want {
		t.Errorf("err = %v", err)
	}
	c, _ := newQueue(t, nil)
	err = c.Equivalent(queue.Options{Args: protocol.Table{"x-queue-type": "quorum"}})
	want = "PRECONDITION_FAILED - inequivalent arg 'x-queue-type' for queue 'q' in vhost '/': received the value 'quorum' of type 'longstr' but current is none"
	if perr := (*protocol.Error)(nil); !errors.As(err, &perr) || perr.Text != want {
		t.Errorf("classic redeclared as quorum: %v", err)
	}
	if err := c.Equivalent(queue.Options{Args: protocol.Table{"x-queue-type": "classic"}}); err != nil {
		t.Errorf("classic redeclared as classic: %v", err)
	}
}

// A consumer with prefetch 0 gets 2000 credits (simple_prefetch 2000).
func TestQuorumDefaultCredit(t *testing.T) {
	q, e := newQuorum(t, nil)
	queue.AddConsumer(q, cons("a", 0, false))
	for i := 0; i < 2001; i++ {
		q.Publish(&queue.Message{Body: []byte(fmt.Sprint(i))}, 0, false)
	}
	if n := q.Dispatch(); n != 2000 || len(e.got) != 2000 || q.Ready() != 1 {
		t.Errorf("dispatched %d, ready %d", n, q.Ready())
	}
}

// Without x-delivery-limit (3.10), a nacked message goes behind the queued ones; its delivery count shows as x-delivery-count.
func TestQuorumRequeueToBackWithoutLimit(t *testing.T) {
	q, e := newQuorum(t, nil)
	c := consumer.New(consumer.Settings{Tag: "a", Prefetch: 1}, &consumer.Group[int]{}, 1)
	queue.AddConsumer(q, c)
	enqueue(q, 0, "m1", "m2", "m3")
	q.Dispatch()
	q.Settle([]queue.Settled[int]{{Message: e.got[0], Consumer: c}}, queue.Requeue)
	check(t, "ready", []string{"m2", "m3", "m1"}, ready(q))
	q.Dispatch()
	if _, ok := deliveryCount(e.got[1]); ok || e.redel[1] {
		t.Errorf("m2 first delivery: header %v redelivered %t", e.got[1].Properties, e.redel[1])
	}
	q.Settle([]queue.Settled[int]{{Message: e.got[1], Consumer: c}}, queue.Ack)
	q.Dispatch()
	q.Settle([]queue.Settled[int]{{Message: e.got[2], Consumer: c}}, queue.Ack)
	q.Dispatch()
	check(t, "deliveries", []string{"a:m1", "a:m2", "a:m3", "a:m1"}, e.delivered)
	if v, _ := deliveryCount(e.got[3]); v != int64(1) || !e.redel[3] {
		t.Errorf("m1 again: x-delivery-count %v redelivered %t", v, e.redel[3])
	}
	if _, ok := deliveryCount(e.got[0]); ok {
		t.Error("the first delivery's message was changed")
	}
}

// With x-delivery-limit, returns are served first, in the order returned; a channel close returns behind them.
func TestQuorumReturnsFirstWithLimit(t *testing.T) {
	q, _ := newQuorum(t, protocol.Table{"x-delivery-limit": int64(10)})
	enqueue(q, 0, "m1", "m2", "m3", "m4", "m5")
	_, ms := fetch(q, 4)
	requeue(q, ms[2], ms[0])
	q.Return([]*queue.Message{ms[1], ms[3]})
	check(t, "ready", []string{"m3", "m1", "m2", "m4", "m5"}, ready(q))
	if q.Unacked() != 0 || q.Ready() != 5 {
		t.Errorf("unacked %d ready %d", q.Unacked(), q.Ready())
	}
}

// A channel close returns to the head even without a delivery limit.
func TestQuorumCloseReturnsToHead(t *testing.T) {
	q, _ := newQuorum(t, nil)
	enqueue(q, 0, "m1", "m2", "m3")
	_, ms := fetch(q, 2)
	q.Return(ms)
	check(t, "ready", []string{"m1", "m2", "m3"}, ready(q))
}

// basic.get always carries x-delivery-count (0 at first); get-ok's count is what is ready after the take.
func TestQuorumGetHeader(t *testing.T) {
	q, _ := newQuorum(t, nil)
	enqueue(q, 0, "m1", "m2")
	var got *queue.Message
	var re bool
	q.Get(true, func(m *queue.Message, r bool) { got, re = m, r })
	if v, _ := deliveryCount(got); v != int64(0) || re || q.Ready() != 1 {
		t.Errorf("first get: count %v redelivered %t ready %d", v, re, q.Ready())
	}
	requeue(q, got)
	fetch(q, 1) // m2
	q.Get(false, func(m *queue.Message, r bool) { got, re = m, r })
	if v, _ := deliveryCount(got); v != int64(1) || !re || string(got.Body) != "m1" {
		t.Errorf("second get of m1: count %v redelivered %t body %s", v, re, got.Body)
	}
	if ok, _ := q.Get(true, func(*queue.Message, bool) {}); ok {
		t.Error("get on an empty queue")
	}
}

// delivery_count > limit dead-letters with reason delivery_limit, without the x-delivery-count header.
func TestQuorumDeliveryLimit(t *testing.T) {
	q, e := newQuorum(t, protocol.Table{"x-delivery-limit": int32(1)})
	q.Publish(&queue.Message{Body: []byte("m1"), Properties: &protocol.Properties{Headers: protocol.Table{"app": "v"}}}, 0, false)
	_, ms := fetch(q, 1)
	requeue(q, ms[0])
	_, ms = fetch(q, 1)
	requeue(q, ms[0])
	check(t, "dead", []string{"delivery_limit:m1"}, e.dead)
	if h := e.deadMs[0].Properties.Headers; len(h) != 1 || h["app"] != "v" {
		t.Errorf("dead-lettered headers %v", h)
	}
	if q.Ready() != 0 || q.Unacked() != 0 {
		t.Errorf("ready %d unacked %d", q.Ready(), q.Unacked())
	}
}

// A cancelled consumer that still holds messages is counted until it settles them, or its channel returns them.
func TestQuorumConsumerCountKeepsHolder(t *testing.T) {
	q, e := newQuorum(t, nil)
	a, b := cons("a", 0, false), cons("b", 0, false)
	queue.AddConsumer(q, a)
	enqueue(q, 0, "m1", "m2")
	q.Dispatch()
	queue.AddConsumer(q, b)
	q.RemoveConsumer(a)
	if n := q.ConsumerCount(); n != 2 {
		t.Fatalf("consumers = %d, want 2", n)
	}
	q.Settle([]queue.Settled[int]{{Message: e.got[0], Consumer: a}}, queue.Ack)
	if n := q.ConsumerCount(); n != 2 {
		t.Fatalf("consumers = %d after one ack, want 2", n)
	}
	q.Return([]*queue.Message{e.got[1]})
	if n := q.ConsumerCount(); n != 1 {
		t.Errorf("consumers = %d after the return, want 1", n)
	}
}

// Round robin within x-priority: the higher priority consumer takes while it has credit.
func TestQuorumPriorityRoundRobin(t *testing.T) {
	q, e := newQuorum(t, nil)
	g := &consumer.Group[int]{}
	queue.AddConsumer(q, consumer.New(consumer.Settings{Tag: "a", Prefetch: 2}, g, 1))
	queue.AddConsumer(q, consumer.New(consumer.Settings{Tag: "b", Prefetch: 1}, g, 2))
	queue.AddConsumer(q, consumer.New(consumer.Settings{Tag: "c", Prefetch: 1, Priority: 5}, g, 3))
	enqueue(q, 0, "m1", "m2", "m3", "m4", "m5")
	q.Dispatch()
	check(t, "deliveries", []string{"c:m1", "a:m2", "b:m3", "a:m4"}, e.delivered)
}

// TTL expires only the head of messages, before each checkout and on the timer set for the head.
func TestQuorumTTLHeadOnly(t *testing.T) {
	q, e := newQuorum(t, nil)
	q.Publish(&queue.Message{Body: []byte("p1")}, 200, true)
	publish(q, &queue.Message{Body: []byte("p2")})
	q.Publish(&queue.Message{Body: []byte("p3")}, 100, true)
	if due := e.timers[queue.TTLTimer]; due != 200 {
		t.Fatalf("TTL timer at %d, want 200", due)
	}
	e.now = 1000
	delete(e.timers, queue.TTLTimer) // it fired
	q.TimerFired(queue.TTLTimer)
	check(t, "after the timer", []string{"p2", "p3"}, ready(q))
	if _, ok := e.timers[queue.TTLTimer]; ok {
		t.Error("timer left set for a head without expiry")
	}
	got, _ := fetch(q, 1)
	check(t, "get", []fetched{{"p2", false}}, got)
	check(t, "p3 waits for the next dispatch", []string{"p3"}, ready(q))
	q.Dispatch()
	check(t, "dead", []string{"expired:p1", "expired:p3"}, e.dead)
}

// 4.3 (Rules.QuorumExpiresEveryHead): the timer is set for the earliest
// expiry among the heads of the priority levels, and expires every
// level's expired head, whatever is ahead of it in a higher one, in
// expiry order, ties (a and b) in enqueue order; 3.10's rules expire
// only the next message to take.
func TestQuorumExpiresEveryHead(t *testing.T) {
	prio := func(body string, p uint8) *queue.Message {
		return &queue.Message{Body: []byte(body), Properties: &protocol.Properties{Priority: p}}
	}
	for _, c := range []struct {
		name        string
		rules       queue.Rules
		timer       int64
		dead, ready []string
	}{
		{"3.10", queue.Rules{}, 0, nil, []string{"live", "c", "b", "a"}},
		{"4.3", queue.Rules{QuorumPriorities: queue.StrictQuorumPriorities, QuorumExpiresEveryHead: true},
			100, []string{"expired:b", "expired:a"}, []string{"live", "c"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := &qenv{env: env{timers: map[queue.Timer]int64{}}}
			q, err := queue.New[int](e, "/", "q", queue.Options{Durable: true, Args: quorumArgs(nil), Rules: c.rules})
			if err != nil {
				t.Fatal(err)
			}
			publish(q, prio("live", 9))
			q.Publish(prio("c", 9), 300, true)
			q.Publish(prio("b", 0), 100, true)
			q.Publish(prio("a", 2), 100, true)
			if due := e.timers[queue.TTLTimer]; due != c.timer {
				t.Fatalf("TTL timer at %d, want %d", due, c.timer)
			}
			e.now = 1000
			delete(e.timers, queue.TTLTimer) // it fired
			q.TimerFired(queue.TTLTimer)
			check(t, "dead", c.dead, e.dead)
			check(t, "ready", c.ready, ready(q))
		})
	}
}

// reject-publish takes the message that goes over the limit, then refuses until the queue is at 80% of it.
func TestQuorumRejectPublishSoftLimit(t *testing.T) {
	q, e := newQuorum(t, protocol.Table{"x-max-length": int32(2), "x-overflow": "reject-publish"})
	var took []bool
	for _, b := range []string{"n1", "n2", "n3", "n4"} {
		took = append(took, publish(q, &queue.Message{Body: []byte(b)}))
	}
	check(t, "taken", []bool{true, true, true, false}, took)
	fetch(q, 1) // 2 ready: still above trunc(2*0.8) = 1
	if publish(q, &queue.Message{Body: []byte("n5")}) {
		t.Error("n5 taken at 2 ready")
	}
	fetch(q, 1) // 1 ready
	if !publish(q, &queue.Message{Body: []byte("n6")}) {
		t.Error("n6 refused at 1 ready")
	}
	check(t, "refused", []string{"rejected:n4", "rejected:n5"}, e.refused)
}

// drop-head (and reject-publish-dlx, its fallback) dead-letters from the head with reason maxlen.
func TestQuorumDropHead(t *testing.T) {
	q, e := newQuorum(t, protocol.Table{"x-max-length": int32(1), "x-overflow": "reject-publish-dlx"})
	enqueue(q, 0, "k1", "k2")
	check(t, "dead", []string{"maxlen:k1"}, e.dead)
	check(t, "ready", []string{"k2"}, ready(q))
}

// Single active consumer (3.10): the waiting consumer registered first takes over, whatever its priority; waiting ones are not counted.
func TestQuorumSingleActiveFIFO(t *testing.T) {
	q, e := newQuorum(t, protocol.Table{"x-single-active-consumer": true})
	a, b, c := cons("a", 0, false), cons("b", 0, false), cons("c", 10, false)
	queue.AddConsumer(q, a)
	queue.AddConsumer(q, b)
	queue.AddConsumer(q, c)
	if q.ConsumerCount() != 1 || q.ActiveConsumer() != a {
		t.Fatalf("count %d active %v", q.ConsumerCount(), q.ActiveConsumer())
	}
	enqueue(q, 0, "m1")
	q.Dispatch()
	q.RemoveConsumer(a)
	if q.ActiveConsumer() != b || q.ConsumerCount() != 2 {
		t.Errorf("active %s count %d, want b and 2", q.ActiveConsumer().Tag, q.ConsumerCount())
	}
	enqueue(q, 0, "m2")
	q.Dispatch()
	check(t, "deliveries", []string{"a:m1", "b:m2"}, e.delivered)
}

// Each unsettled basic.get counts as a consumer until settled.
func TestQuorumGetCountsAsConsumer(t *testing.T) {
	q, _ := newQuorum(t, nil)
	enqueue(q, 0, "m1", "m2", "m3")
	_, ms := fetch(q, 2)
	q.Get(false, func(*queue.Message, bool) {})
	if n := q.ConsumerCount(); n != 2 {
		t.Errorf("consumers = %d, want 2", n)
	}
	q.Settle([]queue.Settled[int]{{Message: ms[0]}}, queue.Ack)
	q.Return(ms[1:])
	if n := q.ConsumerCount(); n != 0 {
		t.Errorf("consumers = %d after settling, want 0", n)
	}
}

// x-expires is checked at the 5 s tick: the queue expires once last_active + expires has passed with no consumers; a get moves last_active.
func TestQuorumExpiresAtTick(t *testing.T) {
	const s = int64(1_000_000_000)
	q, e := newQuorum(t, protocol.Table{"x-expires": int32(2000)})
	if due := e.timers[queue.ExpiresTimer]; due != 5*s {
		t.Fatalf("tick at %d", due)
	}
	e.now = 4 * s
	q.Get(true, func(*queue.Message, bool) {}) // get-empty sets last_active
	e.now = 5 * s
	if q.TimerFired(queue.ExpiresTimer) {
		t.Fatal("expired at 5 s, 1 s after a get")
	}
	if due := e.timers[queue.ExpiresTimer]; due != 10*s {
		t.Errorf("next tick at %d", due)
	}
	e.now = 10 * s
	if !q.TimerFired(queue.ExpiresTimer) {
		t.Error("not expired at 10 s")
	}
}

// A policy's delivery-limit applies (the smaller one wins) and its overflow beats the queue's argument.
func TestQuorumApplyPolicy(t *testing.T) {
	q, e := newQuorum(t, protocol.Table{"x-delivery-limit": int32(5), "x-max-length": int32(1), "x-overflow": "drop-head"})
	q.ApplyPolicy(protocol.Table{"delivery-limit": int32(0), "overflow": "reject-publish"})
	if q.Limits().Overflow != queue.RejectPublish {
		t.Errorf("overflow = %s", q.Limits().Overflow)
	}
	enqueue(q, 0, "m1")
	_, ms := fetch(q, 1)
	requeue(q, ms[0])
	check(t, "dead", []string{"delivery_limit:m1"}, e.dead)
}

// x-dead-letter-strategy at-least-once holds what its dead-letter exchange
// did not take, counted against x-max-length, and forwards it again at
// the worker's settle timeout; without reject-publish it falls back to
// at most once (rabbit_quorum_queue:dlh/5;
// quorum-dead-letter-at-least-once.txt).
func TestQuorumDeadLetterAtLeastOnce(t *testing.T) {
	args := protocol.Table{"x-dead-letter-exchange": "dlx", "x-dead-letter-strategy": "at-least-once",
		"x-overflow": "reject-publish", "x-max-length": int32(2)}
	q, e := newQuorum(t, args)
	route := false
	calls := 0
	e.forward = func(*queue.Message, map[string]bool) bool { calls++; return route }
	enqueue(q, 0, "m1", "m2")
	c := consumer.New(consumer.Settings{Tag: "a", Prefetch: 1}, &consumer.Group[int]{}, 1)
	queue.AddConsumer(q, c)
	q.Dispatch()
	q.Settle([]queue.Settled[int]{{Message: e.got[0], Consumer: c}}, queue.Reject)
	if calls != 1 || q.Ready() != 1 {
		t.Fatalf("forwarded %d times, %d ready; want 1 and 1", calls, q.Ready())
	}
	// m2 ready and the held dead letter: m3 goes over the limit (kept),
	// m4 is refused.
	q.RemoveConsumer(c) // or it takes m2
	enqueue(q, 0, "m3")
	if publish(q, &queue.Message{Body: []byte("m4")}) {
		t.Fatal("m4 taken: the held dead letter counts against x-max-length")
	}
	due, ok := e.timers[queue.DeadLetterTimer]
	if !ok || due != int64(180*time.Second) {
		t.Fatalf("retry timer %v, %v; want at 180 s", due, ok)
	}
	route = true
	e.now = due
	delete(e.timers, queue.DeadLetterTimer) // it fired
	q.TimerFired(queue.DeadLetterTimer)
	if calls != 2 {
		t.Fatalf("forwarded %d times, want 2", calls)
	}
	if _, ok := e.timers[queue.DeadLetterTimer]; ok {
		t.Fatal("retry timer left with nothing pending")
	}

	q2, e2 := newQuorum(t, protocol.Table{"x-dead-letter-exchange": "dlx", "x-dead-letter-strategy": "at-least-once"})
	e2.forward = func(*queue.Message, map[string]bool) bool {
		t.Fatal("at-least-once without reject-publish")
		return false
	}
	enqueue(q2, 0, "n1")
	c2 := consumer.New(consumer.Settings{Tag: "b", Prefetch: 1}, &consumer.Group[int]{}, 1)
	queue.AddConsumer(q2, c2)
	q2.Dispatch()
	q2.Settle([]queue.Settled[int]{{Message: e2.got[0], Consumer: c2}}, queue.Reject)
	if want := []string{"rejected:n1"}; !slices.Equal(e2.dead, want) {
		t.Fatalf("dead %v, want %v", e2.dead, want)
	}
}

// The counted copies a quorum queue hands out come from shared blocks and
// tables: each keeps the count it was handed out with, and none changes
// the publisher's properties, with or without headers.
func TestQuorumCountedCopiesStayApart(t *testing.T) {
	q, _ := newQuorum(t, nil)
	plain := &protocol.Properties{ContentType: "text/plain"}
	headed := &protocol.Properties{Headers: protocol.Table{"a": "b"}}
	publish(q, &queue.Message{Body: []byte("none")})
	publish(q, &queue.Message{Body: []byte("plain"), Properties: plain})
	publish(q, &queue.Message{Body: []byte("headed"), Properties: headed})
	var rounds [][]*queue.Message
	for round := 0; round < 3; round++ {
		_, ms := fetch(q, 3)
		rounds = append(rounds, ms)
		requeue(q, ms...)
	}
	for round, ms := range rounds {
		for _, m := range ms {
			if v, _ := deliveryCount(m); v != int64(round) {
				t.Errorf("round %d, %s: x-delivery-count %v", round, m.Body, v)
			}
		}
		if ct := ms[1].Properties.ContentType; ct != "text/plain" {
			t.Errorf("round %d: content type %q", round, ct)
		}
		if h := ms[2].Properties.Headers["a"]; h != "b" {
			t.Errorf("round %d: publisher's header a = %v", round, h)
		}
	}
	check(t, "publisher's headers", protocol.Table{"a": "b"}, headed.Headers)
	if plain.Headers != nil {
		t.Errorf("publisher's properties got headers %v", plain.Headers)
	}
}
