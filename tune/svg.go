package tune

import (
	"bytes"
	"fmt"
	"html"
	"math"
	"slices"
	"strings"
)

// Plot layout, in pixels.
const (
	plotW, plotH                 = 760, 460
	plotLeft, plotRight          = 80, 90
	plotTop, plotBottom          = 70, 60
	plotFont                     = "font-family='DejaVu Sans, Helvetica, Arial, sans-serif'"
	throughputColor, memoryColor = "#1f5fbf", "#d9730d"
)

// SVG plots throughput (left axis, linear) and the peak bytes held on the
// clients (right axis, log scale) against prefetch (log scale; unlimited
// at the right end), with the recommended prefetch marked.
func (r *Result) SVG() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "<svg xmlns='http://www.w3.org/2000/svg' width='%d' height='%d' viewBox='0 0 %d %d' %s font-size='12'>\n", plotW, plotH, plotW, plotH, plotFont)
	b.WriteString("<rect width='100%' height='100%' fill='white'/>\n")
	title := r.Config.Describe()
	// Two lines: the description is long.
	cut := strings.Index(title, ", broker cost")
	if cut < 0 {
		cut = len(title)
	}
	fmt.Fprintf(&b, "<text x='%d' y='22' font-size='15' font-weight='bold'>Throughput and client memory by prefetch</text>\n", plotLeft)
	fmt.Fprintf(&b, "<text x='%d' y='40' font-size='11' fill='#444'>%s</text>\n", plotLeft, html.EscapeString(title[:cut]))
	fmt.Fprintf(&b, "<text x='%d' y='54' font-size='11' fill='#444'>%s</text>\n", plotLeft, html.EscapeString(strings.TrimPrefix(title[cut:], ", ")))

	x0, x1 := float64(plotLeft), float64(plotW-plotRight)
	y0, y1 := float64(plotH-plotBottom), float64(plotTop) // bottom, top

	// x: log10(prefetch); unlimited sits one step past the largest value.
	var finite []int
	for _, p := range r.Points {
		if p.Prefetch > 0 {
			finite = append(finite, p.Prefetch)
		}
	}
	lo, hi := 0.0, 1.0
	if len(finite) > 0 {
		lo, hi = math.Log10(float64(slices.Min(finite))), math.Log10(float64(slices.Max(finite)))
	}
	unlimited := hi + math.Max(0.5, (hi-lo)/8)
	span := math.Max(unlimited-lo, 1e-9)
	xOf := func(p int) float64 {
		v := unlimited
		if p > 0 {
			v = math.Log10(float64(p))
		}
		return x0 + (v-lo)/span*(x1-x0-20) + 10
	}
	// Left y: throughput from 0.
	tmax := 0.0
	for _, p := range r.Points {
		tmax = math.Max(tmax, p.Throughput)
	}
	tstep := niceStep(tmax / 5)
	// Headroom over the best point, so the line does not run on the frame.
	ttop := math.Max(tstep*math.Ceil(tmax*1.08/tstep), tstep)
	yT := func(v float64) float64 { return y0 - v/ttop*(y0-y1) }
	// Right y: bytes, log10, whole decades.
	mlo, mhi := math.Inf(1), 0.0
	for _, p := range r.Points {
		if p.HeldBytesPeak > 0 {
			mlo = math.Min(mlo, float64(p.HeldBytesPeak))
			mhi = math.Max(mhi, float64(p.HeldBytesPeak))
		}
	}
	if mhi == 0 {
		mlo, mhi = 1, 10
	}
	dlo, dhi := math.Floor(math.Log10(mlo)), math.Ceil(math.Log10(mhi))
	if dhi <= dlo {
		dhi = dlo + 1
	}
	yM := func(v float64) float64 { return y0 - (math.Log10(v)-dlo)/(dhi-dlo)*(y0-y1) }

	// Frame, grid and ticks.
	fmt.Fprintf(&b, "<rect x='%.0f' y='%.0f' width='%.0f' height='%.0f' fill='none' stroke='#888'/>\n", x0, y1, x1-x0, y0-y1)
	for v := 0.0; v <= ttop+tstep/2; v += tstep {
		y := yT(v)
		fmt.Fprintf(&b, "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='#e4e4e4'/>\n", x0, y, x1, y)
		fmt.Fprintf(&b, "<text x='%.1f' y='%.1f' text-anchor='end' fill='%s'>%s</text>\n", x0-6, y+4, throughputColor, formatCount(v))
	}
	for d := dlo; d <= dhi; d++ {
		fmt.Fprintf(&b, "<text x='%.1f' y='%.1f' fill='%s'>%s</text>\n", x1+6, yM(math.Pow(10, d))+4, memoryColor, decade(d))
	}
	for _, p := range r.Points {
		x := xOf(p.Prefetch)
		fmt.Fprintf(&b, "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='#888'/>\n", x, y0, x, y0+5)
		label := prefetchLabel(p.Prefetch)
		if p.Prefetch == 0 {
			label = "∞"
		}
		fmt.Fprintf(&b, "<text x='%.1f' y='%.1f' text-anchor='middle'>%s</text>\n", x, y0+18, label)
	}
	fmt.Fprintf(&b, "<text x='%.1f' y='%d' text-anchor='middle'>prefetch (log scale; ∞ = unlimited)</text>\n", (x0+x1)/2, plotH-18)
	fmt.Fprintf(&b, "<text transform='translate(18 %.1f) rotate(-90)' text-anchor='middle' fill='%s'>throughput (msg/s)</text>\n", (y0+y1)/2, throughputColor)
	fmt.Fprintf(&b, "<text transform='translate(%d %.1f) rotate(90)' text-anchor='middle' fill='%s'>peak bytes held on clients (log scale)</text>\n", plotW-14, (y0+y1)/2, memoryColor)

	// The knee.
	k := r.Recommended()
	kx := xOf(k.Prefetch)
	fmt.Fprintf(&b, "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='#2a9d3a' stroke-dasharray='5 4' stroke-width='1.5'/>\n", kx, y1, kx, y0)
	fmt.Fprintf(&b, "<text x='%.1f' y='%.1f' fill='#2a9d3a' font-weight='bold'>recommended: %s</text>\n", kx+6, y1+34, prefetchLabel(k.Prefetch))

	// The two series, in prefetch order.
	order := make([]int, len(r.Points))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, c int) int {
		pa, pc := r.Points[a].Prefetch, r.Points[c].Prefetch
		switch {
		case smaller(pa, pc):
			return -1
		case smaller(pc, pa):
			return 1
		}
		return 0
	})
	var tp, mp []string
	for _, i := range order {
		p := r.Points[i]
		tp = append(tp, fmt.Sprintf("%.1f,%.1f", xOf(p.Prefetch), yT(p.Throughput)))
		if p.HeldBytesPeak > 0 {
			mp = append(mp, fmt.Sprintf("%.1f,%.1f", xOf(p.Prefetch), yM(float64(p.HeldBytesPeak))))
		}
	}
	fmt.Fprintf(&b, "<polyline points='%s' fill='none' stroke='%s' stroke-width='2'/>\n", strings.Join(tp, " "), throughputColor)
	fmt.Fprintf(&b, "<polyline points='%s' fill='none' stroke='%s' stroke-width='2' stroke-dasharray='6 3'/>\n", strings.Join(mp, " "), memoryColor)
	for _, i := range order {
		p := r.Points[i]
		fmt.Fprintf(&b, "<circle cx='%.1f' cy='%.1f' r='3.5' fill='%s'><title>prefetch %s: %.1f msg/s</title></circle>\n",
			xOf(p.Prefetch), yT(p.Throughput), throughputColor, prefetchLabel(p.Prefetch), p.Throughput)
		if p.HeldBytesPeak > 0 {
			fmt.Fprintf(&b, "<rect x='%.1f' y='%.1f' width='6' height='6' fill='%s'><title>prefetch %s: %s held</title></rect>\n",
				xOf(p.Prefetch)-3, yM(float64(p.HeldBytesPeak))-3, memoryColor, prefetchLabel(p.Prefetch), formatBytes(p.HeldBytesPeak))
		}
	}
	// Legend, bottom right inside the frame.
	lx, ly := x1-200, y0-44
	fmt.Fprintf(&b, "<rect x='%.1f' y='%.1f' width='190' height='36' fill='white' stroke='#ccc'/>\n", lx, ly)
	fmt.Fprintf(&b, "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='%s' stroke-width='2'/><text x='%.1f' y='%.1f'>throughput</text>\n", lx+8, ly+12, lx+32, ly+12, throughputColor, lx+38, ly+16)
	fmt.Fprintf(&b, "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='%s' stroke-width='2' stroke-dasharray='6 3'/><text x='%.1f' y='%.1f'>client memory (peak)</text>\n", lx+8, ly+27, lx+32, ly+27, memoryColor, lx+38, ly+31)
	b.WriteString("</svg>\n")
	return b.Bytes()
}

// decade labels 10^d bytes with a decimal unit: 1kB, 10kB, 100kB, 1MB.
func decade(d float64) string {
	units := []string{"B", "kB", "MB", "GB", "TB"}
	i := min(int(d)/3, len(units)-1)
	return fmt.Sprintf("%g%s", math.Pow(10, d-float64(3*i)), units[i])
}

// niceStep rounds a step up to 1, 2 or 5 times a power of ten.
func niceStep(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// formatCount prints an axis value: 12000 as 12k.
func formatCount(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%gM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%gk", v/1e3)
	}
	return fmt.Sprintf("%g", v)
}
