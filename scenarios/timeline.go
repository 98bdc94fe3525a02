package scenarios

import (
	"fmt"
	"strings"
)

// Timeline renders, per consumer (and per channel for basic.get), what it
// held and when: each delivery with the step lines (and virtual times) it
// was held between, and how it ended.
func (r *Result) Timeline() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d steps", r.Scenario.Name, len(r.Steps))
	if r.End > 0 {
		fmt.Fprintf(&b, ", virtual time 0s to %s", r.End)
	}
	b.WriteString("\n")
	for _, o := range r.owners() {
		b.WriteString(o.header(r))
		b.WriteString("\n")
		hs := r.heldBy(o.label)
		if len(hs) == 0 {
			b.WriteString("    nothing\n")
		}
		for _, h := range hs {
			fmt.Fprintf(&b, "    %-24s %s -> %s\n", describe(h.Msg, h.Tag, h.Redelivered), r.at(h.From), r.until(h.Until, h.How))
		}
	}
	return b.String()
}

// owner is a timeline row: a consumer, or a channel's basic.get.
type owner struct {
	label string
	c     *Consumer // nil for basic.get
}

func (o owner) header(r *Result) string {
	if o.c == nil {
		return o.label
	}
	c := o.c
	end := "end (still consuming)"
	if c.Until >= 0 {
		end = r.until(c.Until, c.How)
	}
	life := fmt.Sprintf("consuming %s -> %s", r.at(c.From), end)
	return fmt.Sprintf("%s (channel %s, queue %s, %s): %s", c.Label, c.Channel, word(c.Queue), window(c), life)
}

// owners lists the consumers in creation order, then the channels that got
// deliveries by basic.get.
func (r *Result) owners() []owner {
	var out []owner
	seen := map[string]bool{}
	for _, c := range r.Consumers {
		if !seen[c.Label] {
			seen[c.Label] = true
			out = append(out, owner{label: c.Label, c: c})
		}
	}
	for _, h := range r.Holdings {
		if !seen[h.Consumer] {
			seen[h.Consumer] = true
			out = append(out, owner{label: h.Consumer})
		}
	}
	return out
}

func (r *Result) heldBy(label string) []*Holding {
	var out []*Holding
	for _, h := range r.Holdings {
		if h.Consumer == label {
			out = append(out, h)
		}
	}
	return out
}

// at names a step by its line, with the virtual time when the clock moved.
func (r *Result) at(step int) string {
	if step < 0 || step >= len(r.Steps) {
		return "end"
	}
	s := r.Steps[step]
	if r.End > 0 {
		return fmt.Sprintf("line %d (%s)", s.Line, s.At)
	}
	return fmt.Sprintf("line %d", s.Line)
}

func (r *Result) until(step int, how string) string {
	if step < 0 {
		return "end (still held)"
	}
	return r.at(step) + " " + how
}
