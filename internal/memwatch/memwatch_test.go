package memwatch

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/amqpsim/amqpsim/sim"
)

func TestParse(t *testing.T) {
	for s, want := range map[string]Watermark{
		"0.4":    {Fraction: 0.4},
		"1":      {Fraction: 1},
		"0":      {Fraction: 0},
		"1GB":    {Bytes: 1e9},
		"1GiB":   {Bytes: 1 << 30},
		"2G":     {Bytes: 2 << 30},
		"512MiB": {Bytes: 512 << 20},
		"512MB":  {Bytes: 512e6},
		"100kB":  {Bytes: 100e3},
		"1.5GB":  {Bytes: 1.5e9},
		"123456": {Bytes: 123456},
	} {
		got, err := Parse(s)
		if err != nil || got != want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", s, got, err, want)
		}
	}
	for _, s := range []string{"", "-1", "1.5", "GB", "x", "-2GB", "NaN", "Inf"} {
		if w, err := Parse(s); err == nil {
			t.Errorf("Parse(%q) = %+v, want an error", s, w)
		}
	}
	if got := (Watermark{Fraction: 0.4}).Limit(1000); got != 400 {
		t.Errorf("0.4 of 1000: %d", got)
	}
	if got := (Watermark{Bytes: 7}).Limit(1000); got != 7 {
		t.Errorf("7 bytes of 1000: %d", got)
	}
}

func TestAvailableFiles(t *testing.T) {
	dir := t.TempDir()
	meminfo := filepath.Join(dir, "meminfo")
	if err := os.WriteFile(meminfo, []byte("MemTotal:       24684000 kB\nMemFree: 1 kB\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if n, err := memTotal(meminfo); err != nil || n != 24684000<<10 {
		t.Errorf("memTotal: %d, %v", n, err)
	}
	for content, want := range map[string]bool{"max\n": false, "1073741824\n": true} {
		p := filepath.Join(dir, "memory.max")
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if n, ok := cgroupLimit(p); ok != want || (ok && n != 1<<30) {
			t.Errorf("cgroupLimit(%q) = %d, %t", content, n, ok)
		}
	}
	if _, err := Available(); err != nil {
		t.Logf("Available on this machine: %v", err)
	}
}

// fakeRuntime is a heap the test sets, and counts of what the monitor did
// to it.
type fakeRuntime struct {
	heap, afterGC uint64 // afterGC: the heap a collection leaves (0: unchanged)
	gcs, frees    int
}

func (f *fakeRuntime) monitor(limit uint64) *Monitor {
	return &Monitor{Limit: limit,
		heap: func() uint64 { return f.heap },
		gc: func() {
			f.gcs++
			if f.afterGC != 0 {
				f.heap = f.afterGC
			}
		},
		free: func() { f.frees++ }}
}

// TestStepRaisesAndClears: the alarm is raised when the heap, collected,
// is above the limit, not for garbage; it is cleared when the heap falls
// below; an alarm someone else raised is left alone; memory goes back to
// the operating system after a large shrink.
func TestStepRaisesAndClears(t *testing.T) {
	b := sim.New(sim.Config{})
	f := &fakeRuntime{heap: 100 << 20}
	m := f.monitor(200 << 20)
	if m.Step(b) || f.gcs != 0 {
		t.Fatalf("below the limit: alarm %v, %d collections", b.Alarms(), f.gcs)
	}
	// Garbage above the limit: collected, no alarm.
	f.heap, f.afterGC = 300<<20, 150<<20
	if m.Step(b) || f.gcs != 1 {
		t.Fatalf("garbage above the limit: alarm %v, %d collections", b.Alarms(), f.gcs)
	}
	// Live data above the limit: not raised on the readings between
	// collections (what they see may still be garbage), raised at the
	// next collection, gcEvery looks later.
	f.heap, f.afterGC = 300<<20, 0
	for i := range gcEvery {
		if m.Step(b) || f.gcs != 1 {
			t.Fatalf("look %d after a collection: alarm %v, %d collections; want no alarm before the heap is collected", i+1, b.Alarms(), f.gcs)
		}
	}
	if !m.Step(b) || f.gcs != 2 {
		t.Fatalf("live heap above the limit: alarm %v after %d collections", b.Alarms(), f.gcs)
	}
	// Drained: the monitor collects and clears; the heap halved by more
	// than 64 MiB, it returns memory.
	f.afterGC = 100 << 20
	for i := 0; i <= gcEvery && m.Step(b); i++ {
	}
	if b.Alarms()&sim.AlarmMemory != 0 {
		t.Fatalf("drained: alarm %v", b.Alarms())
	}
	if f.frees != 1 {
		t.Errorf("shrunk from 300 MiB to 100 MiB: %d returns to the OS, want 1", f.frees)
	}
	// An alarm the operator raised is not the monitor's to clear.
	b.SetAlarm(sim.AlarmMemory, true)
	m.Step(b)
	if b.Alarms()&sim.AlarmMemory == 0 {
		t.Error("the monitor cleared an alarm it did not raise")
	}
}
