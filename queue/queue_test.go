package queue_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/amqpsim/amqpsim/consumer"
	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/queue"
)

// env is a broker for one queue: it records what the queue hands out and
// keeps its timers.
type env struct {
	now       int64
	allow     func(c *consumer.Consumer[int]) bool
	delivered []string // "tag:body"
	dead      []string // "reason:body"
	refused   []string
	crashed   []string // consumer tags
	timers    map[queue.Timer]int64
	// forward answers ForwardDeadLetter; nil takes every dead letter.
	forward func(m *queue.Message, took map[string]bool) bool
	// consumerTimeout is the broker's consumer_timeout, none when 0.
	consumerTimeout time.Duration
	timedOut        []string // "tag:body,body", "get:body" per TimedOut
}

func (e *env) Now() int64 { return e.now }
func (e *env) CanSend(c *consumer.Consumer[int]) bool {
	return e.allow == nil || e.allow(c)
}
func (e *env) Deliver(c *consumer.Consumer[int], m *queue.Message, _ bool) {
	e.delivered = append(e.delivered, c.Tag+":"+string(m.Body))
}
func (e *env) DeadLetter(m *queue.Message, reason string) {
	e.dead = append(e.dead, reason+":"+string(m.Body))
}
func (e *env) ForwardDeadLetter(m *queue.Message, reason string, took map[string]bool) bool {
	e.dead = append(e.dead, reason+":"+string(m.Body))
	if e.forward == nil {
		return true
	}
	return e.forward(m, took)
}
func (e *env) Refused(m *queue.Message, reason string) {
	e.refused = append(e.refused, reason+":"+string(m.Body))
}
func (e *env) SetTimer(t queue.Timer, due int64) { e.timers[t] = due }
func (e *env) StopTimer(t queue.Timer)           { delete(e.timers, t) }
func (e *env) Crash(c *consumer.Consumer[int])   { e.crashed = append(e.crashed, c.Tag) }
func (e *env) ConsumerTimeout() (int64, bool) {
	return int64(e.consumerTimeout), e.consumerTimeout > 0
}
func (e *env) TimedOut(ds []queue.Settled[int]) {
	s := "get:"
	if ds[0].Consumer != nil {
		s = ds[0].Consumer.Tag + ":"
	}
	for i, d := range ds {
		if i > 0 {
			s += ","
		}
		s += string(d.Message.Body)
	}
	e.timedOut = append(e.timedOut, s)
}

type testQueue = queue.Queue[int]

func newQueue(t *testing.T, args protocol.Table) (testQueue, *env) {
	t.Helper()
	e := &env{timers: map[queue.Timer]int64{}}
	q, err := queue.New[int](e, "/", "q", queue.Options{Args: args})
	if err != nil {
		t.Fatal(err)
	}
	return q, e
}

// enqueue publishes messages with the given bodies and priority.
func enqueue(q testQueue, priority uint8, bodies ...string) {
	for _, b := range bodies {
		publish(q, &queue.Message{Body: []byte(b), Properties: &protocol.Properties{Priority: priority}})
	}
}

// publish publishes m as the broker does: the queue takes it, then
// dispatches (which is when a quorum queue evaluates its length limits).
func publish(q testQueue, m *queue.Message) bool {
	ok := q.Publish(m, 0, false)
	q.Dispatch()
	return ok
}

func ready(q testQueue) []string {
	out := []string{}
	for _, m := range q.Messages() {
		out = append(out, string(m.Body))
	}
	return out
}

type fetched struct {
	Body        string
	Redelivered bool
}

func fetch(q testQueue, n int) ([]fetched, []*queue.Message) {
	var out []fetched
	var ms []*queue.Message
	for i := 0; i < n; i++ {
		if ok, _ := q.Get(true, func(m *queue.Message, re bool) {
			out = append(out, fetched{string(m.Body), re})
			ms = append(ms, m)
		}); !ok {
			break
		}
	}
	return out, ms
}

func requeue(q testQueue, ms ...*queue.Message) {
	for _, m := range ms {
		q.Settle([]queue.Settled[int]{{Message: m}}, queue.Requeue)
	}
}

func check(t *testing.T, what string, want, got any) {
	t.Helper()
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("%s (-want +got):\n%s", what, d)
	}
}

// A requeued message returns to its original position (ordered by enqueue sequence), redelivered.
func TestRequeueToOriginalPosition(t *testing.T) {
	q, _ := newQueue(t, nil)
	enqueue(q, 0, "m1", "m2", "m3", "m4", "m5")
	_, ms := fetch(q, 3)
	requeue(q, ms[1])
	check(t, "ready", []string{"m2", "m4", "m5"}, ready(q))
	got, _ := fetch(q, 1)
	check(t, "next", []fetched{{"m2", true}}, got)
	if q.Unacked() != 3 || q.Ready() != 2 {
		t.Errorf("unacked=%d ready=%d", q.Unacked(), q.Ready())
	}
}

// Several messages requeued in any order end up in publish order, ahead of later messages.
func TestRequeueSeveralInAnyOrder(t *testing.T) {
	q, _ := newQueue(t, nil)
	enqueue(q, 0, "m1", "m2", "m3", "m4")
	_, ms := fetch(q, 3)
	enqueue(q, 0, "m5")
	requeue(q, ms[2], ms[0], ms[1])
	check(t, "ready", []string{"m1", "m2", "m3", "m4", "m5"}, ready(q))
	got, _ := fetch(q, 5)
	check(t, "redelivered flags", []fetched{{"m1", true}, {"m2", true}, {"m3", true}, {"m4", false}, {"m5", false}}, got)
}

// A channel's unacked messages come back in place when it closes (Return).
func TestReturnPutsBackInPlace(t *testing.T) {
	q, _ := newQueue(t, nil)
	enqueue(q, 0, "m1", "m2", "m3")
	_, ms := fetch(q, 2)
	q.Return([]*queue.Message{ms[1], ms[0]})
	check(t, "ready", []string{"m1", "m2", "m3"}, ready(q))
	if q.Unacked() != 0 {
		t.Errorf("unacked = %d", q.Unacked())
	}
}

// With x-max-priority, higher-priority messages go first, FIFO within a level; priorities above the maximum count as the maximum.
func TestPriorityLevels(t *testing.T) {
	q, _ := newQueue(t, protocol.Table{"x-max-priority": int32(5)})
	enqueue(q, 0, "p0a")
	enqueue(q, 9, "p9") // treated as 5
	enqueue(q, 5, "p5")
	enqueue(q, 2, "p2")
	enqueue(q, 0, "p0b")
	check(t, "order", []string{"p9", "p5", "p2", "p0a", "p0b"}, ready(q))
	_, ms := fetch(q, 4)
	requeue(q, ms[3]) // p0a back ahead of p0b
	requeue(q, ms[1]) // p5 back behind p9's slot, at the head
	check(t, "after requeue", []string{"p5", "p0a", "p0b"}, ready(q))
}

// Without x-max-priority, message priorities are ignored.
func TestPriorityIgnoredWithoutMaxPriority(t *testing.T) {
	q, _ := newQueue(t, nil)
	enqueue(q, 0, "a")
	enqueue(q, 9, "b")
	check(t, "order", []string{"a", "b"}, ready(q))
}

// Purge removes ready messages only; unacked ones stay and can be requeued afterwards.
func TestPurgeReadyOnly(t *testing.T) {
	q, _ := newQueue(t, nil)
	enqueue(q, 0, "m1", "m2", "m3")
	_, ms := fetch(q, 1)
	if n, err := q.Purge(); n != 2 || err != nil {
		t.Errorf("purged %d", n)
	}
	if q.Ready() != 0 || q.Unacked() != 1 || q.ReadyBytes() != 0 {
		t.Errorf("ready=%d unacked=%d bytes=%d", q.Ready(), q.Unacked(), q.ReadyBytes())
	}
	requeue(q, ms[0])
	check(t, "requeued after purge", []string{"m1"}, ready(q))
}

// Settle: ack forgets, reject dead-letters with reason "rejected", requeue puts back; each settles an unacked message.
func TestSettleKinds(t *testing.T) {
	q, e := newQueue(t, nil)
	enqueue(q, 0, "m1", "m2", "m3")
	_, ms := fetch(q, 3)
	q.Settle([]queue.Settled[int]{{Message: ms[0]}}, queue.Ack)
	q.Settle([]queue.Settled[int]{{Message: ms[1]}}, queue.Reject)
	q.Settle([]queue.Settled[int]{{Message: ms[2]}}, queue.Requeue)
	check(t, "dead-lettered", []string{"rejected:m2"}, e.dead)
	check(t, "ready", []string{"m3"}, ready(q))
	if q.Unacked() != 0 {
		t.Errorf("unacked = %d", q.Unacked())
	}
}

var groupSeq int

func cons(tag string, priority int, exclusive bool) *consumer.Consumer[int] {
	groupSeq++
	return consumer.New(consumer.Settings{Tag: tag, Priority: priority, Exclusive: exclusive}, &consumer.Group[int]{}, groupSeq)
}

// Single active consumer: the first registered is active; on its removal the highest priority, then earliest registered, takes over.
func TestSingleActiveConsumerPromotion(t *testing.T) {
	q, _ := newQueue(t, protocol.Table{"x-single-active-consumer": true})
	c1, c2, c3, c4 := cons("c1", 0, false), cons("c2", 0, false), cons("c3", 5, false), cons("c4", 5, false)
	for _, c := range []*consumer.Consumer[int]{c1, c2, c3, c4} {
		queue.AddConsumer(q, c)
	}
	var order []string
	for _, c := range []*consumer.Consumer[int]{c1, c3, c4, c2} {
		order = append(order, q.ActiveConsumer().Tag)
		q.RemoveConsumer(c)
	}
	check(t, "active in turn", []string{"c1", "c3", "c4", "c2"}, order)
	if q.ActiveConsumer() != nil {
		t.Error("an active consumer is left")
	}
}

// Single active consumer: removing a waiting consumer leaves the active one in place; dispatch goes only to it.
func TestSingleActiveConsumerDispatch(t *testing.T) {
	q, e := newQueue(t, protocol.Table{"x-single-active-consumer": true})
	a, b := cons("a", 0, false), cons("b", 9, false)
	queue.AddConsumer(q, a)
	queue.AddConsumer(q, b)
	enqueue(q, 0, "m1", "m2")
	check(t, "deliveries", []string{"a:m1", "a:m2"}, e.delivered)
	q.RemoveConsumer(b)
	if q.ActiveConsumer() != a {
		t.Error("removing a waiting consumer changed the active one")
	}
}

// AdmitConsumer: exclusive needs no consumers; nobody joins an exclusive consumer; SAC queues refuse exclusive.
func TestAdmitConsumer(t *testing.T) {
	var perr *protocol.Error
	q, _ := newQueue(t, nil)
	queue.AddConsumer(q, cons("a", 0, false))
	if err := queue.AdmitConsumer(q, true); !errors.As(err, &perr) || perr.Code != 403 {
		t.Errorf("exclusive beside a consumer: %v", err)
	}
	q2, _ := newQueue(t, nil)
	if err := queue.AdmitConsumer(q2, true); err != nil {
		t.Fatal(err)
	}
	x := cons("x", 0, true)
	queue.AddConsumer(q2, x)
	if err := queue.AdmitConsumer(q2, false); err == nil {
		t.Error("consumer admitted beside an exclusive one")
	}
	q2.RemoveConsumer(x)
	if err := queue.AdmitConsumer(q2, false); err != nil {
		t.Errorf("after the exclusive consumer left: %v", err)
	}
	sac, _ := newQueue(t, protocol.Table{"x-single-active-consumer": true})
	if err := queue.AdmitConsumer(sac, true); !errors.As(err, &perr) || perr.Text != "ACCESS_REFUSED - queue 'q' in vhost '/' in exclusive use" {
		t.Errorf("exclusive on SAC: %v", err)
	}
}

// ConsumerCount counts every consumer and HadConsumer remembers there was one.
func TestConsumerCountAndHadConsumer(t *testing.T) {
	q, _ := newQueue(t, nil)
	if q.HadConsumer() {
		t.Fatal("new queue had a consumer")
	}
	c := cons("a", 0, false)
	queue.AddConsumer(q, c)
	q.RemoveConsumer(c)
	if q.ConsumerCount() != 0 || !q.HadConsumer() {
		t.Errorf("count=%d had=%t", q.ConsumerCount(), q.HadConsumer())
	}
}

// Dispatch hands ready messages round robin until no consumer can take one.
func TestDispatchRoundRobinUntilBlocked(t *testing.T) {
	q, e := newQueue(t, nil)
	g := &consumer.Group[int]{}
	a := consumer.New(consumer.Settings{Tag: "a", Prefetch: 1}, g, 1)
	b := consumer.New(consumer.Settings{Tag: "b", Prefetch: 2}, g, 2)
	enqueue(q, 0, "m1", "m2", "m3", "m4", "m5")
	queue.AddConsumer(q, a)
	queue.AddConsumer(q, b)
	n := q.Dispatch()
	check(t, "deliveries", []string{"a:m1", "b:m2", "b:m3"}, e.delivered)
	if n != 3 || q.Ready() != 2 || q.Unacked() != 3 {
		t.Errorf("n=%d ready=%d unacked=%d", n, q.Ready(), q.Unacked())
	}
}

// A publish to an empty queue goes straight to a consumer that can take it.
func TestPublishDeliversAtOnce(t *testing.T) {
	q, e := newQueue(t, nil)
	queue.AddConsumer(q, cons("a", 0, false))
	enqueue(q, 0, "m1")
	check(t, "deliveries", []string{"a:m1"}, e.delivered)
	if q.Ready() != 0 {
		t.Errorf("ready = %d", q.Ready())
	}
}

// The channel-wide limiter's refusal (CanSend) stops dispatch and suspends the group until Resume.
func TestDispatchStopsAtCanSend(t *testing.T) {
	q, e := newQueue(t, nil)
	room := 1
	e.allow = func(*consumer.Consumer[int]) bool { room--; return room >= 0 }
	c := cons("a", 0, false)
	queue.AddConsumer(q, c)
	enqueue(q, 0, "m1", "m2", "m3")
	q.Dispatch()
	check(t, "deliveries", []string{"a:m1"}, e.delivered)
	if !c.Group().Suspended() {
		t.Fatal("group not suspended")
	}
	room = 1
	q.Resume(c.Group())
	q.Dispatch()
	check(t, "after resume", []string{"a:m1", "a:m2"}, e.delivered)
}

// Length limits: drop-head dead-letters the head with reason maxlen; reject-publish refuses the newcomer.
func TestLengthLimits(t *testing.T) {
	q, e := newQueue(t, protocol.Table{"x-max-length": int32(2)})
	enqueue(q, 0, "m1", "m2", "m3")
	check(t, "drop-head", []string{"maxlen:m1"}, e.dead)
	check(t, "ready", []string{"m2", "m3"}, ready(q))
	r, re := newQueue(t, protocol.Table{"x-max-length": int32(1), "x-overflow": "reject-publish"})
	accepted := r.Publish(&queue.Message{Body: []byte("m1")}, 0, false)
	refused := r.Publish(&queue.Message{Body: []byte("m2")}, 0, false)
	if !accepted || refused {
		t.Errorf("accepted=%t refused=%t", accepted, !refused)
	}
	check(t, "refused", []string{"rejected:m2"}, re.refused)
}

// Message TTL: the TTL timer is set for the head's expiry; firing it dead-letters the expired head with reason expired.
func TestTTLTimer(t *testing.T) {
	q, e := newQueue(t, protocol.Table{"x-message-ttl": int32(1000)})
	enqueue(q, 0, "m1")
	due, ok := e.timers[queue.TTLTimer]
	if !ok || due != int64(time.Second) {
		t.Fatalf("TTL timer = %d, %t", due, ok)
	}
	e.now = due
	q.TimerFired(queue.TTLTimer)
	check(t, "expired", []string{"expired:m1"}, e.dead)
	if q.Ready() != 0 {
		t.Errorf("ready = %d", q.Ready())
	}
}

// x-expires runs only without consumers; firing it asks for deletion unless a consumer came.
func TestExpiresTimer(t *testing.T) {
	q, e := newQueue(t, protocol.Table{"x-expires": int32(5000)})
	q.Touch()
	if due := e.timers[queue.ExpiresTimer]; due != int64(5*time.Second) {
		t.Fatalf("expires timer = %d", due)
	}
	c := cons("a", 0, false)
	queue.AddConsumer(q, c)
	q.Touch()
	if _, ok := e.timers[queue.ExpiresTimer]; ok {
		t.Error("x-expires runs with a consumer")
	}
	if q.TimerFired(queue.ExpiresTimer) {
		t.Error("a queue with a consumer expired")
	}
	q.RemoveConsumer(c)
	if !q.TimerFired(queue.ExpiresTimer) {
		t.Error("an unused queue did not expire")
	}
}

// New validates arguments with RabbitMQ's texts; Equivalent compares integer types by value.
func TestNewAndEquivalent(t *testing.T) {
	_, err := queue.New[int](&env{}, "/", "q", queue.Options{Args: protocol.Table{"x-max-priority": int32(256)}})
	var perr *protocol.Error
	if !errors.As(err, &perr) || perr.Text != "PRECONDITION_FAILED - invalid arg 'x-max-priority' for queue 'q' in vhost '/': {max_value_exceeded,256}" {
		t.Errorf("err = %v", err)
	}
	q, _ := newQueue(t, protocol.Table{"x-max-priority": int32(3)})
	if err := q.Equivalent(queue.Options{Args: protocol.Table{"x-max-priority": int64(3)}}); err != nil {
		t.Errorf("int64 3 vs int32 3: %v", err)
	}
	if err := q.Equivalent(queue.Options{Durable: true, Args: protocol.Table{"x-max-priority": int32(3)}}); err == nil {
		t.Error("durable mismatch accepted")
	}
	for _, arg := range []string{"x-delivery-limit", "x-max-age"} {
		_, err := queue.New[int](&env{}, "/", "q", queue.Options{Args: protocol.Table{arg: int32(1)}})
		want := fmt.Sprintf("PRECONDITION_FAILED - invalid arg '%s' for queue 'q' in vhost '/' of queue type rabbit_classic_queue", arg)
		if !errors.As(err, &perr) || perr.Text != want {
			t.Errorf("%s: err = %v", arg, err)
		}
	}
}

// The TTL timer moves only earlier (ensure_ttl_timer): a new head that
// expires later leaves it where it is; one that expires earlier brings it
// forward.
func TestTTLTimerMovesOnlyEarlier(t *testing.T) {
	q, e := newQueue(t, nil)
	q.Publish(&queue.Message{Body: []byte("m1")}, int64(time.Second), true)
	q.Publish(&queue.Message{Body: []byte("m2")}, int64(10*time.Second), true)
	q.Publish(&queue.Message{Body: []byte("m3")}, int64(100*time.Millisecond), true)
	if due := e.timers[queue.TTLTimer]; due != int64(time.Second) {
		t.Fatalf("timer = %v, want m1's 1s", time.Duration(due))
	}
	fetch(q, 1) // head m2 expires at 10s: the timer stays at 1s
	if due := e.timers[queue.TTLTimer]; due != int64(time.Second) {
		t.Errorf("timer moved later, to %v", time.Duration(due))
	}
	fetch(q, 1) // head m3 expires at 100ms: the timer comes forward
	if due := e.timers[queue.TTLTimer]; due != int64(100*time.Millisecond) {
		t.Errorf("timer = %v, want m3's 100ms", time.Duration(due))
	}
}
