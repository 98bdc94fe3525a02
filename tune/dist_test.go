package tune

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestParseDist(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Dist
	}{
		{"5ms", Constant(5 * time.Millisecond)},
		{"2.5", Constant(2500 * time.Microsecond)}, // a bare number is milliseconds
		{"250µs", Constant(250 * time.Microsecond)},
		{"uniform:1ms,9ms", Uniform(time.Millisecond, 9*time.Millisecond)},
		{"exp:5ms", Exponential(5 * time.Millisecond)},
		{"lognormal:5ms,0.5", LogNormal(5*time.Millisecond, 0.5)},
	} {
		got, err := ParseDist(tc.in)
		if err != nil {
			t.Errorf("ParseDist(%q): %v", tc.in, err)
			continue
		}
		if got.String() != tc.want.String() || got.Mean() != tc.want.Mean() {
			t.Errorf("ParseDist(%q) = %s (mean %v), want %s (mean %v)", tc.in, got, got.Mean(), tc.want, tc.want.Mean())
		}
	}
	for _, bad := range []string{"", "-1ms", "fast", "uniform:5ms", "uniform:9ms,1ms", "exp:x", "lognormal:5ms,-1", "gamma:1ms", "file:/nonexistent"} {
		if _, err := ParseDist(bad); err == nil {
			t.Errorf("ParseDist(%q) succeeded, want an error", bad)
		}
	}
}

func TestParseDistFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "handler.txt")
	os.WriteFile(path, []byte("# measured\n1ms\n\n3\n2000µs\n"), 0o644)
	d, err := ParseDist("file:" + path)
	if err != nil {
		t.Fatal(err)
	}
	if d.Mean() != 2*time.Millisecond {
		t.Errorf("mean %v, want 2ms", d.Mean())
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 100 {
		if s := d.Sample(r); s != time.Millisecond && s != 2*time.Millisecond && s != 3*time.Millisecond {
			t.Fatalf("sample %v is not one of the file's", s)
		}
	}
	os.WriteFile(path, []byte("# nothing\n"), 0o644)
	if _, err := ParseDist("file:" + path); err == nil {
		t.Error("a file without samples was accepted")
	}
}

// The sample mean of each distribution is close to its Mean; the seed is
// fixed, so this is deterministic.
func TestDistSampleMeans(t *testing.T) {
	for _, d := range []Dist{
		Constant(3 * time.Millisecond),
		Uniform(time.Millisecond, 9*time.Millisecond),
		Exponential(5 * time.Millisecond),
		LogNormal(5*time.Millisecond, 0.5),
		Samples([]time.Duration{time.Millisecond, 4 * time.Millisecond}),
	} {
		r := rand.New(rand.NewPCG(7, 7))
		var sum float64
		const n = 200000
		lo, hi := time.Duration(math.MaxInt64), time.Duration(0)
		for range n {
			s := d.Sample(r)
			if s < 0 {
				t.Fatalf("%s: negative sample %v", d, s)
			}
			lo, hi = min(lo, s), max(hi, s)
			sum += float64(s)
		}
		mean := sum / n
		if rel := math.Abs(mean/float64(d.Mean()) - 1); rel > 0.01 {
			t.Errorf("%s: sample mean %v, want %v (off by %.2f%%)", d, time.Duration(mean), d.Mean(), 100*rel)
		}
		if d.kind == distUniform && (lo < time.Millisecond || hi > 9*time.Millisecond) {
			t.Errorf("%s: samples in [%v, %v]", d, lo, hi)
		}
	}
}
