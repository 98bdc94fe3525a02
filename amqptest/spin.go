package amqptest

import (
	"fmt"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/amqpsim/amqpsim/internal/bubble"
)

// A run of CheckUnderFaults lives in a synctest bubble, whose clock moves
// only when every goroutine in it is blocked. A goroutine that never
// blocks (a dial retried in a tight loop while dials are refused) stops
// the clock, so that no bound of the run (Within) is ever reached: the run
// would spin until the test binary's timeout. A watchdog outside the
// bubble, on the real clock, notices it.
//
// Progress is frames going between the server and its clients, or the
// bubble's clock moving. No
// progress while the process burns spinCPU of CPU time is a spin: a run
// whose goroutines wait for the CPU (a loaded machine) burns none, and a
// run that works gets somewhere long before (the runtime preempts a
// running goroutine every 10 ms, so the run's next step comes within a
// few of them). The watchdog then names the bubble's goroutines that kept
// running, with their stacks, and makes the server's Dial block until
// the run's context ends, which stops the usual spin, a reconnect loop;
// the run then fails with that diagnosis. A spin that goes on elsewhere
// is fatal to the test binary, which panics with the same diagnosis.

// spinCPU is how much CPU time the process may burn while a run makes no
// progress before the watchdog calls it a spin.
const spinCPU = 3 * time.Second

// spinWatch watches one run from outside its bubble.
type spinWatch struct {
	srv    atomic.Pointer[Server]
	ticks  atomic.Int64 // seconds the bubble's clock has moved
	bubble atomic.Value // the bubble's label in goroutine dumps, "synctest bubble N"
	done   chan struct{}

	mu        sync.Mutex
	diagnosis string // set once a spin is found
}

// progress is what a run has done so far: the frames the server wrote
// and read, the seconds its clock moved. (The watchdog must not call the
// broker: a call from outside the bubble would set its clock to the real
// time.)
type progress struct {
	io    uint64
	ticks int64
}

// spinMeter decides, from samples of a run's progress and of the
// process's CPU time, whether the run spins.
type spinMeter struct {
	last  progress
	since time.Duration // the CPU time at the last progress
}

// observe takes a sample and reports whether the run has made no
// progress while the process burnt spinCPU.
func (m *spinMeter) observe(p progress, cpu time.Duration) bool {
	if p != m.last {
		m.last, m.since = p, cpu
		return false
	}
	return cpu-m.since >= spinCPU
}

// watchSpin starts a run's watchdog, which stops when end is called.
func watchSpin() (w *spinWatch, end func()) {
	w = &spinWatch{done: make(chan struct{})}
	var once sync.Once
	go w.loop()
	return w, func() { once.Do(func() { close(w.done) }) }
}

// inBubble is called by the run's first goroutine inside its bubble once
// its server started: it notes the bubble's label and starts the
// goroutine that counts the bubble's seconds, which returns when stop is
// called.
func (w *spinWatch) inBubble(srv *Server) (stop func()) {
	buf := make([]byte, 128)
	head := string(buf[:runtime.Stack(buf, false)])
	if m := bubbleLabel.FindString(head); m != "" {
		w.bubble.Store(m)
	}
	w.srv.Store(srv)
	quit := make(chan struct{})
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				w.ticks.Add(1)
			}
		}
	}()
	return func() { close(quit) }
}

var bubbleLabel = regexp.MustCompile(`synctest bubble \d+`)

// loop samples the run four times a second until it ends.
func (w *spinWatch) loop() {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	var m spinMeter
	stopped := false // the server's Dial blocks: a second spin is fatal
	for {
		select {
		case <-w.done:
			return
		case <-t.C:
		}
		srv := w.srv.Load()
		if srv == nil {
			continue
		}
		p := progress{io: srv.io.count(), ticks: w.ticks.Load()}
		if !m.observe(p, cpuTime()) {
			continue
		}
		label, _ := w.bubble.Load().(string)
		d := spinDiagnosis(label)
		if stopped {
			panic(d + "\n(the spin goes on outside the server's Dial, so the run cannot be stopped)")
		}
		w.mu.Lock()
		w.diagnosis = d
		w.mu.Unlock()
		srv.blockDials()
		stopped = true
		m = spinMeter{last: p, since: cpuTime()}
	}
}

// spun returns the diagnosis of a spin the watchdog found, or "".
func (w *spinWatch) spun() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.diagnosis
}

// spinDumps and spinDumpGap are how many dumps of the goroutines
// spinDiagnosis takes, and how far apart.
const (
	spinDumps   = 4
	spinDumpGap = 50 * time.Millisecond
)

// spinDiagnosis names the goroutines of the bubble labelled label that no
// dump shows durably blocked, with their stacks. A dump names a
// goroutine's bubble only in some states (not while it runs), so the
// bubble's goroutines are those a dump names so and those they created.
func spinDiagnosis(label string) string {
	var dumps []map[string]dumped
	for i := range spinDumps {
		if i > 0 {
			time.Sleep(spinDumpGap)
		}
		dumps = append(dumps, dumpGoroutines())
	}
	in := map[string]bool{}
	for _, d := range dumps {
		for id, g := range d {
			if label != "" && strings.Contains(g.head, label+"]") {
				in[id] = true
			}
		}
	}
	for grown := true; grown; {
		grown = false
		for _, d := range dumps {
			for id, g := range d {
				if !in[id] && in[g.creator] {
					in[id], grown = true, true
				}
			}
		}
	}
	var stacks []string
	for id := range in {
		stack, spinning := "", true
		for _, d := range dumps {
			g, ok := d[id]
			if !ok || strings.Contains(g.head, "(durable)") || strings.Contains(g.stack, "amqptest.(*spinWatch)") {
				spinning = false
				break
			}
			if len(g.stack) > len(stack) {
				stack = g.stack
			}
		}
		if spinning {
			stacks = append(stacks, stack)
		}
	}
	slices.Sort(stacks)
	var b strings.Builder
	fmt.Fprintf(&b, "amqptest: the run made no progress (no frame to or from the broker, no move of its clock) while the process burnt %v of CPU: "+
		"a goroutine spins without ever blocking, so the bubble's clock cannot move and no bound of the run is reached. "+
		"A loop that retries at once (a dial refused while the broker restarts, a channel on a closed connection) "+
		"needs a back-off between attempts (time.Sleep, a timer, a select on ctx.Done with time.After).", spinCPU)
	if len(stacks) == 0 {
		b.WriteString("\n(no goroutine of the run was seen out of a durable block in every dump)")
	}
	for _, s := range stacks {
		b.WriteString("\nthe goroutine that kept running:\n" + s)
	}
	return b.String()
}

// dumped is a goroutine in a dump of them all.
type dumped struct {
	head, stack string
	creator     string // the id of the goroutine that created it
}

var createdBy = regexp.MustCompile(`\ncreated by .* in goroutine (\d+)\n`)

// dumpGoroutines returns every goroutine but the caller, by id.
func dumpGoroutines() map[string]dumped {
	out := map[string]dumped{}
	for i, g := range strings.Split(bubble.Dump(), "\n\n") {
		if i == 0 {
			continue // the caller
		}
		head, _, _ := strings.Cut(g, "\n")
		id, _, _ := strings.Cut(strings.TrimPrefix(head, "goroutine "), " ")
		d := dumped{head: head, stack: g}
		if m := createdBy.FindStringSubmatch(g + "\n"); m != nil {
			d.creator = m[1]
		}
		out[id] = d
	}
	return out
}

// blockDials makes Dial wait until releaseDials, so that a reconnect loop
// that spins on refused dials blocks.
func (s *Server) blockDials() { s.dialsBlocked.Store(true) }

// releaseDials lets the dials blockDials holds fail, once the run ends.
func (s *Server) releaseDials() { s.releaseOnce.Do(func() { close(s.dialRelease) }) }
