package scenarios

import (
	"bytes"
	"fmt"
	"html"
	"regexp"
	"strconv"
	"strings"
)

// SVG layout, in pixels.
const (
	svgMargin  = 16
	svgStepW   = 330 // the step column on the left
	svgColW    = 170
	svgHeadH   = 76 // a holder's head has three lines: its label, channel and window
	svgArrowH  = 18
	svgRowPad  = 10
	svgFont    = "font-family='DejaVu Sans Mono, Menlo, Consolas, monospace'"
	svgTitleH  = 40
	svgLegendH = 30
	svgLineH   = 16 // the row's first line: the step text and the holders' counts
	svgNoteH   = 14 // a close or cancel under the step text
	svgRightW  = 110
)

// column is a lifeline: a queue or a holder (a consumer, or a channel's
// basic.get).
type column struct {
	name  string
	queue bool
	c     *Consumer
	x     int
}

// arrow is one message between lifelines in one step.
type arrow struct {
	from, to string
	label    string
	color    string
	dashed   bool
}

// SVG draws the run as a sequence diagram, in the spirit of seed 000's: a
// lifeline per queue and per consumer, one row per step (its line, text and
// virtual time on the left), deliveries as arrows from the queue to the
// consumer (redeliveries in orange), settlements as arrows back (acks green,
// requeues orange and dashed, drops red), what each consumer holds after the
// step against its prefetch, and a cross where a consumer ends.
func (r *Result) SVG() []byte {
	cols := r.columns()
	byName := map[string]*column{}
	for i := range cols {
		cols[i].x = svgMargin + svgStepW + i*svgColW + svgColW/2
		byName[cols[i].name] = &cols[i]
	}
	rows := make([][]arrow, len(r.Steps))
	for _, h := range r.Holdings {
		label := describe(h.Msg, h.Tag, h.Redelivered)
		color := "#1f5fbf"
		if h.Redelivered {
			color = "#d9730d"
		}
		if h.From >= 0 && h.From < len(rows) {
			rows[h.From] = append(rows[h.From], arrow{from: h.Queue, to: h.Consumer, label: label, color: color})
		}
		if h.Until >= 0 && h.Until < len(rows) && h.How != "no-ack" {
			a := arrow{from: h.Consumer, to: h.Queue}
			verb, _, _ := strings.Cut(h.How, " ")
			switch {
			case h.How == "acked":
				a.color, a.label = "#2e8b57", "ack "+word(h.Msg)
			case strings.HasSuffix(h.How, "drop"):
				a.color, a.label = "#c0392b", verb+" "+word(h.Msg)+" (drop)"
			case strings.Contains(h.How, "closed"):
				a.color, a.dashed, a.label = "#d9730d", true, word(h.Msg)+" back (close)"
			default:
				a.color, a.dashed, a.label = "#d9730d", true, verb+" "+word(h.Msg)+" (requeue)"
			}
			rows[h.Until] = append(rows[h.Until], a)
		}
	}
	// Row geometry.
	top := svgMargin + svgTitleH + svgHeadH
	ys := make([]int, len(rows)+1)
	y := top + 8
	notes := r.notes()
	for i, as := range rows {
		ys[i] = y
		y += svgLineH + max(len(as)*svgArrowH, len(notes[i])*svgNoteH) + svgRowPad
	}
	ys[len(rows)] = y
	width := svgMargin*2 + svgStepW + len(cols)*svgColW + svgRightW
	width = max(width, 640)
	height := y + svgLegendH + 20 + svgMargin

	var b bytes.Buffer
	fmt.Fprintf(&b, "<svg xmlns='http://www.w3.org/2000/svg' width='%d' height='%d' viewBox='0 0 %d %d' %s font-size='12'>\n", width, height, width, height, svgFont)
	fmt.Fprintf(&b, "<title>%s</title>\n", esc(r.Scenario.Name))
	b.WriteString("<defs><marker id='head' viewBox='0 0 10 10' refX='9' refY='5' markerWidth='7' markerHeight='7' orient='auto-start-reverse'><path d='M0,0 L10,5 L0,10 z' fill='context-stroke'/></marker></defs>\n")
	fmt.Fprintf(&b, "<rect width='%d' height='%d' fill='white'/>\n", width, height)
	fmt.Fprintf(&b, "<text x='%d' y='%d' font-size='16' font-weight='bold'>%s</text>\n", svgMargin, svgMargin+16, esc(r.Scenario.Name))
	if r.Scenario.Source != "" {
		fmt.Fprintf(&b, "<text x='%d' y='%d' fill='#666'>expectations from %s</text>\n", svgMargin, svgMargin+32, esc(r.Scenario.Source))
	}
	// Zebra rows and step texts.
	for i, st := range r.Steps {
		if i%2 == 0 {
			fmt.Fprintf(&b, "<rect x='%d' y='%d' width='%d' height='%d' fill='#f4f6f8'/>\n", svgMargin, ys[i]-4, width-2*svgMargin, ys[i+1]-ys[i])
		}
		text := fit(svgText(st.Text), 42, false)
		at := ""
		if r.End > 0 {
			at = " @" + st.At.String()
		}
		fmt.Fprintf(&b, "<text x='%d' y='%d'><tspan fill='#999'>%3d%s </tspan>%s</text>\n", svgMargin+4, ys[i]+11, st.Line, esc(at), esc(text))
		for j, n := range notes[i] {
			fmt.Fprintf(&b, "<text x='%d' y='%d' fill='#c0392b' font-size='11'>%s</text>\n", svgMargin+28, ys[i]+svgLineH+10+j*svgNoteH, esc(n))
		}
	}
	// Heads and lifelines. Each head's lines are cut to its box, the
	// middle elided (labels differ at their ends: worker-1, worker-2), so
	// that neighbours never overlap; the box's title has them whole.
	for _, c := range cols {
		fill, lines := "#dbe8fb", []string{"queue"}
		if !c.queue {
			fill, lines = "#e3f4e1", []string{"basic.get"}
			if c.c != nil {
				lines = []string{c.c.Channel, window(c.c)}
			}
		}
		hy := svgMargin + svgTitleH
		fmt.Fprintf(&b, "<g><title>%s</title>\n", esc(strings.Join(append([]string{c.name}, lines...), "\n")))
		fmt.Fprintf(&b, "<rect x='%d' y='%d' width='%d' height='%d' rx='6' fill='%s' stroke='#888'/>\n", c.x-svgColW/2+8, hy, svgColW-16, svgHeadH-16, fill)
		fmt.Fprintf(&b, "<text x='%d' y='%d' text-anchor='middle' font-weight='bold'>%s</text>\n", c.x, hy+19, esc(fit(c.name, svgHeadChars, true)))
		for j, l := range lines {
			fmt.Fprintf(&b, "<text x='%d' y='%d' text-anchor='middle' fill='#555' font-size='11'>%s</text>\n", c.x, hy+35+j*14, esc(fit(l, svgSubChars, true)))
		}
		b.WriteString("</g>\n")
		y0, y1 := top, ys[len(rows)]
		if c.c != nil {
			y0 = ys[c.c.From]
			if c.c.Until >= 0 {
				y1 = ys[c.c.Until+1] - svgRowPad
			}
			fmt.Fprintf(&b, "<line x1='%d' y1='%d' x2='%d' y2='%d' stroke='#ccc' stroke-dasharray='2 4'/>\n", c.x, top, c.x, y0)
		}
		fmt.Fprintf(&b, "<line x1='%d' y1='%d' x2='%d' y2='%d' stroke='#999' stroke-width='2'/>\n", c.x, y0, c.x, y1)
		if c.c != nil && c.c.Until >= 0 {
			fmt.Fprintf(&b, "<path d='M%d,%d l10,10 m0,-10 l-10,10' stroke='#c0392b' stroke-width='2'/>\n", c.x-5, y1-5)
			// How it ended, right of the cross, in the half column
			// that is the holder's own: at most two lines.
			for j, l := range wrap(c.c.How, svgHowChars, 2) {
				fmt.Fprintf(&b, "<text x='%d' y='%d' fill='#c0392b' font-size='10'>%s</text>\n", c.x+8, y1+4+j*11, esc(l))
			}
			// A cancelled consumer's deliveries stay on its channel: a
			// dashed line while it still holds some.
			if last := r.lastHeld(c.name); last == -1 || last > c.c.Until {
				y2 := ys[len(rows)]
				if last >= 0 {
					y2 = ys[last+1] - svgRowPad
				}
				fmt.Fprintf(&b, "<line x1='%d' y1='%d' x2='%d' y2='%d' stroke='#999' stroke-width='2' stroke-dasharray='4 3'/>\n", c.x, y1+5, c.x, y2)
			}
		}
	}
	// Arrows.
	for i, as := range rows {
		for j, a := range as {
			f, t := byName[a.from], byName[a.to]
			if f == nil || t == nil {
				continue
			}
			ay := ys[i] + svgLineH + 10 + j*svgArrowH
			dash := ""
			if a.dashed {
				dash = " stroke-dasharray='6 3'"
			}
			fmt.Fprintf(&b, "<line x1='%d' y1='%d' x2='%d' y2='%d' stroke='%s' stroke-width='1.5'%s marker-end='url(#head)'/>\n", f.x, ay, t.x, ay, a.color, dash)
			// The label sits just inside the consumer's end of the arrow,
			// clear of the lifelines it crosses.
			lx := max(f.x, t.x) - 10
			fmt.Fprintf(&b, "<text x='%d' y='%d' text-anchor='end' fill='%s' font-size='11'>%s</text>\n", lx, ay-3, a.color, esc(fit(svgText(a.label), svgLabelChars, false)))
		}
		// A queue's counts where a step observed them.
		if q, ok := r.Scenario.Steps[i].Op.(ShowQueue); ok && i < len(r.Got) && len(r.Got[i]) > 0 {
			if c := byName[q.Queue]; c != nil {
				text := strings.TrimPrefix(r.Got[i][0], word(q.Queue)+" ")
				if i := strings.Index(text, " consumers="); i > 0 {
					text = text[:i] // the lifelines show the consumers
				}
				text = strings.NewReplacer("ready=", "ready ", "unacked=", "unacked ").Replace(text)
				fmt.Fprintf(&b, "<rect x='%d' y='%d' width='%d' height='14' rx='3' fill='#dbe8fb' stroke='#888'/><text x='%d' y='%d' text-anchor='middle' font-size='10'>%s</text>\n",
					c.x-svgColW/2+6, ys[i], svgColW-12, c.x, ys[i]+10, esc(text))
			}
		}
		// What each consumer holds after the step.
		for _, c := range cols {
			if c.queue || c.c == nil || c.c.NoAck || i < c.c.From {
				continue
			}
			n := r.holding(c.name, i)
			if c.c.Until >= 0 && i >= c.c.Until && n == 0 {
				continue
			}
			text := fmt.Sprintf("%d", n)
			if c.c.Prefetch > 0 {
				text = fmt.Sprintf("%d/%d", n, c.c.Prefetch)
			}
			fill := "#ffffff"
			if c.c.Prefetch > 0 && n >= c.c.Prefetch {
				fill = "#fde2c8"
			}
			fmt.Fprintf(&b, "<rect x='%d' y='%d' width='30' height='14' rx='3' fill='%s' stroke='#999'/><text x='%d' y='%d' text-anchor='middle' font-size='10'>%s</text>\n",
				c.x+4, ys[i], fill, c.x+19, ys[i]+10, text)
		}
	}
	ly := ys[len(rows)] + 20
	legend := []struct{ color, text string }{{"#1f5fbf", "deliver"}, {"#d9730d", "redeliver / requeue"}, {"#2e8b57", "ack"}, {"#c0392b", "drop"}}
	x := svgMargin
	for _, l := range legend {
		fmt.Fprintf(&b, "<line x1='%d' y1='%d' x2='%d' y2='%d' stroke='%s' stroke-width='2' marker-end='url(#head)'/><text x='%d' y='%d'>%s</text>\n", x, ly, x+30, ly, l.color, x+36, ly+4, l.text)
		x += 36 + 8*len(l.text) + 24
	}
	fmt.Fprintf(&b, "<text x='%d' y='%d' fill='#555'>n/p: held unacked / prefetch, after the step</text>\n", svgMargin, ly+24)
	b.WriteString("</svg>\n")
	return b.Bytes()
}

// notes returns, per step, the broker's closes and cancels among its
// results, shortened to fit under the step.
func (r *Result) notes() [][]string {
	out := make([][]string, len(r.Steps))
	for i := range r.Steps {
		if i >= len(r.Got) {
			break
		}
		for _, l := range r.Got[i] {
			if !strings.Contains(l, "<- channel.close") && !strings.Contains(l, "<- connection.close") &&
				!strings.Contains(l, "<- basic.cancel") && !strings.HasPrefix(l, "! ") {
				continue
			}
			l = fit(svgText(strings.Replace(l, "<-", "←", 1)), 46, false)
			out[i] = append(out[i], l)
		}
	}
	return out
}

// columns lists the queues (in order of first use) then the holders.
func (r *Result) columns() []column {
	var out []column
	seen := map[string]bool{}
	addQ := func(q string) {
		if q != "" && !seen["q:"+q] {
			seen["q:"+q] = true
			out = append(out, column{name: q, queue: true})
		}
	}
	for _, q := range r.Queues {
		addQ(q)
	}
	for _, c := range r.Consumers {
		addQ(c.Queue)
	}
	for _, h := range r.Holdings {
		addQ(h.Queue)
	}
	for _, o := range r.owners() {
		out = append(out, column{name: o.label, c: o.c})
	}
	return out
}

// holding counts what a holder holds unsettled after step i.
func (r *Result) holding(label string, i int) int {
	n := 0
	for _, h := range r.Holdings {
		if h.Consumer == label && h.How != "no-ack" && h.From <= i && (h.Until < 0 || h.Until > i) {
			n++
		}
	}
	return n
}

// lastHeld returns the last step at which a holder settled or lost a
// delivery, -1 if it still holds some at the end, or -2 if it never held
// any.
func (r *Result) lastHeld(label string) int {
	last := -2
	for _, h := range r.Holdings {
		if h.Consumer != label || h.How == "no-ack" {
			continue
		}
		if h.Until < 0 {
			return -1
		}
		last = max(last, h.Until)
	}
	return last
}

func window(c *Consumer) string {
	switch {
	case c.NoAck:
		return "no-ack"
	case c.Prefetch > 0:
		return fmt.Sprintf("prefetch %d", c.Prefetch)
	}
	return "no prefetch"
}

func esc(s string) string { return html.EscapeString(s) }

// How many characters fit: in a head's box (bold 12 px, and 11 px), in
// the half column right of a lifeline (10 px), and in an arrow's label
// (11 px, at most the width of two columns).
const (
	svgHeadChars  = 20
	svgSubChars   = 22
	svgHowChars   = 12
	svgLabelChars = 48
)

// quoted matches a string the scenario format quotes ("{\"id\":1}").
var quoted = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)

// svgText is a step's or a result's text for the eye: a quoted word (a
// JSON body, say) in typographic quotes with its escapes undone, so that
// {"id":1} does not read "{\"id\":1}"; control characters show as ⏎, ⇥
// or ·.
func svgText(s string) string {
	return quoted.ReplaceAllStringFunc(s, func(q string) string {
		u, err := strconv.Unquote(q)
		if err != nil {
			return q
		}
		return "“" + strings.Map(func(r rune) rune {
			switch {
			case r == '\n':
				return '⏎'
			case r == '\t':
				return '⇥'
			case r < ' ' || r == 0x7f:
				return '·'
			}
			return r
		}, u) + "”"
	})
}

// fit cuts s to n characters with an ellipsis: in the middle, keeping
// both ends, or at the end.
func fit(s string, n int, middle bool) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	if !middle {
		return string(r[:n-1]) + "…"
	}
	head := (n - 1) / 2
	return string(r[:head]) + "…" + string(r[len(r)-(n-1-head):])
}

// wrap breaks s at spaces into at most max lines of n characters, the
// last cut to fit.
func wrap(s string, n, max int) []string {
	var lines []string
	cur := ""
	for _, w := range strings.Fields(s) {
		switch {
		case cur == "":
			cur = w
		case len([]rune(cur))+1+len([]rune(w)) <= n:
			cur += " " + w
		default:
			lines = append(lines, cur)
			cur = w
		}
	}
	if cur != "" {
		lines = append(lines, cur)
	}
	if len(lines) > max {
		lines = append(lines[:max-1], strings.Join(lines[max-1:], " "))
	}
	for i := range lines {
		lines[i] = fit(lines[i], n, false)
	}
	return lines
}
