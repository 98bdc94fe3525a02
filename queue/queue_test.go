package queue_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/amqpsim/amqpsim/consumer"
	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/queue"
)

func newQueue(t *testing.T, args protocol.Table) *queue.Queue {
	t.Helper()
	q, err := queue.New("/", "q", queue.Options{Args: args})
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// enqueue adds messages with the given bodies and priority.
func enqueue(q *queue.Queue, priority uint8, bodies ...string) {
	for _, b := range bodies {
		q.Enqueue(&queue.Message{Body: []byte(b), Properties: &protocol.Properties{Priority: priority}})
	}
}

func ready(q *queue.Queue) []string {
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

func fetch(q *queue.Queue, n int) ([]fetched, []*queue.Message) {
	var out []fetched
	var ms []*queue.Message
	for i := 0; i < n; i++ {
		m, re := q.Fetch(true)
		if m == nil {
			break
		}
		out = append(out, fetched{string(m.Body), re})
		ms = append(ms, m)
	}
	return out, ms
}

func check(t *testing.T, what string, want, got any) {
	t.Helper()
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("%s (-want +got):\n%s", what, d)
	}
}

// A requeued message returns to its original position (ordered by enqueue sequence), redelivered.
func TestRequeueToOriginalPosition(t *testing.T) {
	q := newQueue(t, nil)
	enqueue(q, 0, "m1", "m2", "m3", "m4", "m5")
	_, ms := fetch(q, 3)
	q.Requeue(ms[1])
	check(t, "ready", []string{"m2", "m4", "m5"}, ready(q))
	got, _ := fetch(q, 1)
	check(t, "next", []fetched{{"m2", true}}, got)
	if q.Unacked() != 3 || q.Ready() != 2 {
		t.Errorf("unacked=%d ready=%d", q.Unacked(), q.Ready())
	}
}

// Several messages requeued in any order end up in publish order, ahead of later messages.
func TestRequeueSeveralInAnyOrder(t *testing.T) {
	q := newQueue(t, nil)
	enqueue(q, 0, "m1", "m2", "m3", "m4")
	_, ms := fetch(q, 3)
	enqueue(q, 0, "m5")
	for _, i := range []int{2, 0, 1} {
		q.Requeue(ms[i])
	}
	check(t, "ready", []string{"m1", "m2", "m3", "m4", "m5"}, ready(q))
	got, _ := fetch(q, 5)
	check(t, "redelivered flags", []fetched{{"m1", true}, {"m2", true}, {"m3", true}, {"m4", false}, {"m5", false}}, got)
}

// With x-max-priority, higher-priority messages go first, FIFO within a level; priorities above the maximum count as the maximum.
func TestPriorityLevels(t *testing.T) {
	q := newQueue(t, protocol.Table{"x-max-priority": int32(5)})
	enqueue(q, 0, "p0a")
	enqueue(q, 9, "p9") // treated as 5
	enqueue(q, 5, "p5")
	enqueue(q, 2, "p2")
	enqueue(q, 0, "p0b")
	check(t, "order", []string{"p9", "p5", "p2", "p0a", "p0b"}, ready(q))
	_, ms := fetch(q, 4)
	q.Requeue(ms[3]) // p0a back ahead of p0b
	q.Requeue(ms[1]) // p5 back behind p9's slot, at the head
	check(t, "after requeue", []string{"p5", "p0a", "p0b"}, ready(q))
}

// Without x-max-priority, message priorities are ignored.
func TestPriorityIgnoredWithoutMaxPriority(t *testing.T) {
	q := newQueue(t, nil)
	enqueue(q, 0, "a")
	enqueue(q, 9, "b")
	check(t, "order", []string{"a", "b"}, ready(q))
}

// Purge removes ready messages only; unacked ones stay and can be requeued afterwards.
func TestPurgeReadyOnly(t *testing.T) {
	q := newQueue(t, nil)
	enqueue(q, 0, "m1", "m2", "m3")
	_, ms := fetch(q, 1)
	if n := q.Purge(); n != 2 {
		t.Errorf("purged %d", n)
	}
	if q.Ready() != 0 || q.Unacked() != 1 || q.ReadyBytes() != 0 {
		t.Errorf("ready=%d unacked=%d bytes=%d", q.Ready(), q.Unacked(), q.ReadyBytes())
	}
	q.Requeue(ms[0])
	check(t, "requeued after purge", []string{"m1"}, ready(q))
}

// A deleted queue ignores later settlements and requeues.
func TestDeletedQueueIgnoresSettlements(t *testing.T) {
	q := newQueue(t, nil)
	enqueue(q, 0, "m1", "m2")
	_, ms := fetch(q, 2)
	q.Purge()
	q.Deleted = true
	q.Requeue(ms[0])
	q.Settle(ms[1])
	if q.Ready() != 0 {
		t.Errorf("ready = %d", q.Ready())
	}
}

func cons(tag string, priority int, exclusive bool) *consumer.Consumer {
	return &consumer.Consumer{Tag: tag, Priority: priority, Exclusive: exclusive, Group: &consumer.Group{}}
}

// Single active consumer: the first registered is active; on its removal the highest priority, then earliest registered, takes over.
func TestSingleActiveConsumerPromotion(t *testing.T) {
	q := newQueue(t, protocol.Table{"x-single-active-consumer": true})
	c1, c2, c3, c4 := cons("c1", 0, false), cons("c2", 0, false), cons("c3", 5, false), cons("c4", 5, false)
	for _, c := range []*consumer.Consumer{c1, c2, c3, c4} {
		q.AddConsumer(c)
	}
	var order []string
	for _, c := range []*consumer.Consumer{c1, c3, c4, c2} {
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
	q := newQueue(t, protocol.Table{"x-single-active-consumer": true})
	a, b := cons("a", 0, false), cons("b", 9, false)
	q.AddConsumer(a)
	q.AddConsumer(b)
	enqueue(q, 0, "m1", "m2")
	var got []string
	q.Dispatch(nil, func(c *consumer.Consumer, m *queue.Message, _ bool) { got = append(got, c.Tag+":"+string(m.Body)) }, nil)
	check(t, "deliveries", []string{"a:m1", "a:m2"}, got)
	q.RemoveConsumer(b)
	if q.ActiveConsumer() != a {
		t.Error("removing a waiting consumer changed the active one")
	}
}

// AdmitConsumer: exclusive needs no consumers; nobody joins an exclusive consumer; SAC queues refuse exclusive.
func TestAdmitConsumer(t *testing.T) {
	var perr *protocol.Error
	q := newQueue(t, nil)
	q.AddConsumer(cons("a", 0, false))
	if err := q.AdmitConsumer(true); !errors.As(err, &perr) || perr.Code != 403 {
		t.Errorf("exclusive beside a consumer: %v", err)
	}
	q2 := newQueue(t, nil)
	if err := q2.AdmitConsumer(true); err != nil {
		t.Fatal(err)
	}
	x := cons("x", 0, true)
	q2.AddConsumer(x)
	if err := q2.AdmitConsumer(false); err == nil {
		t.Error("consumer admitted beside an exclusive one")
	}
	q2.RemoveConsumer(x)
	if err := q2.AdmitConsumer(false); err != nil {
		t.Errorf("after the exclusive consumer left: %v", err)
	}
	sac := newQueue(t, protocol.Table{"x-single-active-consumer": true})
	if err := sac.AdmitConsumer(true); !errors.As(err, &perr) || perr.Text != "ACCESS_REFUSED - queue 'q' in vhost '/' in exclusive use" {
		t.Errorf("exclusive on SAC: %v", err)
	}
}

// ConsumerCount counts every consumer and HadConsumer remembers there was one.
func TestConsumerCountAndHadConsumer(t *testing.T) {
	q := newQueue(t, nil)
	if q.HadConsumer() {
		t.Fatal("new queue had a consumer")
	}
	c := cons("a", 0, false)
	q.AddConsumer(c)
	q.RemoveConsumer(c)
	if q.ConsumerCount() != 0 || !q.HadConsumer() {
		t.Errorf("count=%d had=%t", q.ConsumerCount(), q.HadConsumer())
	}
}

// Dispatch hands ready messages round robin until no consumer can take one.
func TestDispatchRoundRobinUntilBlocked(t *testing.T) {
	q := newQueue(t, nil)
	g := &consumer.Group{}
	a := &consumer.Consumer{Tag: "a", Prefetch: 1, Group: g}
	b := &consumer.Consumer{Tag: "b", Prefetch: 2, Group: g}
	q.AddConsumer(a)
	q.AddConsumer(b)
	enqueue(q, 0, "m1", "m2", "m3", "m4", "m5")
	var got []string
	n := q.Dispatch(nil, func(c *consumer.Consumer, m *queue.Message, _ bool) { got = append(got, c.Tag+":"+string(m.Body)) }, nil)
	check(t, "deliveries", []string{"a:m1", "b:m2", "b:m3"}, got)
	if n != 3 || q.Ready() != 2 || q.Unacked() != 3 {
		t.Errorf("n=%d ready=%d unacked=%d", n, q.Ready(), q.Unacked())
	}
}

// New validates arguments with RabbitMQ's texts; Equivalent compares integer types by value.
func TestNewAndEquivalent(t *testing.T) {
	_, err := queue.New("/", "q", queue.Options{Args: protocol.Table{"x-max-priority": int32(256)}})
	var perr *protocol.Error
	if !errors.As(err, &perr) || perr.Text != "PRECONDITION_FAILED - invalid arg 'x-max-priority' for queue 'q' in vhost '/': {max_value_exceeded,256}" {
		t.Errorf("err = %v", err)
	}
	q := newQueue(t, protocol.Table{"x-max-priority": int32(3)})
	if err := q.Equivalent(queue.Options{Args: protocol.Table{"x-max-priority": int64(3)}}); err != nil {
		t.Errorf("int64 3 vs int32 3: %v", err)
	}
	if err := q.Equivalent(queue.Options{Durable: true, Args: protocol.Table{"x-max-priority": int32(3)}}); err == nil {
		t.Error("durable mismatch accepted")
	}
}
