package scenarios

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/amqpsim/amqpsim/sim"
)

// Scenario is a parsed scenario file: directives, steps with their expected
// results, and the comments and blank lines between them, kept so that a
// recorded file differs from the original only in its results.
type Scenario struct {
	Name string // the file name without ".txt"
	Path string // where it was read from, for messages
	// Source is the source directive of the release whose expectations
	// Steps hold: "rabbitmq 3.10.8 2026-11-30", "hand-written 4.2",
	// "hand-written", or "".
	Source string
	Seed   uint64 // the seed directive: sim.Config.Seed for the replay
	// Version is the RabbitMQ profile the expectations in Steps are of,
	// and the one Replay runs: the rabbitmq directive's ("rabbitmq 4.3"),
	// else, in a file recorded on several releases, sim.DefaultVersion's
	// recording if it has one, else the last source directive's release,
	// else sim.DefaultVersion. On gives the expectations of another
	// recorded release.
	Version sim.Version
	// Cluster is the cluster directive: the scenario runs on a cluster of
	// that many nodes (nil: on one node).
	Cluster *ClusterSpec
	// Settings is the config directive: broker settings the scenario was
	// measured with (nil: RabbitMQ's defaults).
	Settings *Settings
	Steps    []*Step
	items    []item // every line in order
	// recordings are the file's "source rabbitmq" and "source
	// hand-written VERSION" directives, in file order: the releases
	// whose answers it holds (Releases).
	recordings []recording
}

// recording is one "source rabbitmq VERSION DATE" or "source
// hand-written VERSION" directive.
type recording struct {
	version sim.Version
	source  string // "rabbitmq 4.0.5 2026-12-01" or "hand-written 4.2"
}

// Step is one operation line and the result lines indented under it.
type Step struct {
	Line   int    // 1-based line number
	Text   string // the line as written, without indentation
	Op     Op
	Expect []string // the expected result lines of the scenario's Version, without indentation
	// byRelease holds every recorded release's result lines, in a file
	// with a source line per release; Expect is Version's.
	byRelease map[sim.Version][]string
}

// item is one line of a file: a comment or blank line (text), a directive,
// or a step.
type item struct {
	text  string
	step  *Step
	dir   string // "source", "seed", "rabbitmq", "cluster" or "config"
	later bool   // a source directive after the first: Format writes them all at the first
}

// ParseError is a syntax or reference error in a scenario file.
type ParseError struct {
	File      string
	Line, Col int
	Msg       string
}

// Error returns "FILE:LINE:COL: message".
func (e *ParseError) Error() string {
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg)
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// Parse reads a scenario. name is used in messages and as the scenario's
// Name (a trailing ".txt" and any directory are dropped). Every error is a
// *ParseError; several are joined with errors.Join.
func Parse(name string, src []byte) (*Scenario, error) {
	s := &Scenario{Path: name, Name: strings.TrimSuffix(path.Base(filepath.ToSlash(name)), ".txt")}
	var errs []error
	fail := func(line, col int, format string, args ...any) {
		if len(errs) < 10 {
			errs = append(errs, &ParseError{File: name, Line: line, Col: col, Msg: fmt.Sprintf(format, args...)})
		}
	}
	names := newNames()
	var last *Step
	explicit := false   // a rabbitmq directive chose the version
	settingsLine := 0   // the config directive's line
	var noProfile error // a source release without a profile, unless explicit
	noProfileLine := 0
	lines := strings.Split(strings.TrimSuffix(string(src), "\n"), "\n")
	if len(src) == 0 {
		lines = nil
	}
	for i, raw := range lines {
		n := i + 1
		raw = strings.TrimSuffix(raw, "\r")
		trimmed := strings.TrimLeft(raw, " \t")
		indent := len(raw) - len(trimmed)
		switch {
		case strings.TrimSpace(raw) == "":
			s.items = append(s.items, item{text: ""})
			last = nil
		case strings.HasPrefix(trimmed, "#"):
			s.items = append(s.items, item{text: raw})
		case indent > 0:
			if last == nil {
				fail(n, 1, "expected a step, a directive or a comment: an indented result line must follow a step")
				continue
			}
			if msg := s.addResult(last, strings.TrimRight(trimmed, " \t")); msg != "" {
				fail(n, indent+1, "%s", msg)
			}
		default:
			text := strings.TrimRight(raw, " \t")
			if d, rest, ok := directive(text); ok {
				if len(s.Steps) > 0 {
					fail(n, 1, "the %s directive must come before the first step", d)
				}
				switch d {
				case "source":
					if rest == "" {
						fail(n, len(text)+2, `expected "source rabbitmq VERSION DATE", "source hand-written" or "source hand-written VERSION"`)
					}
					msg, err := s.addSource(rest)
					if msg != "" {
						fail(n, 8, "%s", msg)
					}
					if err != nil {
						noProfileLine, noProfile = n, err
					}
				case "rabbitmq":
					v, err := sim.ParseVersion(rest)
					if err != nil {
						fail(n, 10, "%v", err)
					}
					s.Version, explicit = v, true
				case "cluster":
					c, msg := parseCluster(rest)
					if msg != "" {
						fail(n, 9, "%s", msg)
					}
					s.Cluster = c
				case "config":
					st, msg := parseSettings(rest)
					if msg != "" {
						fail(n, 8, "%s", msg)
					}
					s.Settings, settingsLine = st, n
				case "seed":
					v, err := strconv.ParseUint(rest, 10, 64)
					if err != nil {
						fail(n, 6, "expected an unsigned integer seed, got %q", rest)
					}
					s.Seed = v
				}
				s.items = append(s.items, item{dir: d, later: d == "source" && s.hasDirective("source")})
				last = nil
				continue
			}
			op, err := parseOp(text)
			if err != nil {
				col := 1
				var ce *colError
				var le *lexError
				switch {
				case errors.As(err, &ce):
					col = ce.col
				case errors.As(err, &le):
					col = le.col
				}
				fail(n, col, "%s", err.Error())
				last = nil
				continue
			}
			if col, msg := names.check(op, text); msg != "" {
				fail(n, col, "%s", msg)
			}
			st := &Step{Line: n, Text: text, Op: op}
			s.Steps = append(s.Steps, st)
			s.items = append(s.items, item{step: st})
			last = st
		}
	}
	s.checkNodes(fail)
	if noProfile != nil && !explicit {
		fail(noProfileLine, 17, "%v", noProfile)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if explicit && len(s.recordings) > 1 {
		return nil, &ParseError{File: name, Line: 1, Col: 1, Msg: "a file recorded on several releases replays each on its own profile: remove the rabbitmq directive"}
	}
	s.chooseVersion(explicit)
	for _, v := range append(s.Releases(), s.Version) {
		if msg := s.Settings.check(v); msg != "" {
			return nil, &ParseError{File: name, Line: settingsLine, Col: 8, Msg: msg}
		}
	}
	return s, nil
}

func directive(text string) (string, string, bool) {
	for _, d := range []string{"source", "seed", "rabbitmq", "cluster", "config"} {
		if text == d || strings.HasPrefix(text, d+" ") || strings.HasPrefix(text, d+"\t") {
			return d, strings.TrimSpace(text[len(d):]), true
		}
	}
	return "", "", false
}

// ParseFile reads and parses one scenario file.
func ParseFile(file string) (*Scenario, error) {
	src, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	return Parse(file, src)
}

// ParseFS reads and parses one scenario file of fsys.
func ParseFS(fsys fs.FS, file string) (*Scenario, error) {
	src, err := fs.ReadFile(fsys, file)
	if err != nil {
		return nil, err
	}
	return Parse(file, src)
}

// Format renders the scenario as a file: comments, blank lines and step
// lines as they were, directives and result lines in canonical form.
func (s *Scenario) Format() []byte {
	var b bytes.Buffer
	for _, it := range s.items {
		switch {
		case it.step != nil:
			b.WriteString(it.step.Text)
			b.WriteByte('\n')
			for _, e := range s.resultLines(it.step) {
				b.WriteString("  ")
				b.WriteString(e)
				b.WriteByte('\n')
			}
		case it.dir == "source":
			switch {
			case it.later:
			case len(s.recordings) > 1:
				for _, r := range s.recordings {
					fmt.Fprintf(&b, "source %s\n", r.source)
				}
			case s.Source != "":
				fmt.Fprintf(&b, "source %s\n", s.Source)
			}
		case it.dir == "seed":
			fmt.Fprintf(&b, "seed %d\n", s.Seed)
		case it.dir == "rabbitmq":
			fmt.Fprintf(&b, "rabbitmq %s\n", s.Version)
		case it.dir == "cluster":
			fmt.Fprintf(&b, "cluster %s\n", s.Cluster)
		case it.dir == "config":
			fmt.Fprintf(&b, "config %s\n", s.Settings)
		default:
			b.WriteString(it.text)
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

// Clone returns a deep copy of the scenario; results can then be replaced
// without touching the original.
func (s *Scenario) Clone() *Scenario {
	c := *s
	c.recordings = slices.Clone(s.recordings)
	if s.Cluster != nil {
		cl := *s.Cluster
		cl.Names = slices.Clone(s.Cluster.Names)
		c.Cluster = &cl
	}
	if s.Settings != nil {
		st := *s.Settings
		c.Settings = &st
	}
	c.Steps = make([]*Step, len(s.Steps))
	c.items = make([]item, len(s.items))
	idx := map[*Step]*Step{}
	for i, st := range s.Steps {
		cp := *st
		cp.Expect = append([]string(nil), st.Expect...)
		if st.byRelease != nil {
			cp.byRelease = make(map[sim.Version][]string, len(st.byRelease))
			for v, l := range st.byRelease {
				cp.byRelease[v] = append([]string(nil), l...)
			}
		}
		c.Steps[i] = &cp
		idx[st] = &cp
	}
	for i, it := range s.items {
		if it.step != nil {
			it.step = idx[it.step]
		}
		c.items[i] = it
	}
	return &c
}

// Unrecorded reports whether the file holds no expectations at all: no
// source directive and no result line under any step, as a scenario
// written and not yet recorded. A replay shows what the simulator
// answers (Result.Timeline, Result.SVG) but has nothing to compare it
// with: record it first (amqpsim record), or write the results by hand.
func (s *Scenario) Unrecorded() bool {
	if s.Source != "" || len(s.recordings) > 0 {
		return false
	}
	for _, st := range s.Steps {
		if len(st.Expect) > 0 {
			return false
		}
	}
	return true
}

// Race reports whether the scenario is in a folder named races: it shows
// a race inside the broker, whose outcome the broker can give either way
// under load, recorded as an idle broker gives it.
func (s *Scenario) Race() bool {
	return path.Base(path.Dir(filepath.ToSlash(s.Path))) == "races"
}

// hasDirective reports whether the file has directive d.
func (s *Scenario) hasDirective(d string) bool {
	for _, it := range s.items {
		if it.dir == d {
			return true
		}
	}
	return false
}

// setSource sets the source directive, adding it after the leading comment
// block when the file has none.
func (s *Scenario) setSource(src string) {
	s.Source = src
	for _, it := range s.items {
		if it.dir == "source" {
			return
		}
	}
	i := 0
	for i < len(s.items) && s.items[i].step == nil && s.items[i].dir == "" && s.items[i].text != "" {
		i++
	}
	s.items = append(s.items[:i], append([]item{{dir: "source"}}, s.items[i:]...)...)
}

// SetSeed sets the seed directive (sim.Config.Seed for Replay), adding it
// after the source directive when the scenario has none.
func (s *Scenario) SetSeed(seed uint64) {
	s.Seed = seed
	s.addDirective("seed")
}

// SetVersion sets the rabbitmq directive: the release whose profile
// replays the scenario (sim.Config.Version), adding it after the source
// and seed directives when the scenario has none. A scenario recorded on
// several releases replays each on its own profile and takes no rabbitmq
// directive: SetVersion refuses it (On picks one of its recordings).
func (s *Scenario) SetVersion(v sim.Version) error {
	if len(s.recordings) > 1 {
		return fmt.Errorf("%s is recorded on several releases, each replayed on its own profile: it takes no rabbitmq directive", s.Path)
	}
	s.Version = v
	s.addDirective("rabbitmq")
	return nil
}

// SetCluster sets the cluster directive: the scenario runs on a cluster
// (sim.Config.Nodes and NodeNames), adding it after the other directives
// when the scenario has none.
func (s *Scenario) SetCluster(c *ClusterSpec) {
	s.Cluster = c
	s.addDirective("cluster")
}

// addDirective adds directive d after the source and seed directives, or
// after the leading comment block, unless the scenario has it.
func (s *Scenario) addDirective(d string) {
	at := 0
	for i, it := range s.items {
		switch it.dir {
		case d:
			return
		case "source", "seed", "rabbitmq", "cluster", "config":
			at = i + 1
		}
	}
	if at == 0 {
		for at < len(s.items) && s.items[at].step == nil && s.items[at].dir == "" && s.items[at].text != "" {
			at++
		}
	}
	s.items = append(s.items[:at], append([]item{{dir: d}}, s.items[at:]...)...)
	for _, it := range s.items[at+1:] {
		if it.step != nil {
			it.step.Line++ // the steps below moved down a line
		}
	}
}

// New builds a scenario from operations, as Go code that generates one
// (for example from a shrunk property-test counterexample) would: one step
// per operation, no results yet. title becomes the leading comment and
// source is the source directive ("hand-written" when empty).
func New(name, title, source string, ops ...Op) *Scenario {
	if source == "" {
		source = "hand-written"
	}
	s := &Scenario{Name: name, Path: name + ".txt", Source: source, Version: sim.DefaultVersion}
	for _, l := range strings.Split(strings.TrimSpace(title), "\n") {
		if l != "" {
			s.items = append(s.items, item{text: "# " + l})
		}
	}
	s.items = append(s.items, item{dir: "source"}, item{text: ""})
	for _, op := range ops {
		st := &Step{Line: len(s.items) + 1, Text: op.String(), Op: op}
		s.Steps = append(s.Steps, st)
		s.items = append(s.items, item{step: st})
	}
	return s
}

// WriteFile writes operations as a new scenario file at path (its name is
// the file's base name), with title as its leading comment and "source
// hand-written": the first half of turning an operation sequence, such as a
// shrunk property-test counterexample, into a regression test. Record the
// file against RabbitMQ (amqpsim record) to give it expectations.
func WriteFile(path, title string, ops ...Op) error {
	name := strings.TrimSuffix(filepath.Base(path), ".txt")
	return os.WriteFile(path, New(name, title, "", ops...).Format(), 0o644)
}
