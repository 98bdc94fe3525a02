package fuzz

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/amqpsim/amqpsim/scenarios"
	"github.com/amqpsim/amqpsim/sim"
)

// Broker is a real broker to record on.
type Broker struct {
	URL string // its AMQP URL
	// Rabbitmqctl is the command line of its rabbitmqctl, for the policy
	// and user steps (scenarios.RecordOptions.Rabbitmqctl).
	Rabbitmqctl string
}

// Config says what a batch runs and where.
type Config struct {
	Seed    uint64 // the first scenario's seed; the others follow
	Count   int    // the number of scenarios
	Options Options
	// Brokers are the single brokers to record on, one per release;
	// Cluster, for cluster scenarios (Options.Nodes > 1), the command line
	// that controls a real cluster (scenarios.RecordOptions.Cluster).
	Brokers []Broker
	Cluster string
	// Parallel is how many scenarios record at once on each broker (4
	// when zero); a cluster records one at a time.
	Parallel int
	// Recordings is how many times in all a scenario that diverges is
	// recorded before it counts as a divergence and not a race inside the
	// broker (3 when zero).
	Recordings int
	// Window is the recorder's quiet window (scenarios.DefaultWindow when
	// zero).
	Window time.Duration
	// Shrink shrinks each divergence to the smallest scenario that still
	// diverges, re-recording every candidate, and Out, when set, is the
	// directory its file goes to, recorded on every broker.
	Shrink bool
	Out    string
	// Keep, when set, is a directory every recording is written to, as
	// "fuzz-SEED-RELEASE.txt", agreed or not: "amqpsim replay DIR" checks
	// the batch again on later code without the brokers.
	Keep string
	// Wire replays a recording through amqp091-go over the in-memory wire
	// (scenarios.ReplayWireWith in a synctest bubble), once for each way
	// the server's reads can cut what the clients write; nil skips those
	// replays.
	Wire func(*scenarios.Scenario, scenarios.Reads) (*scenarios.Result, error)
	// Log receives a line per scenario and broker, and the findings.
	Log io.Writer

	targets []target // set by tests instead of Brokers and Cluster
}

// Report is what a batch found, per release.
type Report struct {
	Releases []*ReleaseReport
	Findings []*Finding
	Elapsed  time.Duration
}

// ReleaseReport counts one broker's scenarios.
type ReleaseReport struct {
	Release     sim.Version
	Broker      string // the broker's version, "3.10.8"
	Scenarios   int    // recorded and replayed
	Steps       int
	Agreed      int // replayed identically, in process and over the wire
	Divergences int // answered differently by the simulator, the same by every recording
	Races       int // answered differently by RabbitMQ's own recordings: set aside
	Slow        int // timed, and every recording too slow to trust (errSlow): set aside
	Errors      int // could not be recorded (the error is in Log)
}

// Finding is a scenario on which the simulator answers differently from
// RabbitMQ, or on which RabbitMQ races.
type Finding struct {
	Seed    uint64
	Release sim.Version
	Race    bool
	// Scenario is the recording (the shrunk one when shrinking), Diff the
	// replay's difference from it, Where "in process" or "over the wire".
	Scenario *scenarios.Scenario
	Diff     string
	Where    string
	// File is where the shrunk, fully recorded file was written.
	File string
	// Raced, for a race, is the first step RabbitMQ answered differently
	// in two recordings, with both answers.
	Raced string
	// Slow, for a scenario too slow to record, says which step was.
	Slow string
}

// diverged reports whether the finding is a divergence, not a race or a
// recording too slow to trust.
func (f *Finding) diverged() bool { return !f.Race && f.Slow == "" }

// Failed reports whether the batch found a divergence or could not
// record a scenario.
func (r *Report) Failed() bool {
	for _, rr := range r.Releases {
		if rr.Divergences > 0 || rr.Errors > 0 {
			return true
		}
	}
	return false
}

// Run generates the batch's scenarios, records each on every broker,
// replays each recording, re-records a divergent one to tell a race from
// a divergence, and shrinks the divergences.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if cfg.Parallel <= 0 {
		cfg.Parallel = 4
	}
	if cfg.Recordings <= 0 {
		cfg.Recordings = 3
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	start := time.Now()
	targets := cfg.targets
	if targets == nil {
		var err error
		if targets, err = connectTargets(cfg); err != nil {
			return nil, err
		}
	}
	rep := &Report{}
	var mu sync.Mutex // guards rep and Log
	logf := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(cfg.Log, format+"\n", args...)
	}
	var wg sync.WaitGroup
	for _, t := range targets {
		rr := &ReleaseReport{Release: t.release, Broker: t.version}
		rep.Releases = append(rep.Releases, rr)
		seeds := make(chan uint64)
		workers := cfg.Parallel
		if t.cluster {
			workers = 1
		}
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for seed := range seeds {
					f, steps, outcome, err := runOne(ctx, cfg, t, seed)
					mu.Lock()
					rr.Scenarios++
					rr.Steps += steps
					switch {
					case err != nil:
						rr.Errors++
					case outcome == agreed:
						rr.Agreed++
					case outcome == race:
						rr.Races++
					case outcome == slow:
						rr.Slow++
					default:
						rr.Divergences++
					}
					if f != nil {
						rep.Findings = append(rep.Findings, f)
					}
					mu.Unlock()
					switch {
					case err != nil:
						logf("seed %d on %s: error: %v", seed, t.release, err)
					default:
						logf("seed %d on %s: %s (%d steps)", seed, t.release, outcome, steps)
					}
				}
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(seeds)
			for i := range cfg.Count {
				select {
				case seeds <- cfg.Seed + uint64(i):
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	wg.Wait()
	slices.SortFunc(rep.Findings, func(a, b *Finding) int {
		if c := strings.Compare(a.Release.String(), b.Release.String()); c != 0 {
			return c
		}
		return int(a.Seed - b.Seed)
	})
	if cfg.Shrink {
		shrinkFindings(ctx, cfg, targets, rep, logf)
	}
	if cfg.Out != "" {
		if err := writeFindings(ctx, cfg, targets, rep, logf); err != nil {
			return rep, err
		}
	}
	rep.Elapsed = time.Since(start)
	return rep, ctx.Err()
}

type outcome string

const (
	agreed     outcome = "agreed"
	race       outcome = "race in RabbitMQ: set aside"
	divergence outcome = "DIVERGES"
	slow       outcome = "too slow: the broker's clock ran past the generator's bounds in every recording"
)

// target is one broker, or the cluster, with its release and how a
// scenario is recorded on it (scenarios.Record; tests record on a
// simulator instead).
type target struct {
	release sim.Version
	version string // "4.3.6"
	cluster bool
	record  func(*scenarios.Scenario) (*scenarios.Scenario, *scenarios.Result, error)
}

// recordOn returns a target's record function for real brokers.
func recordOn(o scenarios.RecordOptions) func(*scenarios.Scenario) (*scenarios.Scenario, *scenarios.Result, error) {
	return func(s *scenarios.Scenario) (*scenarios.Scenario, *scenarios.Result, error) {
		return scenarios.Record(s, o)
	}
}

// connectTargets asks each broker its release.
func connectTargets(cfg Config) ([]target, error) {
	if cfg.Options.Nodes > 1 {
		if cfg.Cluster == "" {
			return nil, errors.New("fuzz: cluster scenarios need a cluster to record on (Config.Cluster)")
		}
		ro := scenarios.RecordOptions{Cluster: cfg.Cluster, Window: cfg.Window}
		return []target{{release: sim.V4_3, version: "cluster", record: recordOn(ro), cluster: true}}, nil
	}
	if len(cfg.Brokers) == 0 {
		return nil, errors.New("fuzz: no broker to record on")
	}
	var out []target
	for _, b := range cfg.Brokers {
		ro := scenarios.RecordOptions{URL: b.URL, Rabbitmqctl: b.Rabbitmqctl, Window: cfg.Window}
		v, err := scenarios.BrokerVersion(b.URL)
		if err != nil {
			return nil, err
		}
		rel, err := sim.ParseVersion(v)
		if err != nil {
			return nil, fmt.Errorf("fuzz: the broker at %s is RabbitMQ %s, which the simulator has no profile of", b.URL, v)
		}
		out = append(out, target{release: rel, version: v, record: recordOn(ro)})
	}
	return out, nil
}

// runOne records one scenario on one target and replays it.
func runOne(ctx context.Context, cfg Config, t target, seed uint64) (*Finding, int, outcome, error) {
	s := Generate(seed, cfg.Options)
	rec, err := record(ctx, s, t)
	if errors.Is(err, errSlow) {
		return &Finding{Seed: seed, Release: t.release, Slow: err.Error()}, len(s.Steps), slow, nil
	}
	if err != nil {
		return nil, len(s.Steps), "", err
	}
	if err := keep(cfg, rec, seed, t); err != nil {
		return nil, len(s.Steps), "", err
	}
	diff, where, err := replay(cfg, rec)
	if err != nil {
		return nil, len(s.Steps), "", err
	}
	if diff == "" {
		return nil, len(s.Steps), agreed, nil
	}
	f := &Finding{Seed: seed, Release: t.release, Scenario: rec, Diff: diff, Where: where}
	if raced, err := races(ctx, cfg, t, s, rec); err != nil {
		return nil, len(s.Steps), "", err
	} else if raced != "" {
		f.Race, f.Raced = true, raced
		return f, len(s.Steps), race, nil
	}
	return f, len(s.Steps), divergence, nil
}

// keep writes a recording to cfg.Keep, when set.
func keep(cfg Config, rec *scenarios.Scenario, seed uint64, t target) error {
	if cfg.Keep == "" {
		return nil
	}
	if err := os.MkdirAll(cfg.Keep, 0o755); err != nil {
		return err
	}
	name := fmt.Sprintf("fuzz-%d-%s.txt", seed, t.release)
	if t.cluster {
		name = fmt.Sprintf("fuzz-%d-cluster.txt", seed)
	}
	return os.WriteFile(filepath.Join(cfg.Keep, name), rec.Format(), 0o644)
}

// record records s on a target.
func record(ctx context.Context, s *scenarios.Scenario, t target) (*scenarios.Scenario, error) {
	var slowest string
	for range slowAttempts {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		rec, res, err := t.record(s)
		if err != nil {
			return nil, err
		}
		i := slowStep(s, res)
		if i < 0 {
			return rec, nil
		}
		slowest = fmt.Sprintf("line %d (%s) took %v", s.Steps[i].Line, s.Steps[i].Text, res.Steps[i].Took.Round(time.Millisecond))
	}
	return nil, fmt.Errorf("%w; last: %s", errSlow, slowest)
}

// slowAttempts is how many times a timed scenario is recorded before the
// broker counts as too slow for it.
const slowAttempts = 3

// errSlow is a timed scenario whose every recording had a step that took
// longer than the generator allowed for: the broker's clock may have
// passed a deadline the simulator's did not, so its answers prove nothing.
var errSlow = errors.New("the broker was too slow for the scenario's timers")

// slowStep returns the first step of a timed scenario's recording that
// took longer than the generator's bound for it (its advance, if it is
// one, and the recorder's time for a step of its kind), or -1.
func slowStep(s *scenarios.Scenario, res *scenarios.Result) int {
	if res == nil || !timed(s) {
		return -1
	}
	for i, st := range res.Steps {
		bound := watchedStepDrift
		if i < len(s.Steps) {
			op := s.Steps[i].Op
			if adminStep(op) {
				continue // no timer runs during one
			}
			bound = stepBound(op)
			if a, ok := op.(scenarios.Advance); ok {
				bound += a.D
			}
		}
		if st.Took > bound {
			return i
		}
	}
	return -1
}

// timed reports whether a scenario starts timers the broker's clock runs
// (a message TTL, a queue expiry, directly or by a policy) or looks at a
// stream's count, which a 5 s tick refreshes.
func timed(s *scenarios.Scenario) bool { return timedOps(opsOf(s)) }

// timedOps is timed of a scenario's operations.
func timedOps(ops []scenarios.Op) bool {
	for _, op := range ops {
		switch o := op.(type) {
		case scenarios.DeclareQueue:
			for _, k := range []string{"x-message-ttl", "x-expires"} {
				if _, ok := o.Args[k]; ok {
					return true
				}
			}
			if o.Args["x-queue-type"] == "stream" {
				return true
			}
		case scenarios.Publish:
			if o.Props.Expiration != "" {
				return true
			}
		case scenarios.SetPolicy:
			if o.Definition["message-ttl"] != nil || o.Definition["expires"] != nil {
				return true
			}
		case scenarios.SetOperatorPolicy:
			if o.Definition["message-ttl"] != nil || o.Definition["expires"] != nil {
				return true
			}
		}
	}
	return false
}

// replay replays a recording on its release's profile in process, then
// over the wire, and returns the first difference.
func replay(cfg Config, rec *scenarios.Scenario) (diff, where string, err error) {
	res, err := scenarios.Replay(rec)
	if err != nil {
		return "", "", err
	}
	if d := res.Diff(); d != "" {
		return d, "in process", nil
	}
	if cfg.Wire == nil {
		return "", "", nil
	}
	for _, reads := range []scenarios.Reads{scenarios.ReadsAsWritten, scenarios.ReadsSplit, scenarios.ReadsCoalesced} {
		res, err = cfg.Wire(rec, reads)
		if err != nil {
			return "", "", err
		}
		if d := res.Diff(); d != "" {
			return d, "over the wire, reads " + reads.String(), nil
		}
	}
	return "", "", nil
}

// races records s again until it has Recordings recordings, and returns
// where RabbitMQ answered one of them differently from first ("" if it
// never did).
func races(ctx context.Context, cfg Config, t target, s, first *scenarios.Scenario) (string, error) {
	for range cfg.Recordings - 1 {
		again, err := record(ctx, s, t)
		if errors.Is(err, errSlow) {
			continue
		}
		if err != nil {
			return "", err
		}
		if d := answerDiff(first, again); d != "" {
			return d, nil
		}
	}
	return "", nil
}

// answerDiff returns the first step two recordings of a scenario answer
// differently, with both answers, or "".
func answerDiff(a, b *scenarios.Scenario) string {
	for i := range a.Steps {
		if i >= len(b.Steps) {
			break
		}
		if !slices.Equal(a.Steps[i].Expect, b.Steps[i].Expect) {
			late := ""
			if i+1 < len(a.Steps) && i+1 < len(b.Steps) && sameLines(
				append(slices.Clone(a.Steps[i].Expect), a.Steps[i+1].Expect...),
				append(slices.Clone(b.Steps[i].Expect), b.Steps[i+1].Expect...)) {
				late = " (the same answers, one of them under the next step: the broker answered after the quiet window)"
			}
			return fmt.Sprintf("line %d: %s%s\n  one recording:\n    %s\n  another:\n    %s", a.Steps[i].Line, a.Steps[i].Text, late,
				strings.Join(a.Steps[i].Expect, "\n    "), strings.Join(b.Steps[i].Expect, "\n    "))
		}
	}
	return ""
}

// sameLines reports whether two lists hold the same lines, in any order.
func sameLines(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// shrinkFindings shrinks each divergent seed once, on the first release
// it diverged on, two seeds side by side,
// and gives its other releases' findings the shrunk scenario too.
func shrinkFindings(ctx context.Context, cfg Config, targets []target, rep *Report, logf func(string, ...any)) {
	first := map[uint64]*Finding{}
	var seeds []uint64
	for _, f := range rep.Findings {
		if f.diverged() && first[f.Seed] == nil {
			first[f.Seed] = f
			seeds = append(seeds, f.Seed)
		}
	}
	sem := make(chan struct{}, 2) // each tries Parallel candidates at once
	var wg sync.WaitGroup
	for _, seed := range seeds {
		f := first[seed]
		var t target
		for _, tt := range targets {
			if tt.release == f.Release {
				t = tt
			}
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			small, err := shrink(ctx, cfg, t, Generate(seed, cfg.Options))
			if err != nil || small == nil {
				logf("seed %d: not shrunk: %v", seed, err)
				return
			}
			f.Scenario, f.Diff, f.Where = small.rec, small.diff, small.where
			logf("seed %d: shrunk to %d steps on %s", seed, len(small.rec.Steps), f.Release)
		}()
	}
	wg.Wait()
	for _, f := range rep.Findings {
		if g := first[f.Seed]; g != nil && g != f && f.diverged() {
			f.Scenario = g.Scenario
		}
	}
}

// writeFindings records each divergence's scenario on every broker into
// one file, holding every release's answers, in Out.
func writeFindings(ctx context.Context, cfg Config, targets []target, rep *Report, logf func(string, ...any)) error {
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		return err
	}
	done := map[uint64]bool{}
	for _, f := range rep.Findings {
		if !f.diverged() || done[f.Seed] {
			continue
		}
		done[f.Seed] = true
		s := unrecorded(f.Scenario)
		for _, t := range targets {
			rec, err := record(ctx, s, t)
			if err != nil {
				logf("seed %d: recording the finding on %s: %v", f.Seed, t.release, err)
				continue
			}
			s = rec
		}
		path := filepath.Join(cfg.Out, fmt.Sprintf("fuzz-%d.txt", f.Seed))
		if err := os.WriteFile(path, s.Format(), 0o644); err != nil {
			return err
		}
		f.File = path
		logf("seed %d: wrote %s", f.Seed, path)
	}
	return nil
}
