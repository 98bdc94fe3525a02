package worker

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/amqpsim/amqpsim/amqptest"
	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

const (
	prefetch = 10
	messages = 30
)

// TestWorkerUnderFaults property-tests the worker through amqp091-go
// against random fault schedules (channels and connections closed at a
// delivery, connections dropped, broker restarts with downtime, alarms,
// nacked publishes, at random points of the delivery stream): every good
// message is handled, every bad one ends dead-lettered exactly once, and
// amqptest checks the rest on the trace: no message lost, the prefetch
// window held, each message delivered at most once more per fault, and
// check.Lint finds nothing. Each run is in its own synctest bubble, so
// the worker's back-off sleeps, the restart's downtime and every wait take
// no real time, and each run is exact. A failing schedule is shrunk and
// printed, and its run written into $AMQPSIM_REPORT if set.
func TestWorkerUnderFaults(t *testing.T) {
	amqptest.CheckUnderFaults(t, func(ctx context.Context, srv *amqptest.Server) error {
		var handled tally
		w := &Worker{URL: srv.URL(), Dial: srv.Dial, Queue: "jobs", Prefetch: prefetch, Backoff: time.Second,
			Handle: handled.handle}
		w.Run(ctx)
		return handled.check(srv.Broker())
	},
		amqptest.Setup(setup),
		amqptest.Drained("jobs"),
		amqptest.Faults(amqptest.Schedules(3, messages)),
		amqptest.MaxUnacked(prefetch))
}

// bodies are the jobs: one in seven cannot be handled.
var bodies = func() []string {
	var bs []string
	for i := range messages {
		body := fmt.Sprintf("job-%02d", i)
		if i%7 == 3 {
			body = fmt.Sprintf("bad-%02d", i)
		}
		bs = append(bs, body)
	}
	return bs
}()

// setup makes the durable work queue, whose rejects go to a durable
// jobs.failed queue, and publishes the jobs, persistent.
func setup(srv *amqptest.Server) error {
	b := srv.Broker()
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
	if err != nil {
		return err
	}
	for _, body := range bodies {
		m := sim.Message{Properties: protocol.Properties{DeliveryMode: 2}, Body: []byte(body)}
		if err := b.Publish("/", "", "jobs", m); err != nil {
			return err
		}
	}
	return nil
}

// tally counts what the worker handled.
type tally struct {
	mu      sync.Mutex
	handled map[string]int
}

func (t *tally) handle(body []byte) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.handled == nil {
		t.handled = map[string]int{}
	}
	t.handled[string(body)]++
	if strings.HasPrefix(string(body), "bad") {
		return fmt.Errorf("cannot handle %s", body)
	}
	return nil
}

// check says whether every job was handled and every bad one, only,
// dead-lettered once.
func (t *tally) check(b *sim.Broker) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	failed, err := b.QueueMessages("/", "jobs.failed")
	if err != nil {
		return err
	}
	deadLettered := map[string]int{}
	for _, m := range failed {
		deadLettered[string(m.Body)]++
	}
	for _, body := range bodies {
		if t.handled[body] == 0 {
			return fmt.Errorf("%s never handled", body)
		}
		if bad := strings.HasPrefix(body, "bad"); bad && deadLettered[body] != 1 || !bad && deadLettered[body] != 0 {
			return fmt.Errorf("%s dead-lettered %d times", body, deadLettered[body])
		}
	}
	return nil
}
