// Package memwatch raises a broker's memory alarm while the process's Go
// heap is above a watermark, as RabbitMQ's vm_memory_monitor raises its
// node's while the Erlang VM uses more than vm_memory_high_watermark, and
// clears it when the heap falls back below. Raising it blocks publishing
// connections (sim.Broker.SetAlarm, connection.blocked "low on memory");
// consumers go on and drain the queues.
//
// It is a shell's: sim measures nothing and reads no clock (a broker in
// process shares its heap with whatever else the process holds, and only
// the runtime knows the heap). amqpsim serve runs a Monitor
// (--memory-high-watermark), and amqptest.WithMemoryWatermark does.
package memwatch

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"time"

	"github.com/amqpsim/amqpsim/sim"
)

// DefaultFraction is RabbitMQ's default vm_memory_high_watermark.relative.
const DefaultFraction = 0.4

// Watermark is vm_memory_high_watermark: a fraction of the memory
// available to the process (relative), or a size (absolute).
type Watermark struct {
	Fraction float64 // used when Bytes is 0
	Bytes    uint64
}

// units are the size suffixes of vm_memory_high_watermark.absolute, as
// RabbitMQ reads them (rabbit_resource_monitor_misc:parse_information_unit:
// k, kiB, M, MiB, G, GiB are powers of 2; kB, KB, MB, GB powers of 10).
var units = []struct {
	suffix string
	scale  uint64
}{
	{"KiB", 1 << 10}, {"kiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"kB", 1e3}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
	{"k", 1 << 10}, {"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"T", 1 << 40},
}

// Parse reads a watermark: a fraction such as 0.4 (of the memory
// available to the process; 0 raises the alarm at once, as in RabbitMQ),
// or a size with a unit such as 1GB, 512MiB, 2G, or a plain number of
// bytes above 1.
func Parse(s string) (Watermark, error) {
	s = strings.TrimSpace(s)
	for _, u := range units {
		if num, ok := strings.CutSuffix(s, u.suffix); ok {
			n, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
			if err != nil || n <= 0 || math.IsInf(n, 0) {
				return Watermark{}, fmt.Errorf("memory watermark %q: not a size", s)
			}
			return Watermark{Bytes: uint64(n * float64(u.scale))}, nil
		}
	}
	n, err := strconv.ParseFloat(s, 64)
	switch {
	case err != nil || n < 0 || math.IsNaN(n) || math.IsInf(n, 0):
		return Watermark{}, fmt.Errorf("memory watermark %q: want a fraction (0.4) or a size (1GB, 512MiB)", s)
	case n <= 1:
		return Watermark{Fraction: n}, nil
	case n != math.Trunc(n):
		return Watermark{}, fmt.Errorf("memory watermark %q: a fraction is at most 1; a size is whole bytes or has a unit", s)
	}
	return Watermark{Bytes: uint64(n)}, nil
}

// Limit is the watermark in bytes for a process with available bytes.
func (w Watermark) Limit(available uint64) uint64 {
	if w.Bytes > 0 {
		return w.Bytes
	}
	return uint64(w.Fraction * float64(available))
}

// String gives the watermark as Parse reads it.
func (w Watermark) String() string {
	if w.Bytes > 0 {
		return strconv.FormatUint(w.Bytes, 10)
	}
	return strconv.FormatFloat(w.Fraction, 'g', -1, 64)
}

// Available returns the memory available to the process: the machine's
// (MemTotal in /proc/meminfo), or its cgroup's limit where that is lower
// (cgroup v2 memory.max, v1 memory.limit_in_bytes), as a container's
// RabbitMQ should see it.
func Available() (uint64, error) {
	total, err := memTotal("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	for _, f := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		if lim, ok := cgroupLimit(f); ok && lim < total {
			total = lim
		}
	}
	return total, nil
}

func memTotal(path string) (uint64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("%s: MemTotal: %v", path, err)
			}
			return kb << 10, nil
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, errors.New(path + ": no MemTotal")
}

// cgroupLimit reads a cgroup memory limit file; "max" or a missing file
// is no limit.
func cgroupLimit(path string) (uint64, bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(data)), 10, 64)
	return n, err == nil
}

// HeapInUse is the Go heap in use: the bytes of heap spans holding
// objects, live or not yet collected (runtime.MemStats.HeapInuse, read
// from runtime/metrics without stopping the world).
func HeapInUse() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/unused:bytes"}}
	metrics.Read(s)
	var n uint64
	for _, x := range s {
		if x.Value.Kind() == metrics.KindUint64 {
			n += x.Value.Uint64()
		}
	}
	return n
}

// Interval is how often a Monitor looks at the heap by default: more
// often than RabbitMQ's memory_monitor_interval (2.5 s), since a look
// costs microseconds and a publisher on loopback can add a gigabyte in
// 2.5 s.
const Interval = 250 * time.Millisecond

// freeShare is how much of its peak the heap must have shrunk by before a
// Monitor returns the freed memory to the operating system.
const freeShare = 0.5

// freeFloor is the least shrink worth returning to the operating system.
const freeFloor = 64 << 20

// Monitor watches the heap against Limit.
type Monitor struct {
	// Limit is the watermark in bytes (Watermark.Limit).
	Limit uint64
	// Interval between looks; zero means Interval.
	Interval time.Duration
	// Logf, if set, is told when the alarm is raised or cleared and when
	// memory is returned to the operating system.
	Logf func(format string, args ...any)

	// The runtime, replaced in tests.
	heap func() uint64 // HeapInUse
	gc   func()        // runtime.GC
	free func()        // debug.FreeOSMemory

	raised        bool   // the monitor raised the alarm and has not cleared it
	peak          uint64 // the highest heap seen since memory was last returned
	sinceGC       int    // looks since the monitor last collected garbage
	collectedOnce bool   // the monitor has collected garbage
}

func (m *Monitor) logf(format string, args ...any) {
	if m.Logf != nil {
		m.Logf(format, args...)
	}
}

// Run looks at the heap every Interval until ctx ends, raising and
// clearing b's memory alarm. Run it in its own goroutine.
func (m *Monitor) Run(ctx context.Context, b *sim.Broker) {
	every := m.Interval
	if every <= 0 {
		every = Interval
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		m.Step(b)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// gcEvery is the least number of looks between two collections a
// Monitor forces: one a second at the default Interval.
const gcEvery = 4

// Step looks at the heap once. Above the limit it collects garbage first
// (what the heap holds may be garbage not yet collected) and raises the
// alarm only if the heap is still above once collected; while the alarm it
// raised is up it collects at every fourth look, to see the heap fall once
// consumers drained the queues (the collector would otherwise wait for
// allocations, which blocked publishers do not make). Below the limit it
// clears the alarm it raised (an alarm raised by someone else, such as
// POST /api/sim/alarm, stays). When the heap has shrunk to half its peak,
// by 64 MiB or more, it returns the freed memory to the operating system
// (debug.FreeOSMemory). It reports whether the memory alarm is raised.
func (m *Monitor) Step(b *sim.Broker) bool {
	heap, gc, free := m.heap, m.gc, m.free
	if heap == nil {
		heap, gc, free = HeapInUse, runtime.GC, debug.FreeOSMemory
	}
	used := heap()
	collected := false
	if (used > m.Limit || m.raised) && (m.sinceGC >= gcEvery || !m.collectedOnce) {
		gc()
		used, collected = heap(), true
		m.sinceGC, m.collectedOnce = 0, true
	} else {
		m.sinceGC++
	}
	m.peak = max(m.peak, used)
	alarmed := b.Alarms()&sim.AlarmMemory != 0
	switch {
	case used > m.Limit && collected && !alarmed:
		m.logf("memory resource limit alarm set: the Go heap uses %s, above the high watermark of %s; publishers are blocked", size(used), size(m.Limit))
		b.SetAlarm(sim.AlarmMemory, true)
		m.raised, alarmed = true, true
	case used <= m.Limit && m.raised:
		m.logf("memory resource limit alarm cleared: the Go heap uses %s, below the high watermark of %s", size(used), size(m.Limit))
		if alarmed {
			b.SetAlarm(sim.AlarmMemory, false)
		}
		m.raised, alarmed = false, false
	}
	if shrunk := m.peak - used; shrunk >= freeFloor && float64(used) <= freeShare*float64(m.peak) {
		free()
		m.logf("returned memory to the operating system: the Go heap shrank from %s to %s", size(m.peak), size(used))
		m.peak = heap()
	}
	return alarmed
}

// size writes n bytes for people.
func size(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d bytes", n)
}

// Size writes n bytes for people, as the monitor logs them.
func Size(n uint64) string { return size(n) }
