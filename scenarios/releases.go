package scenarios

import (
	"fmt"
	"slices"
	"strings"

	"github.com/amqpsim/amqpsim/sim"
)

// A file recorded on several releases holds one source directive per
// release and, under each step, the union of their results: a line every
// release gave is written as it is, a line only some gave starts with the
// releases that gave it in brackets,
//
//	source rabbitmq 3.10.8 2026-12-01
//	source rabbitmq 4.3.6 2026-12-01
//	...
//	consume ch1 s tag=A
//	  [3.10] ch1 <- channel.close 406 (basic.consume): PRECONDITION_FAILED - consumer prefetch count is not set for 's'
//	  [4.3] ch1 <- channel.close 406 (basic.consume): PRECONDITION_FAILED - consumer prefetch count is not set for stream queue 's' in vhost '/'
//
// so that where the releases agree the file says so once, and where they
// differ the difference is read off the recording. A release's results
// are the lines without brackets and those that name it, in file order.
//
// A hand-written file can hold several releases' answers the same way,
// one "source hand-written VERSION" line each (any release with a
// profile, such as 4.2, which no broker here runs): the answers that
// the rabbitmq-server source its comment cites gives on each side of a
// change. They replay like recordings, each on its own profile; the
// upgrade check does not read them off as it reads recordings, and a
// broker's recording of a release replaces its hand-written answers.

// addSource reads a source directive's value into the scenario. A release
// without a profile is no error yet (noProfile): a rabbitmq directive can
// name the profile that replays it.
func (s *Scenario) addSource(rest string) (msg string, noProfile error) {
	f := strings.Fields(rest)
	if len(f) == 0 {
		return `expected "source rabbitmq VERSION DATE", "source hand-written" or "source hand-written VERSION"`, nil
	}
	perRelease := (f[0] == "rabbitmq" || f[0] == "hand-written") && len(f) >= 2
	if !perRelease {
		if len(s.recordings) > 0 || s.Source != "" {
			return fmt.Sprintf("source %q: a file has one source, or one source line per release", rest), nil
		}
		s.Source = rest
		return "", nil
	}
	if s.Source != "" && len(s.recordings) == 0 {
		return fmt.Sprintf("source %q: a file has one source, or one source line per release", rest), nil
	}
	v, err := sim.ParseVersion(f[1])
	if f[0] == "hand-written" {
		switch {
		case len(f) > 2:
			return fmt.Sprintf("source %q: expected \"source hand-written VERSION\", such as 4.2", rest), nil
		case err != nil:
			return fmt.Sprintf("source %q: %v", rest, err), nil
		}
	}
	if err != nil {
		s.Source = rest
		return "", fmt.Errorf("%v; add a line \"rabbitmq VERSION\" to replay it on one of those", err)
	}
	if slices.ContainsFunc(s.recordings, func(r recording) bool { return r.version == v }) {
		return fmt.Sprintf("a second recording of RabbitMQ %s: keep one source line per release series", v), nil
	}
	s.recordings = append(s.recordings, recording{version: v, source: rest})
	return "", nil
}

// addResult adds a result line to step st, for the releases its brackets
// name or, without brackets, for every release.
func (s *Scenario) addResult(st *Step, line string) string {
	releases, text, tagged := cutReleases(line)
	if len(s.recordings) == 0 {
		if tagged {
			return "a result line for some releases needs their source rabbitmq lines"
		}
		st.Expect = append(st.Expect, line)
		return ""
	}
	var only []sim.Version
	if tagged {
		for _, name := range releases {
			v, err := sim.ParseVersion(name)
			if err != nil || !slices.ContainsFunc(s.recordings, func(r recording) bool { return r.version == v }) {
				return fmt.Sprintf("[%s]: the file has no recording of RabbitMQ %s (a source rabbitmq line)", strings.Join(releases, " "), name)
			}
			only = append(only, v)
		}
	}
	if st.byRelease == nil {
		st.byRelease = map[sim.Version][]string{}
	}
	for _, r := range s.recordings {
		if !tagged || slices.Contains(only, r.version) {
			st.byRelease[r.version] = append(st.byRelease[r.version], text)
		}
	}
	return ""
}

// cutReleases splits "[4.0 4.3] text" into its releases and its text.
func cutReleases(line string) (releases []string, text string, ok bool) {
	if !strings.HasPrefix(line, "[") {
		return nil, line, false
	}
	inside, rest, found := strings.Cut(line[1:], "] ")
	if !found || strings.TrimSpace(inside) == "" {
		return nil, line, false
	}
	return strings.Fields(inside), rest, true
}

// chooseVersion settles which release's expectations Steps hold: in a
// file recorded on several releases sim.DefaultVersion's, else the last
// one's; the rabbitmq directive, when there is one, names the profile
// that replays the file's one recording.
func (s *Scenario) chooseVersion(explicit bool) {
	if len(s.recordings) == 0 {
		if s.Version == (sim.Version{}) {
			s.Version = sim.DefaultVersion
		}
		return
	}
	v := s.recordings[len(s.recordings)-1].version
	if slices.ContainsFunc(s.recordings, func(r recording) bool { return r.version == sim.DefaultVersion }) {
		v = sim.DefaultVersion
	}
	if !explicit {
		s.Version = v
	}
	s.view(v)
}

// view points Source and every step's Expect at release v's recording,
// when the file has one.
func (s *Scenario) view(v sim.Version) {
	for _, r := range s.recordings {
		if r.version == v {
			s.Source = r.source
		}
	}
	if len(s.recordings) == 0 {
		return
	}
	for _, st := range s.Steps {
		st.Expect = slices.Clone(st.byRelease[v])
	}
}

// Releases returns the releases the file holds answers of (its source
// rabbitmq and source hand-written VERSION directives), in file order;
// none for a file with one source of another kind ("source
// hand-written").
func (s *Scenario) Releases() []sim.Version {
	out := make([]sim.Version, len(s.recordings))
	for i, r := range s.recordings {
		out[i] = r.version
	}
	return out
}

// Recorded returns the releases whose answers a broker gave (the source
// rabbitmq directives), in file order: Releases without the hand-written
// ones.
func (s *Scenario) Recorded() []sim.Version {
	var out []sim.Version
	for _, r := range s.recordings {
		if !r.handWritten() {
			out = append(out, r.version)
		}
	}
	return out
}

// handWritten reports whether the answers are written by hand ("source
// hand-written 4.2"), not a broker's.
func (r recording) handWritten() bool { return strings.HasPrefix(r.source, "hand-written") }

// On returns a copy of the scenario whose expectations (Steps' Expect),
// Source and Version are those of release v's recording, and false when
// the file holds no recording of v. Replay, Record and the upgrade check
// take it like any scenario; Format still writes every release.
func (s *Scenario) On(v sim.Version) (*Scenario, bool) {
	if !slices.Contains(s.Releases(), v) {
		return nil, false
	}
	c := s.Clone()
	c.Version = v
	c.view(v)
	return c, true
}

// addRecording makes the steps' Expect the answers of the release source
// names ("rabbitmq 4.0.5 2026-12-01"), replacing that release's earlier
// recording or adding it beside the others.
func (s *Scenario) addRecording(source string) {
	f := strings.Fields(source)
	v, err := sim.ParseVersion(f[1])
	if err != nil {
		// A broker of a series without a profile: the file holds its
		// answers alone, as before there were releases.
		s.recordings = nil
		for _, st := range s.Steps {
			st.byRelease = nil
		}
		s.setSource(source)
		return
	}
	if s.Source != "" && len(s.recordings) == 0 {
		s.Source = "" // hand-written expectations give way to a broker's
	}
	i := slices.IndexFunc(s.recordings, func(r recording) bool { return r.version == v })
	if i < 0 {
		s.recordings = append(s.recordings, recording{version: v})
		i = len(s.recordings) - 1
	}
	s.recordings[i].source = source
	for _, st := range s.Steps {
		if st.byRelease == nil {
			st.byRelease = map[sim.Version][]string{}
		}
		st.byRelease[v] = slices.Clone(st.Expect)
	}
	s.Version = v
	s.setSource(source)
}

// resultLines are the lines Format writes under st: its Expect, or, in a
// file recorded on several releases, their union with each line that not
// every release gave prefixed by the releases that gave it.
func (s *Scenario) resultLines(st *Step) []string {
	if len(s.recordings) < 2 {
		return st.Expect
	}
	seqs := make([][]string, len(s.recordings))
	for i, r := range s.recordings {
		seqs[i] = st.byRelease[r.version]
	}
	var out []string
	for _, l := range mergeResults(seqs) {
		if len(l.in) == len(seqs) {
			out = append(out, l.text)
			continue
		}
		names := make([]string, len(l.in))
		for j, i := range l.in {
			names[j] = s.recordings[i].version.String()
		}
		out = append(out, "["+strings.Join(names, " ")+"] "+l.text)
	}
	return out
}

// mergedLine is a result line and the indexes of the sequences that have it.
type mergedLine struct {
	text string
	in   []int
}

// mergeResults merges sequences of lines into one in which every
// sequence's lines appear in its order, a line shared by sequences once:
// each sequence is merged into the union of those before it along their
// longest common subsequence, so keeping the lines of one sequence gives
// that sequence back.
func mergeResults(seqs [][]string) []mergedLine {
	var merged []mergedLine
	for k, seq := range seqs {
		// lcs[i][j]: the longest common subsequence of merged[i:] and seq[j:].
		lcs := make([][]int, len(merged)+1)
		for i := range lcs {
			lcs[i] = make([]int, len(seq)+1)
		}
		for i := len(merged) - 1; i >= 0; i-- {
			for j := len(seq) - 1; j >= 0; j-- {
				if merged[i].text == seq[j] {
					lcs[i][j] = lcs[i+1][j+1] + 1
				} else {
					lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
				}
			}
		}
		var next []mergedLine
		i, j := 0, 0
		for i < len(merged) || j < len(seq) {
			switch {
			case i < len(merged) && j < len(seq) && merged[i].text == seq[j] && lcs[i][j] == lcs[i+1][j+1]+1:
				next = append(next, mergedLine{merged[i].text, append(slices.Clone(merged[i].in), k)})
				i, j = i+1, j+1
			case i < len(merged) && (j == len(seq) || lcs[i+1][j] >= lcs[i][j+1]):
				next = append(next, merged[i])
				i++
			default:
				next = append(next, mergedLine{seq[j], []int{k}})
				j++
			}
		}
		merged = next
	}
	return merged
}
