package channel

import "sort"

// ledger holds unacked deliveries in tag order. Entries are appended with
// increasing tags; a settled entry becomes a hole that keeps its tag (so the
// binary search by tag still works) and has no Queue. Holes are reclaimed
// once the entries before them are gone, or when they outnumber live ones.
type ledger struct {
	entries []Delivery // tag 0 marks a hole
	start   int        // entries[:start] are holes already passed
	live    int
}

func (l *ledger) len() int { return l.live }

func (l *ledger) push(d Delivery) {
	l.entries = append(l.entries, d)
	l.live++
}

func (l *ledger) oldest() *Delivery {
	l.trim()
	if l.live == 0 {
		return nil
	}
	return &l.entries[l.start]
}

func (l *ledger) find(tag uint64) (int, bool) {
	es := l.entries[l.start:]
	i := sort.Search(len(es), func(i int) bool { return es[i].Tag >= tag })
	if i < len(es) && es[i].Tag == tag && es[i].Queue != nil {
		return l.start + i, true
	}
	return 0, false
}

func (l *ledger) take(i int) Delivery {
	d := l.entries[i]
	l.entries[i] = Delivery{Tag: d.Tag} // a hole keeps its tag for the search
	l.live--
	l.trim()
	return d
}

func (l *ledger) takeThrough(i int, out []Delivery) []Delivery {
	for j := l.start; j <= i; j++ {
		if l.entries[j].Queue != nil {
			out = append(out, l.entries[j])
			l.entries[j] = Delivery{Tag: l.entries[j].Tag}
			l.live--
		}
	}
	l.trim()
	return out
}

func (l *ledger) takeAll() []Delivery {
	out := l.all()
	*l = ledger{}
	return out
}

func (l *ledger) all() []Delivery {
	out := make([]Delivery, 0, l.live)
	for _, d := range l.entries[l.start:] {
		if d.Queue != nil {
			out = append(out, d)
		}
	}
	return out
}

// trim drops leading holes and compacts when holes dominate.
func (l *ledger) trim() {
	for l.start < len(l.entries) && l.entries[l.start].Queue == nil {
		l.entries[l.start] = Delivery{}
		l.start++
	}
	if l.start == len(l.entries) {
		l.entries, l.start = l.entries[:0], 0
		return
	}
	if holes := len(l.entries) - l.start - l.live; l.start > 1024 && l.start > len(l.entries)/2 || holes > 1024 && holes > 2*l.live {
		kept := l.entries[:0]
		for _, d := range l.entries[l.start:] {
			if d.Queue != nil {
				kept = append(kept, d)
			}
		}
		clear(l.entries[len(kept):])
		l.entries, l.start = kept, 0
	}
}
