package amqptest

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"pgregory.net/rapid"

	"github.com/amqpsim/amqpsim/check"
	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// CheckUnderFaults property-tests a consumer against RabbitMQ's faults:
// rapid draws fault schedules (Schedules(3, 20) unless Faults says), and
// for each one a fresh server runs in its own testing/synctest bubble,
// its broker following the bubble's clock (sim.Config.Clock is time.Now
// unless ServerOptions set one), so that the consumer's sleeps, back-offs
// and timeouts, a restart's downtime and every wait take no real time.
// For example, for a worker that consumes "jobs" until its context ends:
//
//	amqptest.CheckUnderFaults(t, func(ctx context.Context, srv *amqptest.Server) error {
//		w := &Worker{URL: srv.URL(), Dial: srv.Dial, Queue: "jobs", Prefetch: 10}
//		w.Run(ctx)
//		return nil
//	}, amqptest.Setup(declareAndPublish), amqptest.Drained("jobs"))
//
// A run goes:
//
//  1. Setup, if given, prepares the broker (queues, the work to consume);
//  2. the schedule's closes are armed, and its faults after 0 deliveries
//     injected (see StartSchedule);
//  3. run starts, in a goroutine of the bubble: it runs the consumer
//     against srv (srv.URL() and srv.Dial) until ctx ends, and returns
//     what the consumer got wrong that the trace cannot show (a message
//     never handled, handled twice...), or nil;
//  4. the other faults are injected as the broker's deliveries reach
//     their triggers, until the run is done (a trigger the run never
//     reaches does not fire);
//  5. the run is done when Until's condition holds (Drained is the
//     usual one): ctx is then cancelled and run must return; without
//     Until, when run returns by itself;
//  6. the trace is checked with package check: NoLoss, MaxUnacked,
//     AtMostDeliveries and Lint, each tuned or switched off by an option
//     (MaxUnacked, AtMostDeliveries, LintOptions, Without).
//
// Every wait of a run is bounded (Within, 10 minutes of the bubble's
// clock by default), and a run that does not finish fails saying what it
// waited for. A run whose goroutine spins without ever blocking (a
// reconnect loop without a back-off while dials are refused) stops the
// bubble's clock, so no bound is reached: a watchdog on the real clock
// fails it once the process has burnt 3 s of CPU without the run making
// progress, naming the spinning goroutine with its stack (spin.go). A failing run fails the property: rapid shrinks the
// schedule towards fewer, earlier, simpler faults and prints the
// smallest, with what failed in its run. Its draw is logged as a Go
// literal, which pins it in a test: Faults(rapid.Just(schedule)). The
// failing run is also written as a failure report (a scenario file and
// its SVG diagram, named after the test) into the directory
// WithFailureReport (in ServerOptions) or $AMQPSIM_REPORT names, or else
// the system's temporary directory's amqpsim-reports, with the command
// that runs it on RabbitMQ (amqpsim confirm), which says whether RabbitMQ
// answers the run's steps as the simulator did (the failure is then in
// the consumer) or differently (the simulator's fault).
//
// A consumer's goroutines do not run in a fixed order, so one schedule
// may fail once and pass the next time. So that shrinking converges and
// the printed schedule fails again when rerun, a schedule that failed
// before is run up to Reruns times (10 by default) until it fails again;
// so is the first schedule of a test (a fail file's, when rapid replays
// one, as a failure says how to), and, once one schedule has passed after
// failing, every schedule rapid tries while shrinking. A schedule that
// failed and then passed all its re-runs fails the property as flaky:
// "the schedule failed once and passed 10 re-runs: the consumer's outcome
// depends on goroutine order", with its first failure, the first events
// where the failing run's trace and a passing re-run's differ (the
// ordering that mattered), and the confirm command of its report.
//
// Rapid replays the fail files it wrote for earlier failures first
// (testdata/rapid/TEST/); when the property holds, CheckUnderFaults
// removes those that no longer fail, and logs it.
//
// CheckUnderFaults needs a *testing.T, as testing/synctest does, and must
// not be called inside a bubble. With rapid's own flags (-rapid.checks,
// -rapid.seed, -rapid.failfile) it draws more schedules or replays one.
func CheckUnderFaults(t *testing.T, run func(ctx context.Context, srv *Server) error, opts ...CheckOption) {
	t.Helper()
	checkUnderFaults(t, t, run, opts)
}

// CheckOption configures CheckUnderFaults.
type CheckOption func(*checkConfig)

// Property names a check CheckUnderFaults runs over each run's trace.
type Property uint8

const (
	// CheckNoLoss is check.NoLoss: no message dropped, discarded or
	// deleted with its queue.
	CheckNoLoss Property = iota + 1
	// CheckMaxUnacked is check.MaxUnacked: no consumer held more
	// unacked deliveries than its prefetch (see MaxUnacked).
	CheckMaxUnacked
	// CheckAtMostDeliveries is check.AtMostDeliveries: no message
	// delivered more often than the bound (see AtMostDeliveries).
	CheckAtMostDeliveries
	// CheckLint is check.Lint (see LintOptions).
	CheckLint
)

// String is the check's name in package check.
func (p Property) String() string {
	switch p {
	case CheckNoLoss:
		return "NoLoss"
	case CheckMaxUnacked:
		return "MaxUnacked"
	case CheckAtMostDeliveries:
		return "AtMostDeliveries"
	case CheckLint:
		return "Lint"
	}
	return fmt.Sprintf("Property(%d)", uint8(p))
}

// checkConfig is CheckUnderFaults' configuration.
type checkConfig struct {
	server    []Option
	schedules *rapid.Generator[Schedule]
	setup     func(*Server) error
	until     func(*sim.Broker) bool
	// untilWhat says what Until waits for, with the broker's state.
	untilWhat  func(*sim.Broker) string
	within     time.Duration
	reruns     int
	maxUnacked int // 0: the largest prefetch the clients set
	deliveries int
	lint       check.Options
	off        map[Property]bool
}

// Faults sets the schedules drawn; the default is Schedules(3, 20), every
// kind of fault. Triggers beyond the deliveries of a run never fire: draw
// them within what the run delivers.
func Faults(g *rapid.Generator[Schedule]) CheckOption {
	return func(c *checkConfig) { c.schedules = g }
}

// ServerOptions are the options of each run's server, for example
// WithConfig(sim.Config{Version: sim.V3_10}), WithHeartbeat or
// WithFailureReport. WithBroker cannot be one: each run has a fresh
// broker.
func ServerOptions(opts ...Option) CheckOption {
	return func(c *checkConfig) { c.server = append(c.server, opts...) }
}

// Setup prepares each run's broker before the schedule starts and run
// consumes: declares the topology and publishes the work, in process
// (srv.Broker()) or through a client. An error fails the run. In process,
// a message's properties are protocol.Properties, named as Go names
// initialisms (MessageID, CorrelationID, UserID, AppID) where amqp091-go's
// amqp.Publishing has MessageId, CorrelationId, UserId, AppId.
func Setup(f func(srv *Server) error) CheckOption {
	return func(c *checkConfig) { c.setup = f }
}

// Until ends each run once cond holds for its broker (cond should only
// inspect it: QueueStats, QueueMessages...): run's context is cancelled
// then. what names the condition in failures ("every invoice settled").
// cond is evaluated from the moment run starts, so what must happen
// before it can hold (publishing the work) belongs in Setup.
func Until(what string, cond func(b *sim.Broker) bool) CheckOption {
	return func(c *checkConfig) {
		c.until, c.untilWhat = cond, func(*sim.Broker) string { return what }
	}
}

// Drained is Until every named queue (in vhost "/") has no ready and no
// unacked message: the consumer has settled all the work. Name every
// queue the work passes through (a retry queue whose TTL sends messages
// back, say), or the run may end while messages wait there.
func Drained(queues ...string) CheckOption {
	return func(c *checkConfig) {
		c.until = func(b *sim.Broker) bool {
			for _, q := range queues {
				if st, err := b.QueueStats("/", q); err != nil || st.Ready > 0 || st.Unacked > 0 {
					return false
				}
			}
			return true
		}
		c.untilWhat = func(b *sim.Broker) string {
			seen := make([]string, len(queues))
			for i, q := range queues {
				st, err := b.QueueStats("/", q)
				if err != nil {
					seen[i] = q + " does not exist"
				} else {
					seen[i] = fmt.Sprintf("%s ready=%d unacked=%d consumers=%d", q, st.Ready, st.Unacked, st.Consumers)
				}
			}
			return fmt.Sprintf("%s drained (last seen: %s)", strings.Join(queues, ", "), strings.Join(seen, "; "))
		}
	}
}

// Within bounds every wait of a run, on the bubble's clock: for the
// schedule's triggers and Until's condition (together, from run's start),
// and for run to return once its context ends. The default is 10
// minutes.
func Within(d time.Duration) CheckOption { return func(c *checkConfig) { c.within = d } }

// Reruns sets how many times a schedule that failed before is run until
// it fails again before it is called flaky; the default is 10.
func Reruns(n int) CheckOption { return func(c *checkConfig) { c.reruns = n } }

// MaxUnacked tunes check.MaxUnacked: no manual-ack consumer may hold
// more than n unacked deliveries. The default (and n below 1) is the
// largest prefetch count the clients set (basic.qos), so that a consumer
// created before its basic.qos, or after a reconnect that forgot it,
// fails; a run that set none is not checked (check.Lint reports an
// unlimited prefetch).
func MaxUnacked(n int) CheckOption { return func(c *checkConfig) { c.maxUnacked = n } }

// AtMostDeliveries tunes check.AtMostDeliveries: each message may be
// delivered k times, plus as many times as the schedule's faults may make
// a correct consumer see it again (Schedule.Redeliveries: one per fault,
// as each may requeue it once, and one per publish a FaultNackPublishes
// nacks, which a consumer that publishes in confirm mode answers by
// requeueing what it was handling). The default k is 1, as is k below 1;
// a consumer that retries by requeueing, up to a quorum queue's
// x-delivery-limit say, needs more.
func AtMostDeliveries(k int) CheckOption { return func(c *checkConfig) { c.deliveries = k } }

// LintOptions tunes check.Lint, for example to disable a rule. Its
// ConsumerTimeout defaults to the broker's, and its Redeliveries (how
// many make a redelivery loop) to check.Lint's 5 plus the schedule's
// Redeliveries, the redeliveries its faults may cause.
func LintOptions(o check.Options) CheckOption { return func(c *checkConfig) { c.lint = o } }

// Without switches checks off.
func Without(ps ...Property) CheckOption {
	return func(c *checkConfig) {
		for _, p := range ps {
			c.off[p] = true
		}
	}
}

// checkUnderFaults is CheckUnderFaults with rapid's test apart from the
// bubbles' parent, so that its own tests can watch a property fail.
func checkUnderFaults(t *testing.T, tb rapid.TB, run func(context.Context, *Server) error, opts []CheckOption) {
	tb.Helper()
	c := &checkConfig{within: 10 * time.Minute, reruns: 10, deliveries: 1, off: map[Property]bool{}}
	for _, o := range opts {
		o(c)
	}
	if c.schedules == nil {
		c.schedules = Schedules(3, 20)
	}
	c.reruns, c.deliveries = max(c.reruns, 1), max(c.deliveries, 1)
	var probe config
	for _, o := range c.server {
		o(&probe)
	}
	if probe.broker != nil {
		tb.Fatalf("amqptest: CheckUnderFaults starts a fresh broker for every run: WithBroker cannot be one of its ServerOptions")
		return
	}
	h := &history{fails: map[string]int{}, first: map[string]*outcome{}}
	stale := failFiles(tb.Name())
	defer func() {
		if !tb.Failed() {
			if msg := removeStale(stale); msg != "" {
				tb.Logf("%s", msg)
			}
		}
	}()
	rapid.Check(tb, func(rt *rapid.T) {
		sched := c.schedules.Draw(rt, "schedule")
		// One Fatal for every outcome, so that rapid sees one failure
		// site, and a message that depends on the schedule alone, so that
		// it sees the same failure each time the schedule fails.
		if msg := c.attempt(t, tb.Name(), run, sched, h, rt.Logf); msg != "" {
			rt.Fatal(msg)
		}
	})
}

// history is what CheckUnderFaults remembers across rapid's tests.
type history struct {
	tests int                 // rapid's tests so far
	fails map[string]int      // a schedule's failures so far, by its String
	first map[string]*outcome // its first failure
	// unstable: a schedule passed after failing, so outcomes depend on
	// more than the schedule, and every schedule gets the re-runs.
	unstable bool
}

// outcome is one run's: its failure, if it failed, with its report's path
// if one was written; its trace; whether its broker had several nodes.
type outcome struct {
	err     error
	report  string
	trace   []sim.Event
	cluster bool
}

// attempt runs sched, again while it passes if it may fail, and returns
// the property's failure, or "". A schedule may fail if it failed before;
// if it is the first (rapid replays a fail file first, and a test run to
// reproduce a failure names one with -rapid.failfile); and, once a
// schedule has passed after failing, any.
func (c *checkConfig) attempt(t *testing.T, name string, run func(context.Context, *Server) error, sched Schedule, h *history, logf func(string, ...any)) string {
	key := sched.String()
	known := h.fails[key] > 0
	runs := 1
	if known || h.unstable || h.tests == 0 || replaying() {
		runs = c.reruns
	}
	h.tests++
	var passed *outcome // the first run that passed
	for range runs {
		o := c.once(t, name, run, sched)
		if o.err == nil {
			if known {
				h.unstable = true
			}
			if passed == nil {
				passed = o
			}
			continue
		}
		if h.fails[key]++; h.fails[key] == 1 {
			h.first[key] = o
		}
		logf("amqptest: the run failed:\n%v", o.err)
		if o.report != "" {
			logf("amqptest: the run is in %s (diagram: %s)\n%s", o.report, strings.TrimSuffix(o.report, ".txt")+".svg", confirmHint(o.report, o.cluster))
		}
		return "amqptest: the consumer fails under this schedule:\n" + indent(key)
	}
	if !known {
		return ""
	}
	first := h.first[key]
	msg := fmt.Sprintf("amqptest: the schedule failed %s and passed %d re-runs: the consumer's outcome depends on goroutine order\n%s\nits first failure:\n%s",
		times(h.fails[key]), runs, indent(key), indent(first.err.Error()))
	if passed != nil {
		msg += "\n" + firstDifference(first.trace, passed.trace)
	}
	if first.report != "" {
		msg += fmt.Sprintf("\nthe failing run is in %s\n%s", first.report, confirmHint(first.report, first.cluster))
	}
	return msg
}

// replaying reports whether rapid was told to replay a fail file.
func replaying() bool {
	f := flag.Lookup("rapid.failfile")
	return f != nil && f.Value.String() != ""
}

// times is "once", "twice" or "N times".
func times(n int) string {
	switch n {
	case 1:
		return "once"
	case 2:
		return "twice"
	}
	return fmt.Sprintf("%d times", n)
}

func indent(s string) string { return "\t" + strings.ReplaceAll(s, "\n", "\n\t") }

// once runs sched once in a bubble of its own and returns its outcome.
func (c *checkConfig) once(t *testing.T, name string, run func(context.Context, *Server) error, sched Schedule) (o *outcome) {
	o = &outcome{}
	w, end := watchSpin()
	defer end()
	defer func() {
		// A goroutine of the run still blocked when the bubble ends is a
		// deadlock to synctest, which panics.
		if r := recover(); r != nil {
			o.err = errors.Join(o.err, fmt.Errorf("goroutines of the run were still blocked after it ended (%v): the consumer did not stop", r))
		}
	}()
	synctest.Test(t, func(*testing.T) { c.bubble(name, run, sched, w, o) })
	return o
}

// bubble is one run, inside its bubble. A failing run is written as a
// report, into WithFailureReport's directory, $AMQPSIM_REPORT, or the
// system's temporary directory's amqpsim-reports.
func (c *checkConfig) bubble(name string, run func(context.Context, *Server) error, sched Schedule, w *spinWatch, o *outcome) {
	var cfg config
	for _, opt := range c.server {
		opt(&cfg)
	}
	if cfg.simConfig.Clock == nil {
		cfg.simConfig.Clock = time.Now
	}
	srv, err := start(cfg)
	if err != nil {
		o.err = err
		return
	}
	defer srv.Close()
	defer w.inBubble(srv)()
	if o.err = c.exercise(srv, run, sched); o.err == nil {
		o.err = c.check(srv.broker, sched)
	}
	if d := w.spun(); d != "" {
		o.err = errors.Join(errors.New(d), o.err)
	}
	// The broker finishes what the run left it (a dropped connection's
	// close) before its trace is read.
	synctest.Wait()
	o.trace, o.cluster = srv.broker.Trace(), len(srv.broker.Nodes()) > 1
	if o.err == nil {
		return
	}
	dir := cmp.Or(cfg.reportDir, os.Getenv(ReportEnv), filepath.Join(os.TempDir(), "amqpsim-reports"))
	title := fmt.Sprintf("The run of %s under the schedule\n%s\nwhich failed:\n%v", name, sched, o.err)
	path, rerr := srv.WriteReport(dir, name, title)
	if rerr != nil {
		o.err = fmt.Errorf("%w\n(no failure report: %v)", o.err, rerr)
		return
	}
	o.report = path
}

// exercise runs the consumer under sched until the run is done, and
// returns what went wrong.
func (c *checkConfig) exercise(srv *Server, run func(context.Context, *Server) error, sched Schedule) error {
	b := srv.broker
	if c.setup != nil {
		if err := c.setup(srv); err != nil {
			return fmt.Errorf("setup: %w", err)
		}
	}
	later, _, err := srv.armSchedule(sched)
	if err != nil {
		return err
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	// returned ends when run has returned, with runErr set.
	returned, ran := context.WithCancel(context.Background())
	var runErr error
	go func() {
		defer ran()
		defer func() {
			if r := recover(); r != nil {
				runErr = fmt.Errorf("run panicked: %v\n%s", r, debug.Stack())
			}
		}()
		runErr = run(ctx, srv)
	}()
	// finish ends the run: it cancels run's context, and waits for run to
	// return, for at most the bound.
	finish := func() error {
		stop()
		srv.releaseDials()
		select {
		case <-returned.Done():
			return nil
		case <-time.After(c.within):
			return fmt.Errorf("run did not return within %v of the end of its context", c.within)
		}
	}
	waitCtx, cancel := context.WithTimeout(returned, c.within)
	defer cancel()
	done := func(b *sim.Broker) bool { return c.until != nil && c.until(b) }
	for _, f := range later {
		n := uint64(f.AfterDeliveries)
		_ = b.WaitFor(waitCtx, func(b *sim.Broker) bool { return b.Deliveries() >= n || done(b) })
		if b.Deliveries() < n {
			break // done, returned or out of time: the rest never fire
		}
		if err := srv.inject(f); err != nil {
			return errors.Join(err, finish())
		}
	}
	if c.until == nil {
		<-waitCtx.Done()
		if returned.Err() == nil {
			return errors.Join(fmt.Errorf("run did not return within %v; a consumer that runs until its context ends needs Until or Drained", c.within),
				finish())
		}
		return wrapRun(runErr)
	}
	if err := b.WaitFor(waitCtx, c.until); err != nil {
		what := c.untilWhat(b)
		if returned.Err() != nil {
			if runErr != nil {
				return wrapRun(runErr)
			}
			return fmt.Errorf("run returned before %s", what)
		}
		return errors.Join(fmt.Errorf("waited %v for %s; the broker had pushed %d deliveries", c.within, what, b.Deliveries()), finish())
	}
	if err := finish(); err != nil {
		return err
	}
	return wrapRun(runErr)
}

func wrapRun(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("run: %w", err)
}

// check checks the run's trace; it reports every check that fails.
func (c *checkConfig) check(b *sim.Broker, sched Schedule) error {
	trace := b.Trace()
	var errs []error
	fail := func(p Property, err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("check.%v: %w", p, err))
		}
	}
	if !c.off[CheckNoLoss] {
		fail(CheckNoLoss, check.NoLoss(trace))
	}
	if !c.off[CheckMaxUnacked] {
		n := c.maxUnacked
		if n < 1 {
			n = largestPrefetch(trace)
		}
		if n > 0 {
			fail(CheckMaxUnacked, check.MaxUnacked(trace, n))
		}
	}
	if !c.off[CheckAtMostDeliveries] {
		fail(CheckAtMostDeliveries, check.AtMostDeliveries(trace, c.deliveries+sched.Redeliveries()))
	}
	if !c.off[CheckLint] {
		o := c.lint
		if o.ConsumerTimeout == 0 {
			o.ConsumerTimeout = b.Config().ConsumerTimeout
		}
		if o.Redeliveries == 0 {
			o.Redeliveries = defaultRedeliveryLoop + sched.Redeliveries()
		}
		if fs := check.Lint(trace, o); len(fs) > 0 {
			lines := make([]string, len(fs))
			for i, f := range fs {
				lines[i] = f.String()
			}
			fail(CheckLint, errors.New(strings.Join(lines, "\n")))
		}
	}
	return errors.Join(errs...)
}

// defaultRedeliveryLoop is check.Options' default Redeliveries.
const defaultRedeliveryLoop = 5

// largestPrefetch is the largest prefetch count a basic.qos set in trace.
func largestPrefetch(trace []sim.Event) int {
	n := 0
	for _, e := range trace {
		if e.Kind == sim.EventCall && e.Method == protocol.BasicQos {
			n = max(n, e.Count)
		}
	}
	return n
}
