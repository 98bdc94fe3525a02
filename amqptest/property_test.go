package amqptest

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"pgregory.net/rapid"

	"github.com/amqpsim/amqpsim/check"
	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// The tests of CheckUnderFaults run a small amqp091-go consumer of "jobs"
// with bugs planted in it. Those that watch the property fail give rapid a
// recordingTB, and run in a temporary directory, where rapid writes its
// fail files.

// recordingTB is a rapid.TB whose failures are recorded, not reported.
type recordingTB struct {
	name   string
	mu     sync.Mutex
	failed bool
	errors []string
	logs   []string
}

func (r *recordingTB) Helper()                           {}
func (r *recordingTB) Name() string                      { return r.name }
func (r *recordingTB) Logf(format string, args ...any)   { r.Log(fmt.Sprintf(format, args...)) }
func (r *recordingTB) Skipf(format string, args ...any)  { r.Fatalf(format, args...) }
func (r *recordingTB) Skip(args ...any)                  { r.Fatal(args...) }
func (r *recordingTB) SkipNow()                          { r.FailNow() }
func (r *recordingTB) Errorf(format string, args ...any) { r.Error(fmt.Sprintf(format, args...)) }
func (r *recordingTB) Fatalf(format string, args ...any) { r.Error(fmt.Sprintf(format, args...)) }
func (r *recordingTB) Fatal(args ...any)                 { r.Error(args...) }
func (r *recordingTB) Fail()                             { r.FailNow() }

func (r *recordingTB) Log(args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logs = append(r.logs, fmt.Sprint(args...))
}

func (r *recordingTB) Error(args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failed = true
	r.errors = append(r.errors, fmt.Sprint(args...))
}

func (r *recordingTB) FailNow() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failed = true
}

func (r *recordingTB) Failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failed
}

// output is everything recorded, errors first.
func (r *recordingTB) output() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.errors, "\n") + "\n" + strings.Join(r.logs, "\n")
}

// failing runs the property with a recordingTB named name, in a temporary
// directory, and returns it; the property must fail.
func failing(t *testing.T, name string, run func(context.Context, *Server) error, opts ...CheckOption) *recordingTB {
	t.Helper()
	shrinkFully(t)
	tb := &recordingTB{name: name}
	checkUnderFaults(t, tb, run, opts)
	if !tb.Failed() {
		t.Fatalf("the property held:\n%s", tb.output())
	}
	return tb
}

// shrinkFully lets rapid shrink until it converges, however slow the
// runs: its default shrink time, 30 s, once cut a -race run on a loaded
// machine (load 12) short of the smallest schedule. -rapid.shrinktime on
// the command line still rules.
func shrinkFully(t *testing.T) {
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "rapid.shrinktime" })
	f := flag.Lookup("rapid.shrinktime")
	if given || f == nil {
		return
	}
	old := f.Value.String()
	if err := f.Value.Set("10m"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Value.Set(old) })
}

// jobs declares the durable queue jobs, without a dead-letter exchange,
// and publishes ten persistent jobs to it.
func jobs(srv *Server) error {
	b := srv.Broker()
	conn := b.Connect("setup")
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return err
	}
	if _, err := ch.QueueDeclare("jobs", sim.QueueOptions{Durable: true}); err != nil {
		return err
	}
	for i := range 10 {
		m := sim.Message{Properties: protocol.Properties{DeliveryMode: 2}, Body: fmt.Appendf(nil, "job-%d", i)}
		if err := b.Publish("/", "", "jobs", m); err != nil {
			return err
		}
	}
	return nil
}

// consumer consumes jobs through amqp091-go with a prefetch of 5, acking
// each delivery, and reconnects a second after every failure, until its
// context ends. The fields plant bugs.
type consumer struct {
	// drop, if set, says whether to reject a delivery without requeue
	// (jobs has no dead-letter exchange: the message is lost).
	drop func(d amqp.Delivery) bool
	// requeue, if set, says whether to nack a delivery with requeue.
	requeue func(d amqp.Delivery) bool
	// qosLate sets the prefetch after basic.consume, too late for it.
	qosLate bool
	// noBackoff reconnects at once after a failure.
	noBackoff bool
	// qosAfter, if set, is a prefetch set after basic.consume, which
	// only later consumers would take: the consumer keeps its 5.
	qosAfter int
}

func (c consumer) run(ctx context.Context, srv *Server) error {
	for ctx.Err() == nil {
		c.session(ctx, srv)
		if c.noBackoff {
			continue
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
	return nil
}

func (c consumer) session(ctx context.Context, srv *Server) {
	conn, err := amqp.DialConfig(srv.URL(), amqp.Config{Dial: srv.Dial, Properties: amqp.Table{"connection_name": "consumer"}})
	if err != nil {
		return
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return
	}
	if !c.qosLate {
		if err := ch.Qos(5, 0, false); err != nil {
			return
		}
	}
	ds, err := ch.Consume("jobs", "", false, false, false, false, nil)
	if err != nil {
		return
	}
	if c.qosLate {
		if err := ch.Qos(5, 0, false); err != nil {
			return
		}
	}
	if c.qosAfter > 0 {
		if err := ch.Qos(c.qosAfter, 0, false); err != nil {
			return
		}
	}
	for {
		select {
		case <-ctx.Done():
			return
		case d, ok := <-ds:
			switch {
			case !ok:
				return
			case c.drop != nil && c.drop(d):
				d.Reject(false)
			case c.requeue != nil && c.requeue(d):
				d.Nack(false, true)
			default:
				d.Ack(false)
			}
		}
	}
}

// smallest is the schedule every planted bug below that loses a
// redelivered message shrinks to: the simplest fault, at the first
// delivery.
var smallest = Schedule{{AfterDeliveries: 1, Kind: FaultCloseChannel}}

// TestCheckUnderFaultsHolds: a correct consumer holds under every kind of
// fault, in a few lines.
func TestCheckUnderFaultsHolds(t *testing.T) {
	CheckUnderFaults(t, consumer{}.run, Setup(jobs), Drained("jobs"), Faults(Schedules(3, 10)))
}

// TestCheckUnderFaultsShrinks: a consumer that drops every redelivered
// message fails under any fault that requeues one, every time: rapid
// shrinks the schedule to the smallest, the property's failure prints it,
// the failing run's checks are logged, and its report is written, titled
// with the schedule.
//
// The faults are the closes, which land exactly (Fault), so that every
// schedule fails or passes every time. The other kinds land a few
// deliveries after their trigger, wherever the injecting goroutine wakes:
// a drop after the tenth delivery found the consumer with nothing unacked
// in 10 of 150 -race runs beside two busy loops, so a schedule of them
// fails by chance, and a failure rapid cannot reproduce ends the property
// as flaky, at that schedule.
func TestCheckUnderFaultsShrinks(t *testing.T) {
	t.Chdir(t.TempDir())
	dir := t.TempDir()
	bug := consumer{drop: func(d amqp.Delivery) bool { return d.Redelivered }}
	closes := Schedules(3, 10, FaultCloseChannel, FaultCloseConnection, FaultForceClose, FaultConsumerTimeout)
	tb := failing(t, "TestDropsRedeliveries", bug.run, Setup(jobs), Drained("jobs"), Faults(closes),
		ServerOptions(WithFailureReport(dir)))
	want := "amqptest: the consumer fails under this schedule:\n" + indent(smallest.String()) + "\n"
	if len(tb.errors) != 1 || !strings.Contains(tb.errors[0], want) {
		t.Errorf("the property's failure, want %q:\n%s", want, tb.output())
	}
	for _, want := range []string{"check.NoLoss: event ", "reject-without-dlx", "the run is in " + filepath.Join(dir, "TestDropsRedeliveries.txt"),
		"amqpsim confirm " + filepath.Join(dir, "TestDropsRedeliveries.txt") + " --url "} {
		if !strings.Contains(tb.output(), want) {
			t.Errorf("the output lacks %q:\n%s", want, tb.output())
		}
	}
	report, err := os.ReadFile(filepath.Join(dir, "TestDropsRedeliveries.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "# The run of TestDropsRedeliveries under the schedule\n# " + smallest.String() + "\n# which failed:\n# check.NoLoss"; !strings.HasPrefix(string(report), want) {
		t.Errorf("the report begins\n%.300s\nwant\n%s", report, want)
	}
}

// TestCheckUnderFaultsReproduces: a consumer whose bug shows only in one
// run out of three (as a bug that depends on goroutine order does, here
// counted so that the test does not depend on it) still shrinks to the
// smallest schedule, which each failure is re-run until it fails again;
// and the schedule rapid saved fails again when the test is rerun.
func TestCheckUnderFaultsReproduces(t *testing.T) {
	t.Chdir(t.TempDir())
	var mu sync.Mutex
	runs := 0 // runs that redelivered a message
	bug := func(ctx context.Context, srv *Server) error {
		drop := false // this run's luck, drawn at its first redelivery
		seen := false
		return consumer{drop: func(d amqp.Delivery) bool {
			if !d.Redelivered {
				return false
			}
			if !seen {
				mu.Lock()
				runs++
				drop, seen = runs%3 == 0, true
				mu.Unlock()
			}
			return drop
		}}.run(ctx, srv)
	}
	opts := []CheckOption{Setup(jobs), Drained("jobs"), Reruns(4),
		Faults(Schedules(3, 5, FaultCloseChannel, FaultCloseConnection, FaultConsumerTimeout))}
	want := "amqptest: the consumer fails under this schedule:\n" + indent(smallest.String()) + "\n"
	tb := failing(t, "TestSometimesDrops", bug, opts...)
	if len(tb.errors) != 1 || !strings.Contains(tb.errors[0], want) {
		t.Errorf("the property's failure, want %q:\n%s", want, tb.output())
	}
	// Rerun, as the failure says: rapid replays the fail file first.
	files, _ := filepath.Glob("testdata/rapid/TestSometimesDrops/*.fail")
	if len(files) != 1 {
		t.Fatalf("fail files %q, want one", files)
	}
	tb = failing(t, "TestSometimesDrops", bug, opts...)
	if len(tb.errors) != 1 || !strings.Contains(tb.errors[0], "failed after 0 tests: "+want) {
		t.Errorf("the rerun's failure, want the fail file's schedule to fail again:\n%s", tb.output())
	}
}

// TestStaleFailFilesRemoved: once the bug is fixed, the fail file of its
// failure replays and passes; CheckUnderFaults removes it and says so,
// and keeps the files of a property that still fails.
func TestStaleFailFilesRemoved(t *testing.T) {
	t.Chdir(t.TempDir())
	bug := consumer{drop: func(d amqp.Delivery) bool { return d.Redelivered }}
	opts := []CheckOption{Setup(jobs), Drained("jobs"), Faults(Schedules(1, 5, FaultCloseChannel)), Reruns(1)}
	failing(t, "TestFixed", bug.run, opts...)
	// Run again, the bug still there: rapid replays the file, which fails
	// again, and is kept.
	if tb := failing(t, "TestFixed", bug.run, opts...); !strings.Contains(tb.output(), "failed after 0 tests") {
		t.Errorf("the fail file did not replay first:\n%s", tb.output())
	}
	files, _ := filepath.Glob("testdata/rapid/TestFixed/*.fail")
	if len(files) != 1 {
		t.Fatalf("fail files of a failing property: %q, want one", files)
	}
	tb := &recordingTB{name: "TestFixed"}
	checkUnderFaults(t, tb, consumer{}.run, opts)
	if tb.Failed() {
		t.Fatalf("the fixed consumer failed:\n%s", tb.output())
	}
	if left, _ := filepath.Glob("testdata/rapid/TestFixed/*.fail"); len(left) != 0 {
		t.Errorf("stale fail files left: %q", left)
	}
	if !strings.Contains(tb.output(), "amqptest: removed rapid's fail files of failures that no longer happen") ||
		!strings.Contains(tb.output(), files[0]) {
		t.Errorf("the output does not name the removed files:\n%s", tb.output())
	}
}

// TestCheckUnderFaultsFlaky: a consumer whose bug shows once and never
// again fails as flaky, saying so, with the schedule and its failure.
func TestCheckUnderFaultsFlaky(t *testing.T) {
	t.Chdir(t.TempDir())
	var once sync.Once
	bug := func(ctx context.Context, srv *Server) error {
		drop := false
		return consumer{drop: func(d amqp.Delivery) bool {
			if d.Redelivered {
				once.Do(func() { drop = true })
			}
			return drop
		}}.run(ctx, srv)
	}
	dir := t.TempDir()
	tb := failing(t, "TestDropsOnce", bug, Setup(jobs), Drained("jobs"), Faults(rapid.Just(smallest)), Reruns(4),
		ServerOptions(WithFailureReport(dir)))
	want := "amqptest: the schedule failed once and passed 4 re-runs: the consumer's outcome depends on goroutine order\n" +
		indent(smallest.String()) + "\nits first failure:\n\tcheck.NoLoss: event "
	if len(tb.errors) != 1 || !strings.Contains(tb.errors[0], want) {
		t.Errorf("the property's failure, want %q:\n%s", want, tb.output())
	}
	// Where the runs parted: the failing run rejected the redelivered
	// job, the passing one acked it.
	for _, want := range []string{"the failing run and a passing re-run first differ at event ",
		"\tfailing: ", "basic.reject", "\tpassing: ", "basic.ack",
		"the failing run is in " + filepath.Join(dir, "TestDropsOnce.txt"),
		"go run github.com/amqpsim/amqpsim/cmd/amqpsim confirm " + filepath.Join(dir, "TestDropsOnce.txt") + " --url "} {
		if len(tb.errors) != 1 || !strings.Contains(tb.errors[0], want) {
			t.Errorf("the property's failure lacks %q:\n%s", want, tb.output())
		}
	}
}

// TestCheckUnderFaultsZeroTriggerLandsFirst: faults after 0 deliveries
// land before run starts, every time, so that whether they hit the
// consumer does not depend on which goroutine ran first (when they were
// injected beside run, a force-close after 0 deliveries sometimes closed
// the consumer's first connection, and the property then failed as
// flaky, blaming the consumer).
func TestCheckUnderFaultsZeroTriggerLandsFirst(t *testing.T) {
	sched := Schedule{{Kind: FaultRestart}, {Kind: FaultAlarm, Alarm: sim.AlarmMemory, For: time.Second}}
	run := func(_ context.Context, srv *Server) error {
		b := srv.Broker()
		restarted := slices.ContainsFunc(b.Trace(), func(e sim.Event) bool { return e.Kind == sim.EventRestart })
		if !restarted || b.Alarms() != sim.AlarmMemory {
			return fmt.Errorf("when run started: restarted %t, alarms %v; want the restart and the memory alarm", restarted, b.Alarms())
		}
		return nil
	}
	CheckUnderFaults(t, run, Faults(rapid.Just(sched)), Reruns(1))
}

// TestCheckUnderFaultsChecks: each check runs by default, and is tuned or
// switched off by its option. The schedule is empty or one close, so
// every run of a case is the same.
func TestCheckUnderFaultsChecks(t *testing.T) {
	requeueFirst := consumer{requeue: func(d amqp.Delivery) bool { return !d.Redelivered }}
	for _, tc := range []struct {
		name  string
		c     consumer
		sched Schedule
		opts  []CheckOption
		fails string // what the failing run logs; "" if the property holds
	}{
		{"lost", consumer{drop: func(amqp.Delivery) bool { return true }}, nil, nil, "check.NoLoss: "},
		{"lost, NoLoss off", consumer{drop: func(amqp.Delivery) bool { return true }}, nil,
			[]CheckOption{Without(CheckNoLoss, CheckLint)}, ""},
		{"qos late", consumer{qosLate: true}, nil, nil, "holds 6 unacked deliveries, more than 5"},
		{"qos late, MaxUnacked(10)", consumer{qosLate: true}, nil, []CheckOption{MaxUnacked(10), Without(CheckLint)}, ""},
		{"qos late, Lint", consumer{qosLate: true}, nil, []CheckOption{Without(CheckMaxUnacked)}, "check.Lint: consume-before-qos"},
		// The bound is the largest prefetch set, not the last.
		{"qos lowered after consume", consumer{qosAfter: 1}, nil, []CheckOption{Without(CheckLint)}, ""},
		{"retried once", requeueFirst, nil, nil, "check.AtMostDeliveries: "},
		{"retried once, AtMostDeliveries(2)", requeueFirst, nil, []CheckOption{AtMostDeliveries(2)}, ""},
		{"retried once under a fault", requeueFirst, smallest, []CheckOption{AtMostDeliveries(2)}, ""},
		{"dropped, Lint tuned", consumer{drop: func(amqp.Delivery) bool { return true }}, nil,
			[]CheckOption{Without(CheckNoLoss), LintOptions(check.Options{Disable: []check.Rule{check.RejectWithoutDLX}})}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := append([]CheckOption{Setup(jobs), Drained("jobs"), Faults(rapid.Just(tc.sched))}, tc.opts...)
			if tc.fails == "" {
				CheckUnderFaults(t, tc.c.run, opts...)
				return
			}
			t.Chdir(t.TempDir())
			if tb := failing(t, "TestChecks", tc.c.run, opts...); !strings.Contains(tb.output(), tc.fails) {
				t.Errorf("the output lacks %q:\n%s", tc.fails, tb.output())
			}
		})
	}
}

// TestNackedPublishesWithinTheBound: a correct consumer that requeues the
// job it handles when its publish is nacked gets one job again for each
// publish a FaultNackPublishes nacks (five here, one after the other with
// a prefetch of 1), which the default AtMostDeliveries bound allows, as
// it allows one redelivery for each other fault.
func TestNackedPublishesWithinTheBound(t *testing.T) {
	sched := Schedule{{AfterDeliveries: 1, Kind: FaultNackPublishes, Count: 5}, {AfterDeliveries: 2, Kind: FaultCloseChannel}}
	if got := sched.Redeliveries(); got != 6 {
		t.Errorf("%v allows %d redeliveries, want 6", sched, got)
	}
	CheckUnderFaults(t, publishing(1), Setup(jobs), Drained("jobs"), Faults(rapid.Just(sched[:1])))
}

// TestCheckUnderFaultsWaits: every wait of a run is bounded, and a run
// that does not finish fails saying what it waited for.
func TestCheckUnderFaultsWaits(t *testing.T) {
	forever := func(ctx context.Context, srv *Server) error { <-ctx.Done(); return nil }
	for _, tc := range []struct {
		name  string
		run   func(context.Context, *Server) error
		opts  []CheckOption
		fails string
	}{
		{"no Until", consumer{}.run, nil,
			"run did not return within 10m0s; a consumer that runs until its context ends needs Until or Drained"},
		{"never drained", forever, []CheckOption{Drained("jobs"), Within(time.Hour)},
			"waited 1h0m0s for jobs drained (last seen: jobs ready=10 unacked=0 consumers=0); the broker had pushed 0 deliveries"},
		{"returns early", func(context.Context, *Server) error { return nil }, []CheckOption{Drained("jobs")},
			"run returned before jobs drained (last seen: jobs ready=10 unacked=0 consumers=0)"},
		{"returns an error", func(context.Context, *Server) error { return errors.New("job-3 handled twice") },
			[]CheckOption{Drained("jobs")}, "run: job-3 handled twice"},
		{"ignores its context", func(context.Context, *Server) error { select {} }, []CheckOption{Until("never", func(*sim.Broker) bool { return true })},
			"run did not return within 10m0s of the end of its context\ngoroutines of the run were still blocked after it ended (deadlock: main bubble goroutine has exited but blocked goroutines remain): the consumer did not stop"},
		{"setup fails", consumer{}.run, []CheckOption{Drained("jobs"), Setup(func(*Server) error { return errors.New("no jobs") })},
			"setup: no jobs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Chdir(t.TempDir())
			opts := append([]CheckOption{Setup(jobs), Faults(rapid.Just(Schedule{})), Reruns(1)}, tc.opts...)
			if tb := failing(t, "TestWaits", tc.run, opts...); !strings.Contains(tb.output(), tc.fails) {
				t.Errorf("the output lacks %q:\n%s", tc.fails, tb.output())
			}
		})
	}
}

// TestCheckUnderFaultsRefusesWithBroker: each run needs a broker of its
// own.
func TestCheckUnderFaultsRefusesWithBroker(t *testing.T) {
	tb := &recordingTB{name: "TestWithBroker"}
	checkUnderFaults(t, tb, consumer{}.run, []CheckOption{ServerOptions(WithBroker(sim.New(sim.Config{})))})
	if !strings.Contains(tb.output(), "WithBroker cannot be one of its ServerOptions") {
		t.Errorf("output:\n%s", tb.output())
	}
}

// TestCheckUnderFaultsSpinning: a consumer that reconnects without a
// back-off spins while a restart's downtime refuses its dials, and its
// bubble's clock, which would end the downtime, cannot move. The run
// fails within seconds of CPU time (the watchdog counts the process's CPU
// time, so a slow machine only takes longer), naming the goroutine that
// spun and the back-off it needs; the spin stops, as the server's Dial
// blocks from then on.
func TestCheckUnderFaultsSpinning(t *testing.T) {
	t.Chdir(t.TempDir())
	// The restart, at the start, lands before the consumer runs.
	spinning := consumer{noBackoff: true}
	tb := failing(t, "TestSpins", spinning.run, Setup(jobs), Drained("jobs"), Reruns(1),
		Faults(rapid.Just(Schedule{{AfterDeliveries: 0, Kind: FaultRestart, Downtime: 5 * time.Second}})))
	for _, want := range []string{"amqptest: the run made no progress (no frame to or from the broker, no move of its clock) while the process burnt 3s of CPU",
		"needs a back-off between attempts", "the goroutine that kept running:\ngoroutine ", "amqptest.consumer.run("} {
		if !strings.Contains(tb.output(), want) {
			t.Errorf("the output lacks %q:\n%s", want, tb.output())
		}
	}
}

// TestSpinOutsideDialIsFatal: a goroutine that spins without calling the
// server cannot be stopped, so a second spin of the run kills the test
// binary, with the diagnosis and the stack (the test runs itself in a
// child process).
func TestSpinOutsideDialIsFatal(t *testing.T) {
	if os.Getenv("AMQPTEST_SPIN_CHILD") == "1" {
		spin := func(ctx context.Context, srv *Server) error {
			for ctx.Err() == nil {
				spinForever()
			}
			return nil
		}
		CheckUnderFaults(t, spin, Setup(jobs), Drained("jobs"), Reruns(1), Faults(rapid.Just(Schedule{})))
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestSpinOutsideDialIsFatal$", "-test.count=1")
	cmd.Env = append(os.Environ(), "AMQPTEST_SPIN_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the child passed:\n%s", out)
	}
	for _, want := range []string{"panic: amqptest: the run made no progress", "needs a back-off",
		"the spin goes on outside the server's Dial", "amqptest.spinForever("} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the child's output lacks %q:\n%s", want, out)
		}
	}
}

// spinForever spins.
//
//go:noinline
func spinForever() {
	for i := 0; ; i++ {
		if i < 0 {
			return
		}
	}
}

// TestSpinMeter: the watchdog calls a run spinning only when it made no
// progress while the process burnt spinCPU; a run that progresses, or
// that waits while the process is starved of the CPU, however long in
// real time, is not.
func TestSpinMeter(t *testing.T) {
	var m spinMeter
	at := func(io uint64, ticks int64, cpu time.Duration) bool { return m.observe(progress{io, ticks}, cpu) }
	if at(1, 0, 0) || at(2, 0, spinCPU) || at(2, 1, 2*spinCPU) {
		t.Error("a run that progresses is called spinning")
	}
	for range 100 { // a starved process: real time passes, CPU time does not
		if at(2, 1, 2*spinCPU+time.Millisecond) {
			t.Fatal("a starved run is called spinning")
		}
	}
	if at(2, 1, 3*spinCPU-time.Millisecond) {
		t.Error("called spinning before spinCPU")
	}
	if !at(2, 1, 3*spinCPU) {
		t.Error("no progress over spinCPU is not called spinning")
	}
}
