package check_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/amqpsim/amqpsim/check"
	"github.com/amqpsim/amqpsim/scenarios"
	"github.com/amqpsim/amqpsim/sim"
)

func TestMaxUnacked(t *testing.T) {
	r := newRun(t, nil)
	r.ch.Qos(3, 0, false)
	c, _ := r.ch.Consume("q", sim.ConsumeOptions{Tag: "c"})
	r.publish(5)
	if err := check.MaxUnacked(r.b.Trace(), 3); err != nil {
		t.Errorf("within the window: %v", err)
	}
	if err := check.MaxUnacked(r.b.Trace(), 2); err == nil || !strings.Contains(err.Error(), "holds 3 unacked") {
		t.Errorf("over 2: %v", err)
	}
	d, _ := c.Next()
	r.ch.Ack(d.DeliveryTag, false) // the fourth arrives: still 3 held
	if err := check.MaxUnacked(r.b.Trace(), 3); err != nil {
		t.Errorf("after an ack: %v", err)
	}
}

// A consumer whose tag the broker chose is known by its first delivery:
// a no-ack one holds nothing, a manual-ack one on the same channel still
// counts.
func TestMaxUnackedBrokerChosenTags(t *testing.T) {
	r := newRun(t, nil)
	if _, err := r.ch.QueueDeclare("q2", sim.QueueOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ch.Consume("q", sim.ConsumeOptions{NoAck: true}); err != nil {
		t.Fatal(err)
	}
	r.publish(5)
	if err := check.MaxUnacked(r.b.Trace(), 1); err != nil {
		t.Errorf("a no-ack consumer with a broker-chosen tag: %v", err)
	}
	if _, err := r.ch.Consume("q2", sim.ConsumeOptions{}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		r.b.Publish("/", "", "q2", sim.Message{Body: []byte("x")})
	}
	if err := check.MaxUnacked(r.b.Trace(), 1); err == nil || !strings.Contains(err.Error(), "holds 2 unacked") {
		t.Errorf("a manual-ack consumer with a broker-chosen tag, over 1: %v", err)
	}
}

func TestAtMostDeliveries(t *testing.T) {
	r := newRun(t, nil)
	r.publish(1)
	for range 3 {
		d, _, _ := r.ch.Get("q", false)
		r.ch.Nack(d.DeliveryTag, false, true)
	}
	if err := check.AtMostDeliveries(r.b.Trace(), 3); err != nil {
		t.Errorf("3 deliveries, at most 3: %v", err)
	}
	if err := check.AtMostDeliveries(r.b.Trace(), 2); err == nil {
		t.Error("3 deliveries passed at most 2")
	}
}

func TestNoLoss(t *testing.T) {
	kept := newRun(t, sim.Table{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": "q"})
	kept.publish(1)
	d, _, _ := kept.ch.Get("q", false)
	kept.ch.Reject(d.DeliveryTag, false) // dead-lettered back into q
	if err := check.NoLoss(kept.b.Trace()); err != nil {
		t.Errorf("dead-lettered: %v", err)
	}
	lost := newRun(t, nil)
	lost.publish(1)
	d, _, _ = lost.ch.Get("q", false)
	lost.ch.Reject(d.DeliveryTag, false)
	if err := check.NoLoss(lost.b.Trace()); err == nil || !strings.Contains(err.Error(), "rejected") {
		t.Errorf("dropped: %v", err)
	}
	deleted := newRun(t, nil)
	deleted.publish(2)
	deleted.ch.QueueDelete("q", sim.QueueDeleteOptions{})
	if err := check.NoLoss(deleted.b.Trace()); err == nil {
		t.Error("deleted with its queue passed")
	}
	// The edge: exactly one message deleted with its queue is a loss, an
	// empty queue's deletion is not.
	for _, n := range []int{1, 0} {
		r := newRun(t, nil)
		r.publish(n)
		r.ch.QueueDelete("q", sim.QueueDeleteOptions{})
		err := check.NoLoss(r.b.Trace())
		if n == 1 && (err == nil || !strings.Contains(err.Error(), "1 messages deleted with queue q")) {
			t.Errorf("one message deleted with its queue: %v", err)
		}
		if n == 0 && err != nil {
			t.Errorf("an empty queue deleted: %v", err)
		}
	}
	// A restart deletes the non-durable q with its messages, and NoLoss
	// says what did it.
	restarted := newRun(t, nil)
	restarted.publish(2)
	restarted.b.Restart()
	if err := check.NoLoss(restarted.b.Trace()); err == nil || !strings.Contains(err.Error(), "2 messages deleted with queue q by the broker's restart") {
		t.Errorf("deleted by a restart: %v", err)
	}
}

// The project's own scenario library is a catalogue of RabbitMQ's rules,
// written to provoke them, not a set of well-behaved clients, so Lint has
// plenty to say about it. What it must not say is anything that is not
// true: every finding of the rules that look at one consumer's settings
// must be about a consumer that really had them.
func TestLintOnTheLibrary(t *testing.T) {
	all, err := scenarios.LoadFS(scenarios.Library(), ".")
	if err != nil {
		t.Fatal(err)
	}
	counts := map[check.Rule]int{}
	files := map[check.Rule]int{}
	for _, s := range all {
		res, err := scenarios.Replay(s)
		if err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
		seen := map[check.Rule]bool{}
		for _, f := range check.Lint(res.Trace, check.Options{Enable: []check.Rule{check.PublishWithoutConfirms}}) {
			counts[f.Rule]++
			if !seen[f.Rule] {
				seen[f.Rule] = true
				files[f.Rule]++
			}
			ev := res.Trace[f.Events[0]]
			switch f.Rule {
			case check.UnlimitedPrefetch, check.ConsumeBeforeQos:
				if ev.Kind != sim.EventCall || ev.NoAck {
					t.Errorf("%s: %s cites %v, not an ack-mode basic.consume", s.Name, f.Rule, ev)
				}
			case check.QueuesShareChannel:
				queues := map[string]bool{}
				for _, i := range f.Events {
					e := res.Trace[i]
					if e.Kind != sim.EventCall || e.NoAck || e.Channel != f.Channel || queues[e.Queue] {
						t.Errorf("%s: %s cites %v", s.Name, f.Rule, e)
					}
					queues[e.Queue] = true
				}
			case check.NearConsumerTimeout:
				if ev.Kind != sim.EventPush {
					t.Errorf("%s: %s cites %v, not a delivery", s.Name, f.Rule, ev)
				}
			case check.GetPolling:
				if ev.Kind != sim.EventCall || ev.Queue != f.Queue {
					t.Errorf("%s: %s cites %v", s.Name, f.Rule, ev)
				}
			}
		}
	}
	var lines []string
	for _, r := range []check.Rule{check.ConsumeBeforeQos, check.UnlimitedPrefetch, check.SharedPrefetch, check.QueuesShareChannel, check.GlobalLimitCleared,
		check.GetPolling, check.UnackedAtEnd, check.RedeliveryLoop, check.RejectWithoutDLX, check.CloseWithUnacked,
		check.NearConsumerTimeout, check.PublishWithoutConfirms} {
		lines = append(lines, fmt.Sprintf("%s: %d in %d files", r, counts[r], files[r]))
	}
	t.Logf("Lint on %d library scenarios:\n%s", len(all), strings.Join(lines, "\n"))
}
