package scenarios

import (
	"embed"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/amqpsim/amqpsim/sim"
)

// Replay runs a scenario on a fresh simulator (seeded with the scenario's
// seed directive) of the profile its expectations are of (s.Version). The
// result's Diff compares it with the expectations.
func Replay(s *Scenario) (*Result, error) { return ReplayOn(s, s.Version) }

// ReplayOn is Replay on the simulator of another RabbitMQ release, with
// the deprecated features permit names permitted (sim.Config.Permit): how
// the results differ from the expectations is what that release would
// answer differently (see Compare for the upgrade check).
func ReplayOn(s *Scenario, v sim.Version, permit ...string) (*Result, error) {
	return replayWith(s, sim.Config{Version: v, Permit: permit})
}

// replayWith replays s on a simulator configured by cfg, seeded and set
// up by s's directives.
func replayWith(s *Scenario, cfg sim.Config) (*Result, error) {
	cfg.Seed = s.Seed
	s.Cluster.config(&cfg)
	s.Settings.config(&cfg)
	b, err := sim.Open(cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Path, err)
	}
	d := newSimDriver(b, cfg)
	res, err := newRunner(d, s).run()
	if res != nil {
		res.Trace = d.b.Trace()
	}
	return res, err
}

// wireWatchdog bounds, in the bubble's fake time, how long a wire replay may
// wait for the server. The fake clock moves only when every goroutine is
// blocked, so it moves only when a reply will never come (heartbeats keep
// such a bubble ticking instead of deadlocking).
const wireWatchdog = time.Hour

// ReplayWire runs a scenario through amqp091-go, the client real code uses,
// on a fresh simulator over the in-memory wire (package wire), and returns
// what the client observed; its Diff compares it with the expectations, as
// for Replay. It must be called inside a testing/synctest bubble
// (synctest.Test): after every step it waits with synctest.Wait until the
// server and the client are idle, an exact barrier, instead of the quiet
// window that Record needs against a real broker. advance moves the
// broker's virtual clock.
func ReplayWire(s *Scenario) (*Result, error) { return ReplayWireWith(s, ReadsAsWritten) }

// ReplayWireWith is ReplayWire with the server's reads cut as reads says:
// the answers must be the same, as RabbitMQ's are whatever its reads
// bring.
func ReplayWireWith(s *Scenario, reads Reads) (*Result, error) {
	d, err := newWireDriver(s, reads)
	if err != nil {
		return nil, err
	}
	var hung atomic.Bool
	watchdog := time.AfterFunc(wireWatchdog, func() {
		hung.Store(true)
		d.sim.cut()
	})
	defer watchdog.Stop()
	res, err := newRunner(d, s).run()
	if hung.Load() {
		err = fmt.Errorf("%s: no answer from the server within %v of fake time; the connections were cut: %v", s.Path, wireWatchdog, err)
	}
	return res, err
}

// RecordOptions say where and how to record.
type RecordOptions struct {
	URL string // the broker, e.g. amqp://guest:guest@127.0.0.1:5672/
	// Rabbitmqctl is the command line that runs the broker's rabbitmqctl
	// for the steps AMQP cannot take (policies, users, alarms), such as
	// "scripts/rabbitmq ctl 4.3"; $RABBITMQCTL when empty, else
	// rabbitmqctl from the PATH.
	Rabbitmqctl string
	// Window is how long the broker must stay silent after a step before
	// its results are read; DefaultWindow when zero.
	Window time.Duration
	// Date goes into the source directive; today when zero.
	Date time.Time
	// Cluster, for a cluster scenario (one with a cluster directive), is
	// the command line that controls the real cluster to record on, such
	// as "scripts/rabbitmq cluster" (clusterctl.go says what it must
	// take); its status names the nodes' URLs, and URL is not used.
	Cluster string
	// Pending is how long a recording on a cluster waits for a method's
	// answer before it counts as pending; DefaultPending when zero.
	Pending time.Duration
}

// Record runs a scenario against a real broker and returns the scenario
// with the broker's answers as its expectations and a source directive
// naming the broker's version and the date, together with the run's
// result. In a file that holds other releases' recordings the answers
// become the broker's release's, beside theirs, and the result compares
// with that release's expectations (none when the file has no recording
// of it yet). Queue and exchange names get a random per-run prefix that the
// results do not show; everything the run declared is deleted afterwards.
func Record(s *Scenario, o RecordOptions) (*Scenario, *Result, error) {
	var cluster *clusterCtl
	switch {
	case s.Cluster != nil && o.Cluster == "":
		return nil, nil, fmt.Errorf("%s runs on a cluster of %d nodes: record it on one (amqpsim record --cluster CMD)", s.Path, s.Cluster.Nodes)
	case s.Cluster == nil && o.Cluster != "":
		return nil, nil, fmt.Errorf("%s has no cluster directive: record it on a single broker (amqpsim record --url URL)", s.Path)
	case s.Settings != nil:
		return nil, nil, fmt.Errorf("%s sets broker settings (config %s), which every recording on the broker shares: "+
			"the recorder does not change them; measure the file on a broker of its own and write its results by hand", s.Path, s.Settings)
	case s.Cluster != nil:
		var err error
		if cluster, err = newClusterCtl(o.Cluster, o.Pending); err != nil {
			return nil, nil, err
		}
		if s, err = onCluster(s, cluster); err != nil {
			return nil, nil, err
		}
		o.URL = cluster.urls[0]
	}
	d, err := newAMQPDriver(o.URL, o.Rabbitmqctl, s.Name, o.Window, cluster)
	if err != nil {
		return nil, nil, err
	}
	if v, err := sim.ParseVersion(d.version); err == nil && !s.hasDirective("rabbitmq") {
		// Compare with, and replace, this release's recording: a file
		// recorded on other releases only starts one for it.
		if view, ok := s.On(v); ok {
			s = view
		} else {
			s = s.Clone()
			s.Version = v
			if len(s.recordings) > 0 {
				for _, st := range s.Steps {
					st.Expect = nil
				}
			}
		}
	}
	if s.hasDirective("rabbitmq") {
		// The expectations would be the broker's, the replay another
		// release's.
		if v, err := sim.ParseVersion(d.version); err != nil || v != s.Version {
			_ = d.finish()
			return nil, nil, fmt.Errorf("%s: its rabbitmq line says %s, but the broker is RabbitMQ %s: record it on a %s broker, or remove the line",
				s.Path, s.Version, d.version, s.Version)
		}
	}
	res, err := newRunner(d, s).run()
	res.Broker = d.version
	if err != nil {
		return nil, res, err
	}
	date := o.Date
	if date.IsZero() {
		date = time.Now()
	}
	return res.Recorded(fmt.Sprintf("rabbitmq %s %s", d.version, date.Format("2006-01-02"))), res, nil
}

// Load parses a scenario file, or every .txt file under a directory in
// lexical order.
func Load(path string) ([]*Scenario, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		s, err := ParseFile(path)
		if err != nil {
			return nil, err
		}
		return []*Scenario{s}, nil
	}
	dir := filepath.Clean(path)
	out, err := LoadFS(os.DirFS(dir), ".")
	for _, s := range out {
		s.Path = filepath.Join(dir, filepath.FromSlash(s.Path))
	}
	return out, err
}

// LoadFS parses every .txt file under root in fsys, in lexical order.
func LoadFS(fsys fs.FS, root string) ([]*Scenario, error) {
	var files []string
	err := fs.WalkDir(fsys, root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !e.IsDir() && strings.HasSuffix(p, ".txt") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var out []*Scenario
	var errs []string
	for _, f := range files {
		s, err := ParseFS(fsys, f)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		out = append(out, s)
	}
	if len(errs) > 0 {
		return out, fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return out, nil
}

//go:embed library/*.txt library/races/*.txt
var library embed.FS

// Library returns the built-in scenarios, each recorded on RabbitMQ
// 3.10.8, 4.0.5 and 4.3.6: the files of this package's library directory.
// Those in its races folder show a race inside the broker, with the
// outcome an idle broker gives and the simulator follows (Race).
func Library() fs.FS { return embedded(library, "library") }

// embedded returns the embedded directory dir of f.
func embedded(f embed.FS, dir string) fs.FS {
	sub, err := fs.Sub(f, dir)
	if err != nil {
		panic(err) // the embedded directory always exists
	}
	return sub
}

// recordURL and recordCluster are the -scenarios.record and
// -scenarios.cluster flags, registered only in test binaries so that
// programs importing the package keep their flag set.
var recordURL, recordCluster = new(string), new(string)

func init() {
	if testing.Testing() {
		flag.StringVar(recordURL, "scenarios.record", "",
			"record the scenarios that scenarios.Run runs against this AMQP URL and rewrite their files, instead of replaying them")
		flag.StringVar(recordCluster, "scenarios.cluster", "",
			"record the cluster scenarios that scenarios.Run runs on the cluster this command line controls (\"scripts/rabbitmq cluster\") and rewrite their files")
	}
}

// Run replays a scenario file, or every scenario under a directory, one
// subtest per scenario, and reports each step whose results differ from the
// file with a diff. Each scenario runs twice: on the simulator in process
// (Check), and through amqp091-go over the in-memory wire (CheckWire).
//
// Run with -scenarios.record=URL (go test -run TestX -scenarios.record=amqp://guest:guest@127.0.0.1:5672/)
// to record the files against that broker instead: each file is rewritten
// with the broker's answers, comments and steps kept.
func Run(t *testing.T, path string) {
	t.Helper()
	RunWith(t, path, RunOptions{RecordURL: *recordURL, RecordCluster: *recordCluster})
}

// RunOptions configure RunWith.
type RunOptions struct {
	// RecordURL, when set, records the files against this broker and
	// rewrites them instead of replaying them.
	RecordURL string
	// RecordCluster, when set, records the cluster scenarios (those with
	// a cluster directive) on the cluster this command line controls
	// (RecordOptions.Cluster) instead of replaying them.
	RecordCluster string
	// Window is the quiet window for recording (DefaultWindow when zero).
	Window time.Duration
}

// record returns the options to record s with, if the run records it.
func (o RunOptions) record(s *Scenario) (RecordOptions, bool) {
	if s.Cluster != nil {
		return RecordOptions{Cluster: o.RecordCluster, Window: o.Window}, o.RecordCluster != ""
	}
	return RecordOptions{URL: o.RecordURL, Window: o.Window}, o.RecordURL != ""
}

// RunWith is Run with options.
func RunWith(t *testing.T, path string, o RunOptions) {
	t.Helper()
	list, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) == 0 {
		t.Fatalf("no scenarios (*.txt) in %s", path)
	}
	for _, s := range list {
		t.Run(s.Name, func(t *testing.T) {
			if ro, ok := o.record(s); ok {
				rec, _, err := Record(s, ro)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(s.Path, rec.Format(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			Check(t, s)
			CheckWire(t, s)
		})
	}
}

// Check replays one scenario on the simulator and reports a divergence from
// its expectations as a test error: a file recorded on several releases
// replays once per release, each on its own profile (Scenario.On).
func Check(t testing.TB, s *Scenario) {
	t.Helper()
	for _, v := range views(s) {
		res, err := Replay(v)
		if err != nil {
			t.Fatal(err)
		}
		if d := res.Diff(); d != "" {
			t.Errorf("the simulator of %s diverges from %s:\n%s", v.Version, s.Path, d)
		}
	}
}

// CheckWire replays one scenario through amqp091-go on the simulator over
// the in-memory wire (ReplayWire, in a synctest bubble of its own) and
// reports a divergence from its expectations as a test error, once per
// recorded release as Check does. t must not be in a bubble already.
//
// The divergence is reported outside the bubble: synctest.Test ends the
// test when its function has failed, which would skip the releases after
// the first that diverges.
func CheckWire(t *testing.T, s *Scenario) {
	t.Helper()
	for _, v := range views(s) {
		var d string
		synctest.Test(t, func(t *testing.T) {
			res, err := ReplayWire(v)
			if err != nil {
				t.Fatal(err)
			}
			d = res.Diff()
		})
		if d != "" {
			t.Errorf("amqp091-go over the wire, on the simulator of %s, diverges from %s:\n%s", v.Version, s.Path, d)
		}
	}
}

// views returns the scenario once per release it is recorded on (itself
// when it holds at most one recording).
func views(s *Scenario) []*Scenario {
	if len(s.recordings) < 2 {
		return []*Scenario{s}
	}
	out := make([]*Scenario, 0, len(s.recordings))
	for _, r := range s.recordings {
		v, _ := s.On(r.version)
		out = append(out, v)
	}
	return out
}
