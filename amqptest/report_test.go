package amqptest_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/amqpsim/amqpsim/amqptest"
	"github.com/amqpsim/amqpsim/scenarios"
)

// failingT is a test that fails, whose cleanups the test runs itself.
type failingT struct {
	testing.TB
	cleanups []func()
	logs     []string
}

func (f *failingT) Failed() bool                    { return true }
func (f *failingT) Cleanup(fn func())               { f.cleanups = append(f.cleanups, fn) }
func (f *failingT) Logf(format string, args ...any) { f.logs = append(f.logs, format) }
func (f *failingT) Name() string                    { return "TestWorker/case 1" }
func (f *failingT) end() {
	for _, fn := range slices.Backward(f.cleanups) {
		fn()
	}
}

// TestFailureReport: a failing test's run is written as a scenario file
// and its diagram; the file parses and replays on the simulator to the
// results it shows, through amqp091-go over the wire as in process.
func TestFailureReport(t *testing.T) {
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		ft := &failingT{TB: t}
		srv := amqptest.NewServer(ft, amqptest.WithFailureReport(dir))
		conn, err := amqp.DialConfig(srv.URL(), amqp.Config{Dial: srv.Dial, Properties: amqp.Table{"connection_name": "worker"}})
		if err != nil {
			t.Fatal(err)
		}
		ch, _ := conn.Channel()
		ch.QueueDeclare("jobs", true, false, false, false, nil)
		ch.Qos(1, 0, false)
		ds, _ := ch.Consume("jobs", "w", false, false, false, false, nil)
		for _, body := range []string{"j1", "j2"} {
			ch.Publish("", "jobs", false, false, amqp.Publishing{Body: []byte(body), DeliveryMode: 2})
		}
		d := recv(t, ds)
		d.Ack(false)
		d = recv(t, ds)
		d.Nack(false, true) // requeued, and delivered again
		d = recv(t, ds)
		d.Ack(false)
		synctest.Wait()
		ft.end()
	})
	path := filepath.Join(dir, "TestWorker_case_1.txt")
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "TestWorker_case_1.svg")); err != nil {
		t.Errorf("no diagram: %v", err)
	}
	for _, want := range []string{"# The run of TestWorker/case 1, which failed.", "consume worker-ch1 jobs tag=w\n",
		"nack worker-ch1 #2 requeue\n  w <- j2 #3 redelivered\n", "queue jobs\n  jobs ready=0 unacked=0 consumers=1\n"} {
		if !strings.Contains(string(src), want) {
			t.Errorf("the report lacks %q:\n%s", want, src)
		}
	}
	s, err := scenarios.Parse(path, src)
	if err != nil {
		t.Fatal(err)
	}
	scenarios.Check(t, s) // in process
	scenarios.CheckWire(t, s)
}

// TestFailureReportConcurrentConfirms: fifty publishers in confirm mode
// on one channel, as a concurrent service has them. The connection is
// stalled while they publish, so that the server reads their frames in
// at most two reads and confirms the publishes of a read together
// (basic.ack multiple); the report writes each confirm under its
// publish, so the fault-free run replays to its results, in process and
// over the wire.
func TestFailureReportConcurrentConfirms(t *testing.T) {
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		ft := &failingT{TB: t}
		srv := amqptest.NewServer(ft, amqptest.WithFailureReport(dir))
		conn, err := amqp.DialConfig(srv.URL(), amqp.Config{Dial: srv.Dial, Properties: amqp.Table{"connection_name": "pub"}})
		if err != nil {
			t.Fatal(err)
		}
		ch, _ := conn.Channel()
		ch.QueueDeclare("jobs", true, false, false, false, nil)
		if err := ch.Confirm(false); err != nil {
			t.Fatal(err)
		}
		release, err := srv.StallConnection("pub")
		if err != nil {
			t.Fatal(err)
		}
		dcs := make([]*amqp.DeferredConfirmation, 50)
		var wg sync.WaitGroup
		for i := range dcs {
			wg.Go(func() {
				// Distinct message ids: each publish is a step of its own.
				dc, err := ch.PublishWithDeferredConfirm("", "jobs", false, false,
					amqp.Publishing{MessageId: fmt.Sprint("id", i), Body: []byte(fmt.Sprint("m", i))})
				if err != nil {
					t.Error(err)
				}
				dcs[i] = dc
			})
		}
		waitGroup(t, &wg, "the publishers to write") // written, not read
		release()
		synctest.Wait()
		for i, dc := range dcs {
			select {
			case <-dc.Done():
				if !dc.Acked() {
					t.Errorf("publish %d nacked", i)
				}
			default:
				t.Errorf("publish %d unconfirmed", i)
			}
		}
		ft.end()
	})
	path := filepath.Join(dir, "TestWorker_case_1.txt")
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(src), "in one basic.ack multiple=true") {
		t.Errorf("no confirm was coalesced:\n%s", src)
	}
	s, err := scenarios.Parse(path, src)
	if err != nil {
		t.Fatal(err)
	}
	scenarios.Check(t, s)
	scenarios.CheckWire(t, s)
}
