package scenarios

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/amqpsim/amqpsim/sim"
)

// Result is what one run of a scenario observed: the result lines of every
// step, and the history the timeline and the diagram are drawn from.
type Result struct {
	Scenario  *Scenario
	Got       [][]string // per step, the result lines
	Steps     []StepInfo
	Consumers []*Consumer
	Holdings  []*Holding
	Queues    []string      // the queues declared, in order
	End       time.Duration // the clock when the last step ran
	// Trace is the simulator's trace of the run (Replay only).
	Trace []sim.Event
	// Broker is the version of the broker a recording ran on ("4.3.6";
	// Record only).
	Broker string
}

// StepInfo is a step as it ran.
type StepInfo struct {
	Line int
	Text string
	At   time.Duration // the clock (virtual time since the start) once it ran; an advance's results happened during it
	// Took is the wall-clock time the step took, its quiet window
	// included: against a real broker, the time the broker's timers saw
	// pass that the simulator's clock does not (beyond an advance's own).
	Took time.Duration
}

// Consumer is one consumer's life: created by the step From, gone at the
// step Until (-1: still there at the end) for the reason How.
type Consumer struct {
	Label    string // the tag, or CHANNEL.TAG when the tag is used on several channels
	Channel  string
	Queue    string
	Prefetch int // its per-consumer prefetch (0: none)
	NoAck    bool
	From     int
	Until    int
	How      string
}

// Holding is one delivery held unsettled: by a consumer (Consumer is its
// label) or by basic.get ("CHANNEL get"), from the step From until the step
// Until (-1: still held at the end), and how it ended: "acked",
// "nack requeue", "nack drop", "reject requeue", "reject drop",
// "recovered", "channel closed", "connection closed", "channel closed by
// broker", "connection closed by broker", or "no-ack" (settled on delivery).
type Holding struct {
	Consumer    string
	Channel     string
	Queue       string
	Msg         string
	Tag         uint64
	Redelivered bool
	From, Until int
	FromAt      time.Duration
	UntilAt     time.Duration
	How         string

	orphan bool // its queue was deleted: it no longer counts as the queue's
	// staged is how a settlement inside a transaction ends it at tx.commit
	// ("" if none): RabbitMQ's channel has already let go of it, so
	// basic.recover leaves it alone, but its queue counts it until the commit.
	staged string
}

// Mismatch is a step whose results differ from the scenario's expectation.
type Mismatch struct {
	Line int
	Text string
	Want []string
	Got  []string
}

// Mismatches compares the results with the expectations written in the
// scenario, step by step.
func (r *Result) Mismatches() []Mismatch {
	var out []Mismatch
	for i, st := range r.Scenario.Steps {
		var got []string
		if i < len(r.Got) {
			got = r.Got[i]
		}
		if !cmp.Equal(st.Expect, got, cmp.Comparer(equalLines)) {
			out = append(out, Mismatch{Line: st.Line, Text: st.Text, Want: st.Expect, Got: got})
		}
	}
	return out
}

func equalLines(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !sameLine(a[i], b[i]) {
			return false
		}
	}
	return true
}

// sameLine reports whether result lines a and b say the same, but for
// what a recording cannot reproduce of a reply text. RabbitMQ lays out an
// Erlang term in a text by the column it starts at (a newline and
// indentation, written \n and spaces), and cuts a text at 255 bytes
// ("..."); the names in the text, which the recorder prefixes, shift
// both. So the layout is not compared, and a text cut short matches one
// that goes on from where it was cut.
func sameLine(a, b string) bool {
	if a == b {
		return true
	}
	a, b = termLayout.ReplaceAllString(a, ""), termLayout.ReplaceAllString(b, "")
	if a == b {
		return true
	}
	stemA, cutA := strings.CutSuffix(a, "...")
	stemB, cutB := strings.CutSuffix(b, "...")
	return cutA && strings.HasPrefix(b, stemA) || cutB && strings.HasPrefix(a, stemB)
}

// termLayout is the layout of an Erlang term in a rendered reply text.
var termLayout = regexp.MustCompile(`\\n *`)

// Diff renders the mismatches readably: for each step, its file and line,
// the step, and a go-cmp diff of the expected (-) and the observed (+)
// result lines. It is "" when the results match.
func (r *Result) Diff() string {
	ms := r.Mismatches()
	if len(ms) == 0 {
		return ""
	}
	src := r.Scenario.Source
	if src == "" {
		src = "the file"
	}
	var b strings.Builder
	for _, m := range ms {
		fmt.Fprintf(&b, "%s:%d: %s\n", r.Scenario.Path, m.Line, m.Text)
		fmt.Fprintf(&b, "  results differ (-want from %s, +got):\n", src)
		for _, l := range strings.Split(strings.TrimRight(cmp.Diff(m.Want, m.Got), "\n"), "\n") {
			b.WriteString("  ")
			b.WriteString(l)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// Recorded returns a copy of the scenario with the results of this run as
// its expectations, comments and step lines kept as they were. A source
// naming a RabbitMQ release ("rabbitmq 4.0.5 2026-12-01") makes them that
// release's recording, beside the file's recordings of other releases;
// with an empty source they replace the expectations of the scenario's
// Version.
func (r *Result) Recorded(source string) *Scenario {
	s := r.Scenario.Clone()
	for i, st := range s.Steps {
		if i < len(r.Got) {
			st.Expect = append([]string(nil), r.Got[i]...)
		}
	}
	switch f := strings.Fields(source); {
	case len(f) >= 2 && f[0] == "rabbitmq":
		s.addRecording(source)
	case source != "":
		s.setSource(source)
	case len(s.recordings) > 0:
		for _, st := range s.Steps {
			st.byRelease[s.Version] = slices.Clone(st.Expect)
		}
	}
	return s
}
