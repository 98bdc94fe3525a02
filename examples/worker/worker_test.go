package worker

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"pgregory.net/rapid"

	"github.com/amqpsim/amqpsim/amqptest"
	"github.com/amqpsim/amqpsim/check"
	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

const (
	prefetch = 10
	messages = 30
)

// TestWorkerUnderFaults property-tests the worker through amqp091-go
// against random fault schedules (connections dropped or force-closed,
// broker restarts with downtime, at random points of the delivery
// stream): every good message is handled, at most once per fault more
// than once, every bad one ends dead-lettered exactly once, no message is
// lost, the prefetch window holds, and check.Lint finds nothing. Each run
// is in its own synctest bubble, so the worker's back-off sleeps, the restart's
// downtime and every wait take no real time, and each run is exact.
func TestWorkerUnderFaults(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		sched := amqptest.Schedules(3, messages).Draw(rt, "schedule")
		var err error
		synctest.Test(t, func(*testing.T) { err = runWorker(sched) })
		if err != nil {
			rt.Fatalf("schedule:\n%v\n%v", sched, err)
		}
	})
}

// runWorker runs the worker over one fault schedule and checks the run.
// A failing run is written as a scenario file, with the schedule as its
// title, and its diagram, into $AMQPSIM_REPORT if set: rapid runs the
// smallest failing schedule last, so the files show that one.
func runWorker(sched amqptest.Schedule) (err error) {
	srv, err := amqptest.Start(amqptest.WithClock(amqptest.WallClock))
	if err != nil {
		return err
	}
	defer srv.Close()
	defer func() {
		if dir := os.Getenv(amqptest.ReportEnv); err != nil && dir != "" {
			if path, rerr := srv.WriteReport(dir, "TestWorkerUnderFaults", "The worker under the schedule\n"+sched.String()); rerr == nil {
				err = fmt.Errorf("%w\nthe run: %s", err, path)
			}
		}
	}()
	b := srv.Broker()
	if err := declare(b); err != nil {
		return err
	}
	var bodies []string
	for i := range messages {
		body := fmt.Sprintf("job-%02d", i)
		if i%7 == 3 {
			body = fmt.Sprintf("bad-%02d", i)
		}
		bodies = append(bodies, body)
		m := sim.Message{Properties: protocol.Properties{DeliveryMode: 2}, Body: []byte(body)}
		if err := b.Publish("/", "", "jobs", m); err != nil {
			return err
		}
	}

	var mu sync.Mutex
	handled := map[string]int{}
	w := &Worker{URL: srv.URL(), Dial: srv.Dial, Queue: "jobs", Prefetch: prefetch, Backoff: time.Second,
		Handle: func(body []byte) error {
			mu.Lock()
			defer mu.Unlock()
			handled[string(body)]++
			if strings.HasPrefix(string(body), "bad") {
				return fmt.Errorf("cannot handle %s", body)
			}
			return nil
		}}
	// The closes are armed before the worker consumes, so they land at
	// their deliveries exactly.
	waitSchedule, err := srv.StartSchedule(sched)
	if err != nil {
		return err
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()

	// stopped waits for Run to return once stopped, bounded (on the
	// bubble's clock) so that a worker that ignores its context fails
	// the run instead of hanging it.
	stopped := func() error {
		stop()
		select {
		case <-done:
			return nil
		case <-time.After(time.Minute):
			return fmt.Errorf("the worker's Run did not return within a minute of its context's cancel")
		}
	}
	if err := waitSchedule(); err != nil {
		if serr := stopped(); serr != nil {
			return fmt.Errorf("%w; %v", err, serr)
		}
		return err
	}
	// Done when the queue is empty and nothing is held.
	wait, cancel := context.WithTimeout(context.Background(), time.Minute)
	err = b.WaitFor(wait, func(b *sim.Broker) bool {
		st, err := b.QueueStats("/", "jobs")
		return err == nil && st.Ready == 0 && st.Unacked == 0
	})
	cancel()
	if serr := stopped(); serr != nil {
		return serr
	}
	if err != nil {
		return fmt.Errorf("the worker did not drain the queue: %v", err)
	}

	failed, err := b.QueueMessages("/", "jobs.failed")
	if err != nil {
		return err
	}
	deadLettered := map[string]int{}
	for _, m := range failed {
		deadLettered[string(m.Body)]++
	}
	for _, body := range bodies {
		n := handled[body]
		if n == 0 || n > 1+len(sched) {
			return fmt.Errorf("%s handled %d times, want 1 to %d", body, n, 1+len(sched))
		}
		if bad := strings.HasPrefix(body, "bad"); bad && deadLettered[body] != 1 || !bad && deadLettered[body] != 0 {
			return fmt.Errorf("%s dead-lettered %d times", body, deadLettered[body])
		}
	}
	trace := b.Trace()
	for _, err := range []error{check.NoLoss(trace), check.MaxUnacked(trace, prefetch), check.AtMostDeliveries(trace, 1+len(sched))} {
		if err != nil {
			return err
		}
	}
	if fs := check.Lint(trace, check.Options{}); len(fs) > 0 {
		return fmt.Errorf("lint: %v", fs)
	}
	return nil
}

// declare makes the durable work queue, whose rejects go to a durable
// jobs.failed queue.
func declare(b *sim.Broker) error {
	conn := b.Connect("setup")
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return err
	}
	if _, err := ch.QueueDeclare("jobs.failed", sim.QueueOptions{Durable: true}); err != nil {
		return err
	}
	_, err = ch.QueueDeclare("jobs", sim.QueueOptions{Durable: true, Args: sim.Table{
		"x-dead-letter-exchange":    "",
		"x-dead-letter-routing-key": "jobs.failed",
	}})
	return err
}
