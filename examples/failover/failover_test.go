package failover

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/amqpsim/amqpsim/amqptest"
	"github.com/amqpsim/amqpsim/sim"
)

const (
	queue    = "orders"
	messages = 30
	prefetch = 5
	// every is how often the application hands the publisher a message,
	// and work how long the consumer takes to handle one: the queue
	// builds up a backlog, so that a fault finds deliveries unacked.
	every = 10 * time.Millisecond
	work  = 20 * time.Millisecond
	// resumeWithin bounds, on the bubble's clock, how long the consumer
	// may take to handle every confirmed message once the last is
	// confirmed. The longest wait a fault imposes on it is a consume on a
	// node cut off from the queue's majority, answered 541 after
	// sim.QueueOperationTimeout (65 s), then a reconnect.
	resumeWithin = 5 * time.Minute
)

// TestFailoverUnderFaults property-tests the publisher and the consumer
// through amqp091-go on a simulated 3-node cluster against random fault
// schedules: nodes stopped, killed, hung or cut off from the others for
// up to 10 s (ClusterKinds), and a single broker's faults besides (channels and
// connections closed at a delivery, every connection dropped or
// force-closed, the consumer timed out, the whole cluster restarted,
// alarms, nacked publishes), at random points of the delivery stream.
// It checks that every message is confirmed, that every confirmed message
// is handled, exactly once however often it was delivered or published
// (the clients' own record), and that the consumer resumes after each
// fault to handle what came after it; and amqptest checks the trace: no
// message lost, the prefetch window held, each message delivered at most
// once more per fault, and check.Lint finds nothing. Every check is on:
// with a quorum queue and persistent messages, no fault of a node of a
// cluster that keeps (or regains) its majority may lose or drop a
// message.
func TestFailoverUnderFaults(t *testing.T) {
	kinds := append(slices.Clone(amqptest.ClusterKinds),
		amqptest.FaultCloseChannel, amqptest.FaultCloseConnection, amqptest.FaultForceClose, amqptest.FaultDrop,
		amqptest.FaultConsumerTimeout, amqptest.FaultRestart, amqptest.FaultAlarm, amqptest.FaultNackPublishes)
	amqptest.CheckUnderFaults(t, func(ctx context.Context, srv *amqptest.Server) error {
		return exchange(ctx, srv, newRecord(), options{})
	},
		amqptest.ServerOptions(amqptest.WithConfig(sim.Config{Nodes: 3})),
		// The queue exists before the first fault, as an application's
		// queues are declared while the cluster is whole: a quorum queue
		// declared while a node is cut off has no running member there
		// until that node restarts, and a consumer on that node gets
		// consume-ok and never a message (recorded on a 4.3.6 cluster:
		// partition-quorum-declared-during-cut.txt), which no client can
		// tell from an idle queue.
		amqptest.Setup(declareOnNode3),
		amqptest.Faults(amqptest.Schedules(3, messages, kinds...)),
		amqptest.MaxUnacked(prefetch))
}

// declareOnNode3 declares the queue through node 3, where the publisher
// connects first: node 3 leads it, as when the publisher declares it.
func declareOnNode3(srv *amqptest.Server) error {
	conn, err := srv.Broker().Dial(sim.ConnectOptions{Node: 3})
	if err != nil {
		return err
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return err
	}
	_, err = ch.QueueDeclare(queue, sim.QueueOptions{Durable: true, Args: sim.Table{"x-queue-type": "quorum"}})
	return err
}

// options are exchange's.
type options struct {
	logf func(string, ...any) // the clients' Logf
	// consumerFirst starts the publisher once the consumer consumes, so
	// that the consumer declares the queue, which its node then leads.
	consumerFirst bool
}

// exchange runs a publisher of the messages and a consumer, each over the
// cluster's node URLs, until every message is confirmed and handled; it
// returns what went wrong.
func exchange(ctx context.Context, srv *amqptest.Server, rec *record, o options) error {
	urls, logf := srv.NodeURLs(), o.logf
	consumer := &Consumer{
		Nodes: Nodes{URLs: urls, Dial: srv.Dial, Backoff: time.Second, Logf: logf},
		Queue: queue, Prefetch: prefetch, Handle: rec.handle,
	}
	// Clients are spread over the cluster: each is given the hosts in
	// its own order. The consumer starts on node 1, the publisher on
	// node 3.
	publisher := &Publisher{
		Nodes: Nodes{URLs: append(urls[2:], urls[:2]...), Dial: srv.Dial, Backoff: time.Second, Logf: logf},
		Queue: queue, Window: 5, ConfirmTimeout: 5 * time.Second, Confirmed: rec.confirm,
	}
	consuming, stop := context.WithCancel(ctx)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		consumer.Run(consuming)
	}()
	defer func() {
		stop()
		<-stopped
	}()
	if o.consumerFirst {
		err := srv.Broker().WaitFor(ctx, func(b *sim.Broker) bool {
			st, err := b.QueueStats("/", queue)
			return err == nil && st.Consumers > 0
		})
		if err != nil {
			return err
		}
	}
	in := make(chan Message)
	go produce(ctx, in)
	if err := publisher.Run(ctx, in); err != nil {
		return fmt.Errorf("publisher: %w", err)
	}
	if n := rec.count(rec.confirmed); n != messages {
		return fmt.Errorf("the publisher returned with %d of %d messages confirmed", n, messages)
	}
	if err := rec.waitHandled(ctx, messages, resumeWithin); err != nil {
		return err
	}
	return rec.check()
}

// produce is the application: it hands the publisher a message every
// 10 ms, then closes in.
func produce(ctx context.Context, in chan<- Message) {
	defer close(in)
	for i := range messages {
		m := Message{ID: fmt.Sprintf("order-%02d", i), Body: fmt.Appendf(nil, "order %d", i)}
		select {
		case in <- m:
		case <-ctx.Done():
			return
		}
		time.Sleep(every)
	}
}

// record is the clients' own account: what the broker confirmed and what
// the consumer handled, by message ID.
type record struct {
	mu        sync.Mutex
	confirmed map[string]int
	handled   map[string]int
	// changed is closed, and replaced, at every change.
	changed chan struct{}
}

func newRecord() *record {
	return &record{confirmed: map[string]int{}, handled: map[string]int{}, changed: make(chan struct{})}
}

// confirm is the publisher's Confirmed.
func (r *record) confirm(id string) { r.note(r.confirmed, id) }

// handle is the consumer's Handle: it takes work's time.
func (r *record) handle(m Message) {
	time.Sleep(work)
	r.note(r.handled, m.ID)
}

func (r *record) note(in map[string]int, id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	in[id]++
	close(r.changed)
	r.changed = make(chan struct{})
}

// count returns how many IDs in holds.
func (r *record) count(in map[string]int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(in)
}

// waitHandled waits until the consumer has handled n messages, for at most
// d of the bubble's clock.
func (r *record) waitHandled(ctx context.Context, n int, d time.Duration) error {
	deadline := time.After(d)
	for {
		r.mu.Lock()
		handled, changed := len(r.handled), r.changed
		r.mu.Unlock()
		if handled >= n {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline:
			return fmt.Errorf("the consumer did not resume: %d of %d messages handled %v after the last was confirmed", handled, n, d)
		}
	}
}

// check says whether every message was confirmed once and handled once.
func (r *record) check() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var errs []string
	for i := range messages {
		id := fmt.Sprintf("order-%02d", i)
		if c := r.confirmed[id]; c != 1 {
			errs = append(errs, fmt.Sprintf("%s confirmed %d times", id, c))
		}
		if h := r.handled[id]; h != 1 {
			errs = append(errs, fmt.Sprintf("%s handled %d times", id, h))
		}
	}
	if len(r.handled) != messages {
		errs = append(errs, fmt.Sprintf("%d messages handled, %d published", len(r.handled), messages))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// TestLeaderStopsMidStream is one schedule, pinned, to read: the node
// that leads the quorum queue, the one the consumer is connected to,
// stops gracefully once 10 messages are handled, and starts again 5 s
// later. The stopped node's connection gets RabbitMQ's shutdown close;
// the consumer connects to node 2 and resumes; the queue's leadership
// moves to a surviving node at once (a graceful stop hands it over), so
// the publisher on node 3 never notices; nothing is lost or handled
// twice.
func TestLeaderStopsMidStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// A 3-node cluster on the bubble's clock: the clients' back-offs
		// and the downtime below take no real time.
		srv := amqptest.NewServer(t, amqptest.WithConfig(sim.Config{Nodes: 3, Clock: time.Now}))
		b := srv.Broker()
		var mu sync.Mutex
		var logged []string
		logf := func(format string, args ...any) {
			mu.Lock()
			defer mu.Unlock()
			logged = append(logged, fmt.Sprintf(format, args...))
			t.Logf(format, args...)
		}

		rec := newRecord()
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		done := make(chan error, 1)
		// The consumer starts on node 1 and declares the queue, which node
		// 1 then leads (client-local, RabbitMQ's default placement); the
		// publisher starts on node 3 once the consumer consumes.
		go func() { done <- exchange(ctx, srv, rec, options{logf: logf, consumerFirst: true}) }()

		if err := rec.waitHandled(ctx, 10, time.Minute); err != nil {
			t.Fatal(err)
		}
		leader, _, err := b.QueueLeader("/", queue)
		if err != nil {
			t.Fatal(err)
		}
		if leader != b.NodeName(1) {
			t.Fatalf("%s leads %s, not node 1", leader, queue)
		}
		t.Logf("stopping node 1 (%s), the leader of %s", leader, queue)
		if err := b.StopNode(1); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Second) // the consumer reconnects meanwhile
		if err := b.StartNode(1); err != nil {
			t.Fatal(err)
		}

		if err := <-done; err != nil {
			t.Fatal(err)
		}
		now, _, _ := b.QueueLeader("/", queue)
		if now == leader {
			t.Errorf("%s still leads %s after its stop", now, queue)
		}
		// What the clients logged, in order: the consumer's connection to
		// node 1 got the shutdown close and it moved on to node 2; the
		// publisher's connection was never touched.
		mu.Lock()
		defer mu.Unlock()
		want := []string{
			"consumer: connected to amqpsim:5672",
			"publisher: connected to amqpsim-3:5672",
			`consumer: amqpsim:5672: Exception (320) Reason: "CONNECTION_FORCED - broker forced connection closure with reason 'shutdown'"; next: amqpsim-2:5672 in 1s`,
			"consumer: connected to amqpsim-2:5672",
		}
		if !slices.Equal(logged, want) {
			t.Errorf("the clients logged\n%s\nwant\n%s", strings.Join(logged, "\n"), strings.Join(want, "\n"))
		}
	})
}
