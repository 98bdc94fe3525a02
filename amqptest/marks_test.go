package amqptest

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"pgregory.net/rapid"

	"github.com/amqpsim/amqpsim/scenarios"
	"github.com/amqpsim/amqpsim/sim"
)

// TestReportReplaysItsFaults: the report of a run under any schedule of
// every kind of fault replays, on a fresh simulator, to the answers the
// run got: each fault is a step where it happened (a close armed at its
// delivery, a restart, an alarm raised and cleared, a nacked publish, a
// drop as the client's close), so the report reproduces the run. The
// consumer publishes each job it handles to a done queue in confirm mode,
// so that nacked publishes show too.
// Alarms are left out (see TestReportReplaysItsAlarms).
func TestReportReplaysItsFaults(t *testing.T) {
	testReportReplays(t, slices.DeleteFunc(slices.Clone(allKinds), func(k FaultKind) bool { return k == FaultAlarm })...)
}

// testReportReplays checks that reports of runs under schedules of the
// kinds replay to their runs.
func testReportReplays(t *testing.T, kinds ...FaultKind) {
	dir := t.TempDir()
	faulty := 0 // reports with a fault step
	rapid.Check(t, func(rt *rapid.T) {
		sched := Schedules(3, 10, kinds...).Draw(rt, "schedule")
		var report string
		var err error
		synctest.Test(t, func(*testing.T) {
			c := &checkConfig{within: 10 * time.Minute, setup: jobs, off: map[Property]bool{}}
			Drained("jobs")(c)
			srv, serr := start(config{simConfig: sim.Config{Clock: time.Now}})
			if serr != nil {
				err = serr
				return
			}
			defer srv.Close()
			if err = c.exercise(srv, publishingConsumer, sched); err != nil {
				return
			}
			synctest.Wait()
			report, err = srv.WriteReport(dir, "replays", "a run under\n"+sched.String())
		})
		if err != nil {
			rt.Fatal(err)
		}
		s, err := scenarios.ParseFile(report)
		if err != nil {
			rt.Fatal(err)
		}
		res, err := scenarios.Replay(s)
		if err != nil {
			rt.Fatal(err)
		}
		if d := res.Diff(); d != "" {
			src, _ := os.ReadFile(report)
			rt.Fatalf("the report does not replay to its run:\n%s\nthe report:\n%s", d, src)
		}
		if text := string(s.Format()); strings.Contains(text, "\nfault ") || strings.Contains(text, "\nalarm ") {
			faulty++
		}
	})
	if faulty == 0 {
		t.Errorf("no report had a fault step")
	}
}

// publishingConsumer is publishing(5).
func publishingConsumer(ctx context.Context, srv *Server) error { return publishing(5)(ctx, srv) }

// publishing is a consumer of jobs with a prefetch of prefetch that
// publishes each job it handles to jobs.done in confirm mode before it
// acks it, and requeues the job when the publish is nacked; it reconnects
// a second after a failure.
func publishing(prefetch int) func(context.Context, *Server) error {
	return func(ctx context.Context, srv *Server) error { return publishingRun(ctx, srv, prefetch) }
}

func publishingRun(ctx context.Context, srv *Server, prefetch int) error {
	for ctx.Err() == nil {
		func() {
			conn, err := amqp.DialConfig(srv.URL(), amqp.Config{Dial: srv.Dial, Properties: amqp.Table{"connection_name": "consumer"}})
			if err != nil {
				return
			}
			defer conn.Close()
			ch, err := conn.Channel()
			if err != nil || ch.Qos(prefetch, 0, false) != nil || ch.Confirm(false) != nil {
				return
			}
			if _, err := ch.QueueDeclare("jobs.done", true, false, false, false, nil); err != nil {
				return
			}
			ds, err := ch.Consume("jobs", "", false, false, false, false, nil)
			if err != nil {
				return
			}
			for {
				select {
				case <-ctx.Done():
					return
				case d, ok := <-ds:
					if !ok {
						return
					}
					conf, err := ch.PublishWithDeferredConfirmWithContext(ctx, "", "jobs.done", false, false, amqp.Publishing{Body: d.Body})
					if err != nil {
						return
					}
					if ok, err := conf.WaitContext(ctx); err != nil || !ok {
						d.Nack(false, true)
						continue
					}
					d.Ack(false)
				}
			}
		}()
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
	return nil
}

// TestReportReplaysItsAlarms: the same for alarms, with nacked publishes:
// a publish that an alarm blocked is written where it blocked its
// connection, and what follows on it waits for the clear. A close, a drop
// or a restart that ends a blocked connection before the clear loses the
// publish that blocked it (the broker never reads it), so that no step
// can write it: such reports show the block under the alarm step, where
// a replay blocks no one.
func TestReportReplaysItsAlarms(t *testing.T) {
	testReportReplays(t, FaultAlarm, FaultNackPublishes)
}
