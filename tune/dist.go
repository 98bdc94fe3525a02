package tune

import (
	"bufio"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Dist is a distribution of durations: a handler's time per message.
type Dist struct {
	kind    distKind
	a, b    time.Duration // constant: a; uniform: [a, b]; exponential: mean a; log-normal: median a
	sigma   float64       // log-normal: the standard deviation of ln(duration)
	samples []time.Duration
	spec    string
}

type distKind int

const (
	distConst distKind = iota
	distUniform
	distExp
	distLogNormal
	distSamples
)

// Constant returns the distribution that is always d.
func Constant(d time.Duration) Dist {
	return Dist{kind: distConst, a: d, spec: d.String()}
}

// Uniform returns the uniform distribution on [lo, hi].
func Uniform(lo, hi time.Duration) Dist {
	return Dist{kind: distUniform, a: lo, b: hi, spec: fmt.Sprintf("uniform:%s,%s", lo, hi)}
}

// Exponential returns the exponential distribution with the given mean.
func Exponential(mean time.Duration) Dist {
	return Dist{kind: distExp, a: mean, spec: fmt.Sprintf("exp:%s", mean)}
}

// LogNormal returns the log-normal distribution with the given median and
// sigma, the standard deviation of the duration's natural logarithm (its
// mean is median·e^(σ²/2)).
func LogNormal(median time.Duration, sigma float64) Dist {
	return Dist{kind: distLogNormal, a: median, sigma: sigma, spec: fmt.Sprintf("lognormal:%s,%g", median, sigma)}
}

// Samples returns the distribution that draws uniformly from samples, such
// as handler times measured in production.
func Samples(samples []time.Duration) Dist {
	return Dist{kind: distSamples, samples: slices.Clone(samples), spec: fmt.Sprintf("samples:%d", len(samples))}
}

// String returns the distribution in the form ParseDist reads (a file's
// samples as their count).
func (d Dist) String() string { return d.spec }

// Sample draws one duration; it is never negative.
func (d Dist) Sample(r *rand.Rand) time.Duration {
	var v float64
	switch d.kind {
	case distConst:
		return d.a
	case distUniform:
		if d.b <= d.a {
			return d.a
		}
		return d.a + time.Duration(r.Int64N(int64(d.b-d.a)+1))
	case distExp:
		v = r.ExpFloat64() * float64(d.a)
	case distLogNormal:
		v = float64(d.a) * math.Exp(d.sigma*r.NormFloat64())
	case distSamples:
		if len(d.samples) == 0 {
			return 0
		}
		return d.samples[r.IntN(len(d.samples))]
	}
	if v > math.MaxInt64/2 {
		v = math.MaxInt64 / 2
	}
	return time.Duration(v)
}

// Mean returns the distribution's mean.
func (d Dist) Mean() time.Duration {
	switch d.kind {
	case distUniform:
		return (d.a + d.b) / 2
	case distExp:
		return d.a
	case distLogNormal:
		return time.Duration(float64(d.a) * math.Exp(d.sigma*d.sigma/2))
	case distSamples:
		if len(d.samples) == 0 {
			return 0
		}
		var sum float64
		for _, s := range d.samples {
			sum += float64(s)
		}
		return time.Duration(sum / float64(len(d.samples)))
	}
	return d.a
}

// ParseDist reads a distribution: "5ms" (constant), "uniform:1ms,9ms",
// "exp:5ms" (mean), "lognormal:5ms,0.5" (median, sigma) or "file:PATH" (one
// duration per line, such as "4.2ms"; a bare number is milliseconds; blank
// lines and lines starting with # are skipped).
func ParseDist(s string) (Dist, error) {
	kind, args, ok := strings.Cut(s, ":")
	if !ok {
		d, err := parseDuration(s)
		if err != nil {
			return Dist{}, err
		}
		return Constant(d), nil
	}
	parts := strings.Split(args, ",")
	want := map[string]int{"const": 1, "constant": 1, "uniform": 2, "exp": 1, "exponential": 1, "lognormal": 2}
	if kind == "file" {
		return readSamples(args)
	}
	n, known := want[kind]
	if !known {
		return Dist{}, fmt.Errorf("unknown distribution %q (want a duration, uniform:, exp:, lognormal: or file:)", kind)
	}
	if len(parts) != n {
		return Dist{}, fmt.Errorf("%s takes %d argument(s), got %q", kind, n, args)
	}
	first, err := parseDuration(parts[0])
	if err != nil {
		return Dist{}, err
	}
	switch kind {
	case "uniform":
		hi, err := parseDuration(parts[1])
		if err != nil {
			return Dist{}, err
		}
		if hi < first {
			return Dist{}, fmt.Errorf("uniform:%s: the upper bound is below the lower", args)
		}
		return Uniform(first, hi), nil
	case "exp", "exponential":
		return Exponential(first), nil
	case "lognormal":
		sigma, err := strconv.ParseFloat(parts[1], 64)
		if err != nil || sigma < 0 || math.IsNaN(sigma) || math.IsInf(sigma, 0) {
			return Dist{}, fmt.Errorf("lognormal sigma %q: want a number ≥ 0", parts[1])
		}
		return LogNormal(first, sigma), nil
	}
	return Constant(first), nil
}

// parseDuration reads a non-negative duration; a bare number is in
// milliseconds, the unit handler times are usually quoted in.
func parseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		if f < 0 || math.IsNaN(f) || f > 1e12 {
			return 0, fmt.Errorf("duration %q: want a value ≥ 0", s)
		}
		return time.Duration(f * float64(time.Millisecond)), nil
	}
	d, err := time.ParseDuration(strings.ReplaceAll(s, "µ", "u"))
	if err != nil {
		return 0, fmt.Errorf("duration %q: %v", s, err)
	}
	if d < 0 {
		return 0, fmt.Errorf("duration %q: want a value ≥ 0", s)
	}
	return d, nil
}

func readSamples(path string) (Dist, error) {
	f, err := os.Open(path)
	if err != nil {
		return Dist{}, err
	}
	defer f.Close()
	var out []time.Duration
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		d, err := parseDuration(line)
		if err != nil {
			return Dist{}, fmt.Errorf("%s:%d: %v", path, n, err)
		}
		out = append(out, d)
	}
	if err := sc.Err(); err != nil {
		return Dist{}, err
	}
	if len(out) == 0 {
		return Dist{}, fmt.Errorf("%s: no samples", path)
	}
	d := Samples(out)
	d.spec = "file:" + path
	return d, nil
}
