package tune

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/amqpsim/amqpsim/sim"
)

// Describe returns a one-line summary of the configuration.
func (c Config) Describe() string {
	var b strings.Builder
	chans := (c.Consumers + c.ConsumersPerChannel - 1) / c.ConsumersPerChannel
	conns := (chans + c.ChannelsPerConnection - 1) / c.ChannelsPerConnection
	fmt.Fprintf(&b, "%d consumers on %d channels on %d connections, handler %s, rtt %v", c.Consumers, chans, conns, c.Handler, c.RTT)
	if c.Bandwidth > 0 {
		fmt.Fprintf(&b, ", %s/s", formatBytes(int64(c.Bandwidth)))
	}
	fmt.Fprintf(&b, ", %s messages", formatBytes(int64(c.Size)))
	if c.Backlog > 0 {
		fmt.Fprintf(&b, ", backlog %d", c.Backlog)
	}
	if c.Rate > 0 {
		fmt.Fprintf(&b, ", %d more at %g/s", c.Messages, c.Rate)
	}
	if c.AckEvery > 1 {
		fmt.Fprintf(&b, ", ack multiple every %d", c.AckEvery)
	} else {
		b.WriteString(", ack each")
	}
	fmt.Fprintf(&b, ", broker cost %v + %v unbatched, client cost %v", c.BrokerCost, c.UnbatchedCost, c.ClientCost)
	if c.Global {
		b.WriteString(", prefetch per channel (global)")
	}
	if c.Version != (sim.Version{}) {
		fmt.Fprintf(&b, ", RabbitMQ %s", c.Version)
	}
	fmt.Fprintf(&b, ", seed %d", c.Seed)
	return b.String()
}

// prefetchLabel prints a prefetch value; 0 is unlimited.
func prefetchLabel(p int) string {
	if p == 0 {
		return "unlimited"
	}
	return strconv.Itoa(p)
}

// WriteTable writes the sweep as an aligned table with the recommendation
// under it.
func (r *Result) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "%s\n\n", r.Config.Describe())
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "prefetch\tmsg/s\tp50 latency\tp99 latency\theld\theld bytes\tshare min–max\tblast max\tblast mean\t")
	for i, p := range r.Points {
		lo, hi := p.ShareRange()
		mark := ""
		switch {
		case i == r.Knee:
			mark = " ←"
		case p.Stalled:
			mark = " stalled"
		}
		fmt.Fprintf(tw, "%s\t%.1f\t%s\t%s\t%d\t%s\t%.3f–%.3f\t%d\t%.1f\t%s\n", prefetchLabel(p.Prefetch), p.Throughput,
			formatDuration(p.LatencyP50), formatDuration(p.LatencyP99), p.HeldPeak, formatBytes(p.HeldBytesPeak), lo, hi, p.BlastMax, p.BlastMean, mark)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	k, best := r.Recommended(), r.Points[r.Best]
	_, err := fmt.Fprintf(w, "\nrecommended: prefetch %s, the smallest within %.0f%% of the best throughput: %.1f msg/s, %.1f%% of %.1f (prefetch %s); it holds up to %d messages (%s) on the clients and a crash redelivers up to %d.\n",
		prefetchLabel(k.Prefetch), 100*KneeFraction, k.Throughput, 100*k.Throughput/best.Throughput, best.Throughput, prefetchLabel(best.Prefetch),
		k.HeldPeak, formatBytes(k.HeldBytesPeak), k.BlastMax)
	return err
}

// csvHeader names WriteCSV's columns.
var csvHeader = []string{"prefetch", "throughput_per_s", "messages", "duration_s", "stalled", "latency_p50_ms", "latency_p99_ms",
	"held_peak", "held_bytes_peak", "share_min", "share_max", "blast_max", "blast_mean", "recommended"}

// WriteCSV writes one row per prefetch value under a header row; prefetch 0
// is unlimited, and recommended marks the knee.
func (r *Result) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	cw.Write(csvHeader)
	for i, p := range r.Points {
		lo, hi := p.ShareRange()
		cw.Write([]string{
			strconv.Itoa(p.Prefetch), f(p.Throughput, 3), strconv.Itoa(p.Messages), f(p.Duration.Seconds(), 6), strconv.FormatBool(p.Stalled),
			f(ms(p.LatencyP50), 3), f(ms(p.LatencyP99), 3), strconv.Itoa(p.HeldPeak), strconv.FormatInt(p.HeldBytesPeak, 10),
			f(lo, 4), f(hi, 4), strconv.Itoa(p.BlastMax), f(p.BlastMean, 3), strconv.FormatBool(i == r.Knee),
		})
	}
	cw.Flush()
	return cw.Error()
}

func f(v float64, prec int) string { return strconv.FormatFloat(v, 'f', prec, 64) }

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// jsonResult is WriteJSON's document.
type jsonResult struct {
	Config      string  `json:"config"`
	Recommended int     `json:"recommended_prefetch"`
	Best        int     `json:"best_prefetch"`
	Fraction    float64 `json:"knee_fraction"`
	Points      []Point `json:"points"`
}

// WriteJSON writes the sweep as one indented JSON document: the
// configuration's summary, the recommended and best prefetch (0:
// unlimited) and every point, durations in nanoseconds.
func (r *Result) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(jsonResult{
		Config: r.Config.Describe(), Recommended: r.Recommended().Prefetch, Best: r.Points[r.Best].Prefetch,
		Fraction: KneeFraction, Points: r.Points,
	})
}

// formatBytes prints a byte count with a binary unit.
func formatBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1fGiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1fMiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1fKiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%dB", n)
}

// formatDuration prints a duration with three significant digits.
func formatDuration(d time.Duration) string {
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.3gs", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%.3gms", ms(d))
	case d >= time.Microsecond:
		return fmt.Sprintf("%.3gµs", float64(d)/float64(time.Microsecond))
	}
	return d.String()
}
