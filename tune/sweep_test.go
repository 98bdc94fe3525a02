package tune

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/amqpsim/amqpsim/sim"
)

func sweep(t *testing.T, cfg Config) *Result {
	t.Helper()
	res, err := Sweep(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func near(got, want, rel float64) bool { return math.Abs(got/want-1) <= rel }

// With prefetch 1 a consumer's cycle is the broker's time for a lone
// delivery, a round trip and the handler: nothing overlaps.
func TestPrefetchOneIsARoundTripPerMessage(t *testing.T) {
	cfg := Config{Consumers: 1, Handler: Constant(5 * time.Millisecond), RTT: 2 * time.Millisecond, Size: 1024, Backlog: 2000,
		BrokerCost: 25 * time.Microsecond, UnbatchedCost: 75 * time.Microsecond, ClientCost: -1, Prefetch: []int{1}}
	p := sweep(t, cfg).Points[0]
	want := 1 / (7.1e-3)
	if !near(p.Throughput, want, 0.001) {
		t.Errorf("throughput %.2f, want %.2f", p.Throughput, want)
	}
	if p.HeldPeak != 1 || p.BlastMax != 1 || p.Stalled || p.Messages != 2000 {
		t.Errorf("held %d, blast %d, stalled %v, messages %d; want 1, 1, false, 2000", p.HeldPeak, p.BlastMax, p.Stalled, p.Messages)
	}
}

// Enough prefetch hides the round trip: the consumers are then limited by
// their handlers alone.
func TestLargePrefetchReachesHandlerBound(t *testing.T) {
	cfg := Config{Consumers: 4, Handler: Constant(5 * time.Millisecond), RTT: 2 * time.Millisecond, Size: 1024, Backlog: 20000, Prefetch: []int{1, 2, 5, 10, 100}}
	res := sweep(t, cfg)
	for _, p := range res.Points[1:] {
		if !near(p.Throughput, 800, 0.01) {
			t.Errorf("prefetch %d: %.1f msg/s, want about 800 (4 consumers / 5 ms)", p.Prefetch, p.Throughput)
		}
		if p.BlastMax > p.Prefetch {
			t.Errorf("prefetch %d: a consumer held %d unacked", p.Prefetch, p.BlastMax)
		}
		if lo, hi := p.ShareRange(); !near(lo, 0.25, 0.01) || !near(hi, 0.25, 0.01) {
			t.Errorf("prefetch %d: shares %.3f–%.3f, want 0.25 each", p.Prefetch, lo, hi)
		}
	}
	if got := res.Recommended().Prefetch; got != 2 {
		t.Errorf("recommended %d, want 2 (the first past the round trip)", got)
	}
}

// Prefetch 0 (unlimited) lets the first consumer take the whole backlog
// before the others have subscribed.
func TestUnlimitedPrefetchIsUnfair(t *testing.T) {
	cfg := Config{Consumers: 4, Handler: Constant(time.Millisecond), RTT: time.Millisecond, Size: 1000, Backlog: 5000, Prefetch: []int{0, 10}}
	res := sweep(t, cfg)
	un, ten := res.Points[0], res.Points[1]
	if lo, hi := un.ShareRange(); hi != 1 || lo != 0 {
		t.Errorf("unlimited: shares %.3f–%.3f, want the first consumer to take all", lo, hi)
	}
	if un.BlastMax != 5000 || un.HeldPeak < 4500 || un.HeldBytesPeak != int64(un.HeldPeak)*1000 {
		t.Errorf("unlimited: blast %d, held %d (%d bytes); want (nearly) the whole backlog", un.BlastMax, un.HeldPeak, un.HeldBytesPeak)
	}
	if !near(ten.Throughput, 4*un.Throughput, 0.01) {
		t.Errorf("prefetch 10: %.1f msg/s, want four times unlimited's %.1f", ten.Throughput, un.Throughput)
	}
	if res.Recommended().Prefetch != 10 {
		t.Errorf("recommended %d, want 10", res.Recommended().Prefetch)
	}
}

// Acking every 10 messages with room for only 5 stops the consumers: each
// waits for a tenth message the broker will not send.
func TestAckEveryBeyondPrefetchStalls(t *testing.T) {
	cfg := Config{Consumers: 2, Handler: Constant(time.Millisecond), RTT: time.Millisecond, Size: 100, Backlog: 1000, AckEvery: 10, Prefetch: []int{5, 20}}
	res := sweep(t, cfg)
	if p := res.Points[0]; !p.Stalled || p.Messages != 10 {
		t.Errorf("prefetch 5: stalled %v after %d messages, want a stall after 10", p.Stalled, p.Messages)
	}
	if p := res.Points[1]; p.Stalled || p.Messages != 1000 {
		t.Errorf("prefetch 20: stalled %v after %d messages, want all 1000", p.Stalled, p.Messages)
	}
	if res.Recommended().Prefetch != 20 {
		t.Errorf("recommended %d, want 20", res.Recommended().Prefetch)
	}
}

// A channel-wide limit is shared by the channel's consumers. On 3.10: from
// 4.3 global=true is per consumer (TestGlobalRefusedWhereDenied).
func TestGlobalPrefetchIsPerChannel(t *testing.T) {
	cfg := Config{Consumers: 4, ConsumersPerChannel: 2, Handler: Constant(time.Millisecond), RTT: time.Millisecond, Size: 100, Backlog: 4000,
		Prefetch: []int{2}, Global: true, Version: sim.V3_10}
	p := sweep(t, cfg).Points[0]
	cfg.Global = false
	q := sweep(t, cfg).Points[0]
	if p.HeldPeak > 4 || q.HeldPeak > 8 {
		t.Errorf("held %d (global) and %d (per consumer); want at most 2 per channel and 2 per consumer", p.HeldPeak, q.HeldPeak)
	}
	if p.Throughput >= q.Throughput {
		t.Errorf("global %.1f msg/s ≥ per consumer %.1f: half the window should be slower", p.Throughput, q.Throughput)
	}
}

// Global needs a release with a channel-wide limit: on 4.3, which denies
// global_qos, the sweep is refused rather than run per consumer.
func TestGlobalRefusedWhereDenied(t *testing.T) {
	cfg := Config{Consumers: 2, Handler: Constant(time.Millisecond), Backlog: 10, Prefetch: []int{2}, Global: true}
	for _, v := range []sim.Version{{}, sim.V4_3} {
		cfg.Version = v
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "denies global_qos") {
			t.Errorf("%v: Validate = %v, want global_qos denied", v, err)
		}
	}
	for _, v := range []sim.Version{sim.V3_10, sim.V4_2} {
		cfg.Version = v
		if err := cfg.Validate(); err != nil {
			t.Errorf("%v: %v", v, err)
		}
	}
}

// With a publish rate below capacity, throughput follows the rate and a
// message's latency is its way to the consumer plus the handler.
func TestPublishRate(t *testing.T) {
	cfg := Config{Consumers: 2, Handler: Constant(2 * time.Millisecond), RTT: 2 * time.Millisecond, Size: 100, Rate: 100, Messages: 1000,
		BrokerCost: 20 * time.Microsecond, UnbatchedCost: -1, ClientCost: -1, Prefetch: []int{10}}
	p := sweep(t, cfg).Points[0]
	if !near(p.Throughput, 100, 0.01) {
		t.Errorf("throughput %.2f, want the rate, 100", p.Throughput)
	}
	want := 20*time.Microsecond + time.Millisecond + 2*time.Millisecond
	if p.LatencyP50 != want || p.LatencyP99 != want {
		t.Errorf("latency p50 %v p99 %v, want %v", p.LatencyP50, p.LatencyP99, want)
	}
}

func TestKneeRule(t *testing.T) {
	pts := func(pairs ...float64) []Point {
		var out []Point
		for i := 0; i < len(pairs); i += 2 {
			out = append(out, Point{Prefetch: int(pairs[i]), Throughput: pairs[i+1]})
		}
		return out
	}
	for _, tc := range []struct {
		name       string
		points     []Point
		best, knee int
	}{
		{"plateau", pts(1, 100, 10, 960, 100, 1000, 1000, 990), 2, 1},
		{"just below", pts(1, 100, 10, 949, 100, 1000), 2, 2},
		{"exactly 95%", pts(1, 100, 10, 950, 100, 1000), 2, 1},
		{"unordered", pts(100, 1000, 10, 990, 1, 10), 0, 1},
		{"unlimited counts as largest", pts(0, 1000, 50, 980), 0, 1},
		{"only unlimited reaches it", pts(0, 1000, 50, 100), 0, 0},
		{"decline past the peak", pts(1, 500, 10, 1000, 1000, 400), 1, 1},
	} {
		best, kn := knee(tc.points)
		if best != tc.best || kn != tc.knee {
			t.Errorf("%s: best %d knee %d, want %d and %d", tc.name, best, kn, tc.best, tc.knee)
		}
	}
}

// The same Config gives the same output byte for byte, whatever the number
// of workers.
func TestDeterminism(t *testing.T) {
	cfg := Config{Consumers: 3, Handler: LogNormal(2*time.Millisecond, 0.7), RTT: time.Millisecond, Size: 2048, Backlog: 3000,
		Prefetch: []int{1, 3, 30, 0}, Seed: 42, AckEvery: 2}
	render := func(c Config) []byte {
		res := sweep(t, c)
		var b bytes.Buffer
		res.WriteTable(&b)
		res.WriteCSV(&b)
		res.WriteJSON(&b)
		b.Write(res.SVG())
		return b.Bytes()
	}
	a := render(cfg)
	cfg.Workers = 3
	if b := render(cfg); !bytes.Equal(a, b) {
		t.Error("a second run with 3 workers differs")
	}
	cfg.Seed = 43
	if b := render(cfg); bytes.Equal(a, b) {
		t.Error("another seed gives the same output: the handler times ignore it")
	}
}

// TestConfigErrors: Sweep refuses a description that makes no sense, with
// Validate's error.
func TestConfigErrors(t *testing.T) {
	ok := Config{Handler: Constant(time.Millisecond), Backlog: 10, Prefetch: []int{1}}
	for name, mut := range map[string]func(*Config){
		"no prefetch":          func(c *Config) { c.Prefetch = nil },
		"bad prefetch":         func(c *Config) { c.Prefetch = []int{70000} },
		"nothing to consume":   func(c *Config) { c.Backlog = 0 },
		"messages, no rate":    func(c *Config) { c.Messages = 5 },
		"rate, no messages":    func(c *Config) { c.Rate = 5 },
		"multiple on a shared": func(c *Config) { c.AckEvery, c.ConsumersPerChannel = 2, 2 },
		"negative rtt":         func(c *Config) { c.RTT = -1 },
	} {
		c := ok
		mut(&c)
		verr := c.Validate()
		if _, err := Sweep(c); err == nil || verr == nil || err.Error() != verr.Error() {
			t.Errorf("%s: Sweep says %v, Validate %v", name, err, verr)
		}
	}
	if _, err := Sweep(ok); err != nil || ok.Validate() != nil {
		t.Errorf("a valid config: %v, %v", err, ok.Validate())
	}
}

func TestDescribe(t *testing.T) {
	cfg, _ := Config{Consumers: 4, ConsumersPerChannel: 2, Handler: Exponential(time.Millisecond), Backlog: 10, Prefetch: []int{1}}.withDefaults()
	if got := cfg.Describe(); !strings.HasPrefix(got, "4 consumers on 2 channels on 2 connections, handler exp:1ms") {
		t.Errorf("Describe() = %q", got)
	}
}
