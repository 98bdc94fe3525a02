package measure

import (
	"context"
	"fmt"
	"math"
	neturl "net/url"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/amqpsim/amqpsim/tune"
)

// TestValidate compares the simulator's predicted throughput with
// amqp091-go consumers on a real RabbitMQ behind a delaying proxy, over the
// grid of the issue: RTT 0.5, 2 and 10 ms, handler 0, 1 and 5 ms, 2 and 8
// consumers, prefetch 1, 10, 100 and 1000. It needs a broker and about 15
// minutes, so it runs only on demand:
//
//	AMQPSIM_TUNE_VALIDATE=1 go test -run TestValidate -timeout 60m -v ./tune/measure/
//
// AMQPSIM_TUNE_VALIDATE=quick runs the 2 ms row only; AMQPSIM_TUNE_REPS
// sets the repetitions per point (default 3, the median is kept);
// AMQPSIM_TUNE_VALIDATE_OUT names a file for the Markdown table.
func TestValidate(t *testing.T) {
	mode := os.Getenv("AMQPSIM_TUNE_VALIDATE")
	if mode == "" {
		t.Skip("set AMQPSIM_TUNE_VALIDATE=1 to compare predictions with RabbitMQ at $AMQP_URL (default amqp://guest:guest@127.0.0.1:5672/); it takes about 15 minutes")
	}
	url := os.Getenv("AMQP_URL")
	if url == "" {
		url = "amqp://guest:guest@127.0.0.1:5672/"
	}
	target := hostPort(t, url)
	reps := 3
	if s := os.Getenv("AMQPSIM_TUNE_REPS"); s != "" {
		reps, _ = strconv.Atoi(s)
	}
	rtts := []time.Duration{500 * time.Microsecond, 2 * time.Millisecond, 10 * time.Millisecond}
	handlers := []time.Duration{0, time.Millisecond, 5 * time.Millisecond}
	if mode == "quick" {
		rtts = rtts[1:2]
	}
	consumers := []int{2, 8}
	prefetches := []int{1, 10, 100, 1000}
	ctx := context.Background()
	runtime.GOMAXPROCS(64) // see Run: precise sleeps hold processors

	// The model's broker costs come from calibrate, run through the proxy
	// with no delay before each RTT's rows (the machine is shared and its
	// load drifts): the proxy shares the machine's two cores with the
	// broker and the consumers, so its time per frame is part of what the
	// consumers see.
	calibrate := func() Calibration {
		p0, err := NewProxy(target, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer p0.Close()
		cal, err := Calibrate(ctx, CalibrateOptions{URL: viaProxy(url, p0.Addr()), Messages: 10000, Repeat: reps})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("calibration through the proxy:\n%s", cal)
		return cal
	}
	var cals []string

	var b strings.Builder
	fmt.Fprintf(&b, "| RTT (measured) | handler (measured mean) | consumers | prefetch | messages | predicted msg/s | measured msg/s (median of %d) | error |\n|---|---|---|---|---|---|---|---|\n", reps)
	var worst float64
	misses, kneeMisses, points := 0, 0, 0
	for _, rtt := range rtts {
		p, err := NewProxy(target, rtt/2)
		if err != nil {
			t.Fatal(err)
		}
		var mrtts []time.Duration
		for range reps {
			rt, err := RoundTrip(url, p.Addr(), 50)
			if err != nil {
				t.Fatal(err)
			}
			mrtts = append(mrtts, rt)
		}
		mrtt := median(mrtts)
		cal := calibrate()
		cals = append(cals, fmt.Sprintf("before the %v rows (load average %s): broker cost %v, unbatched %v (from %.0f and %.0f msg/s)", rtt, loadAverage(), cal.BrokerCost, cal.UnbatchedCost, cal.Batched, cal.Unbatched))
		for _, h := range handlers {
			for _, c := range consumers {
				var pred, meas []tune.Point
				for _, pf := range prefetches {
					cfg := tune.Config{Consumers: c, Handler: tune.Constant(h), RTT: mrtt, Size: 1024, Backlog: 20000,
						Prefetch: []int{pf}, BrokerCost: nonZero(cal.BrokerCost), UnbatchedCost: nonZero(cal.UnbatchedCost), ClientCost: -1}
					// About 1.5 s of work per point.
					pt := predict(t, cfg)
					cfg.Backlog = min(max(int(pt.Throughput*1.5), 500), 20000)
					pt = predict(t, cfg)
					var rs []Result
					var times []time.Duration
					for range reps {
						r, err := Run(ctx, Options{URL: url, ConsumerAddr: p.Addr(), Consumers: c, Handler: cfg.Handler, Size: cfg.Size,
							Messages: cfg.Backlog, Prefetch: pf, Timeout: max(30*time.Second, 4*pt.Duration)})
						if err != nil {
							t.Fatal(err)
						}
						rs = append(rs, r)
						times = append(times, r.HandlerTimes...)
					}
					m := MedianThroughput(rs)
					// The prediction gets the handler times as they
					// happened (a sleep wakes late), as a user gives their
					// handler's measured times.
					cfg.Handler = tune.Samples(times)
					pt = predict(t, cfg)
					e := pt.Throughput/m.Throughput - 1
					worst = max(worst, math.Abs(e))
					points++
					flag := ""
					if math.Abs(e) > 0.15 {
						misses++
						flag = " **miss**"
					}
					fmt.Fprintf(&b, "| %v (%v) | %v (%v) | %d | %d | %d | %.0f | %.0f | %+.1f%%%s |\n",
						rtt, mrtt.Round(time.Microsecond), h, cfg.Handler.Mean().Round(time.Microsecond), c, pf, cfg.Backlog, pt.Throughput, m.Throughput, 100*e, flag)
					t.Logf("rtt %v handler %v consumers %d prefetch %d: predicted %.0f, measured %.0f (%+.1f%%)", rtt, h, c, pf, pt.Throughput, m.Throughput, 100*e)
					pred = append(pred, pt)
					meas = append(meas, tune.Point{Prefetch: pf, Throughput: m.Throughput})
				}
				pk, mk := tune.Knee(pred), tune.Knee(meas)
				if d := pk - mk; d < -1 || d > 1 {
					kneeMisses++
					t.Errorf("rtt %v handler %v consumers %d: predicted knee at prefetch %d, measured at %d", rtt, h, c, prefetches[pk], prefetches[mk])
				}
				fmt.Fprintf(&b, "| | | | knee | | %d | %d | |\n", prefetches[pk], prefetches[mk])
			}
		}
		p.Close()
	}
	fmt.Fprintf(&b, "\n%d points, %d outside 15%%, worst %.1f%%; %d knees more than one step apart. Calibration through the proxy with no delay, %s.\n",
		points, misses, 100*worst, kneeMisses, strings.Join(cals, "; "))
	t.Log("\n" + b.String())
	if out := os.Getenv("AMQPSIM_TUNE_VALIDATE_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(b.String()), 0o644); err != nil {
			t.Error(err)
		}
	}
	if misses > 0 {
		t.Errorf("%d of %d points outside 15%% (worst %.1f%%)", misses, points, 100*worst)
	}
}

func predict(t *testing.T, cfg tune.Config) tune.Point {
	t.Helper()
	res, err := tune.Sweep(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return res.Points[0]
}

// hostPort returns the host:port of an AMQP URL, with AMQP's default port.
func hostPort(t interface{ Fatal(...any) }, raw string) string {
	u, err := neturl.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	if u.Port() == "" {
		return u.Hostname() + ":5672"
	}
	return u.Host
}

// viaProxy returns the AMQP URL with its host:port replaced by addr.
func viaProxy(raw, addr string) string {
	u, err := neturl.Parse(raw)
	if err != nil {
		return raw
	}
	u.Host = addr
	return u.String()
}

// loadAverage returns the one-minute load average, to show how busy the
// shared machine was.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Fields(string(b))[0]
}
