package channel

import "sort"

// ledger holds unacked deliveries in tag order. Entries are appended with
// increasing tags; a settled entry becomes a hole that keeps its tag (so the
// binary search by tag still works). Holes are reclaimed once the entries
// before them are gone, or when they outnumber live ones.
type ledger[R any] struct {
	entries []entry[R]
	start   int // entries[:start] are holes already passed
	live    int
}

type entry[R any] struct {
	Delivery[R]
	live bool
}

func (l *ledger[R]) len() int { return l.live }

func (l *ledger[R]) push(d Delivery[R]) {
	l.entries = append(l.entries, entry[R]{Delivery: d, live: true})
	l.live++
}

func (l *ledger[R]) oldest() *Delivery[R] {
	l.trim()
	if l.live == 0 {
		return nil
	}
	return &l.entries[l.start].Delivery
}

func (l *ledger[R]) find(tag uint64) (int, bool) {
	if s := l.start; s < len(l.entries) && l.entries[s].Tag == tag {
		// The oldest, the common case: small enough to inline.
		return s, l.entries[s].live
	}
	return l.search(tag)
}

// search is find by binary search.
func (l *ledger[R]) search(tag uint64) (int, bool) {
	es := l.entries[l.start:]
	i := sort.Search(len(es), func(i int) bool { return es[i].Tag >= tag })
	if i < len(es) && es[i].Tag == tag && es[i].live {
		return l.start + i, true
	}
	return 0, false
}

// hole appends entries[i]'s delivery to out and turns the entry into a
// hole. It appends rather than returns: a Delivery is large, and copied
// once this way.
func (l *ledger[R]) hole(i int, out []Delivery[R]) []Delivery[R] {
	e := &l.entries[i]
	out = append(out, e.Delivery)
	*e = entry[R]{Delivery: Delivery[R]{Tag: e.Tag}} // a hole keeps its tag for the search
	l.live--
	return out
}

// take appends the delivery of entries[i] to out and removes it.
func (l *ledger[R]) take(i int, out []Delivery[R]) []Delivery[R] {
	if i != l.start {
		out = l.hole(i, out)
		l.trim()
		return out
	}
	// The oldest, the common case, leaves no hole: the entry is cleared
	// once, and the start moves past it.
	out = append(out, l.entries[i].Delivery)
	l.entries[i] = entry[R]{}
	l.live--
	l.start++
	if l.live == 0 {
		// Emptied, as a ledger settled in order mostly is: what is
		// left are holes, which hold nothing but their tags, and there
		// is nothing to trim.
		l.entries, l.start = l.entries[:0], 0
		return out
	}
	l.trim()
	return out
}

func (l *ledger[R]) takeThrough(i int, out []Delivery[R]) []Delivery[R] {
	for j := l.start; j <= i; j++ {
		if l.entries[j].live {
			out = l.hole(j, out)
		}
	}
	l.trim()
	return out
}

func (l *ledger[R]) takeAll() []Delivery[R] {
	out := l.all()
	*l = ledger[R]{}
	return out
}

func (l *ledger[R]) all() []Delivery[R] {
	out := make([]Delivery[R], 0, l.live)
	for _, e := range l.entries[l.start:] {
		if e.live {
			out = append(out, e.Delivery)
		}
	}
	return out
}

// trim drops leading holes and compacts when holes dominate.
func (l *ledger[R]) trim() {
	for l.start < len(l.entries) && !l.entries[l.start].live {
		l.entries[l.start] = entry[R]{}
		l.start++
	}
	if l.start == len(l.entries) {
		l.entries, l.start = l.entries[:0], 0
		return
	}
	if holes := len(l.entries) - l.start - l.live; l.start > 1024 && l.start > len(l.entries)/2 || holes > 1024 && holes > 2*l.live {
		kept := l.entries[:0]
		for _, e := range l.entries[l.start:] {
			if e.live {
				kept = append(kept, e)
			}
		}
		clear(l.entries[len(kept):])
		l.entries, l.start = kept, 0
	}
}
