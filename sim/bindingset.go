package sim

import (
	"cmp"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/amqpsim/amqpsim/protocol"
)

// binding is one binding of an exchange.
type binding struct {
	id   bindingID
	args Table
	// seq orders an exchange's bindings as they were made, the order in
	// which they are listed and exported.
	seq uint64
	// pos is the binding's place in its bindingSet's list, destPos in
	// its byDest list.
	pos, destPos int
}

// bindingID is what makes a binding itself: its destination, routing key
// and arguments (argsIdentity), as RabbitMQ's #binding{} record. Binding
// it again changes nothing.
type bindingID struct {
	dest destination
	key  string
	args string
}

func (bd *binding) dest() destination { return bd.id.dest }
func (bd *binding) key() string       { return bd.id.key }

// bindingSet is an exchange's bindings: a list to route and list by, and
// indexes to find one by its identity and all of those to one destination
// (RabbitMQ's rabbit_route and rabbit_reverse_route tables), so that
// binding, unbinding and deleting a destination cost nothing in the number
// of bindings.
type bindingSet struct {
	list   []*binding // in no particular order; see seq
	byID   map[bindingID]*binding
	byDest map[destination][]*binding
	seq    uint64
}

func (s *bindingSet) len() int { return len(s.list) }

// sorted returns the bindings in the order they were made.
func (s *bindingSet) sorted() []*binding {
	out := slices.Clone(s.list)
	slices.SortFunc(out, func(a, b *binding) int { return cmp.Compare(a.seq, b.seq) })
	return out
}

// add adds a binding, reporting false if it was there.
func (s *bindingSet) add(id bindingID, args Table) bool {
	if _, ok := s.byID[id]; ok {
		return false
	}
	if s.byID == nil {
		s.byID, s.byDest = map[bindingID]*binding{}, map[destination][]*binding{}
	}
	s.seq++
	bd := &binding{id: id, args: args, seq: s.seq, pos: len(s.list), destPos: len(s.byDest[id.dest])}
	s.list = append(s.list, bd)
	s.byID[id] = bd
	s.byDest[id.dest] = append(s.byDest[id.dest], bd)
	return true
}

// remove removes a binding that is in the set.
func (s *bindingSet) remove(bd *binding) {
	delete(s.byID, bd.id)
	last := s.list[len(s.list)-1]
	s.list[bd.pos], last.pos = last, bd.pos
	s.list[len(s.list)-1] = nil
	s.list = s.list[:len(s.list)-1]
	ds := s.byDest[bd.id.dest]
	last = ds[len(ds)-1]
	ds[bd.destPos], last.destPos = last, bd.destPos
	ds[len(ds)-1] = nil
	if ds = ds[:len(ds)-1]; len(ds) == 0 {
		delete(s.byDest, bd.id.dest)
	} else {
		s.byDest[bd.id.dest] = ds
	}
}

// argsIdentity is a binding's arguments as one string that two tables
// share exactly when they hold the same keys with values of the same
// types and texts (sameFieldValue): each key, its value's type and its
// value (fieldText), sorted by key, each part preceded by its length. No
// arguments is "".
func argsIdentity(args Table) string {
	if len(args) == 0 {
		return ""
	}
	var b strings.Builder
	part := func(s string) {
		b.WriteString(strconv.Itoa(len(s)))
		b.WriteByte(':')
		b.WriteString(s)
	}
	for _, k := range slices.Sorted(maps.Keys(args)) {
		part(k)
		part(protocol.TypeName(args[k]))
		part(fieldText(args[k]))
	}
	return b.String()
}

// bind adds a binding to d with key and args; binding it again changes
// nothing.
func (x *exchange) bind(d destination, key string, args Table) {
	if !x.bindings.add(bindingID{dest: d, key: key, args: argsIdentity(args)}, args) {
		return
	}
	if d.x != nil {
		x.toExchanges++
	}
	d.sources().add(x)
	switch x.kind {
	case "direct":
		l := x.direct[key]
		if l == nil {
			l = &destList{}
			x.direct[key] = l
		}
		l.add(d)
	case "topic":
		x.topic.add(splitTopic(key, nil), d)
	}
}

// unbind removes the binding to d with key and args, reporting whether
// there was one.
func (x *exchange) unbind(d destination, key string, args Table) (removed bool) {
	bd := x.bindings.byID[bindingID{dest: d, key: key, args: argsIdentity(args)}]
	if bd != nil {
		x.drop(bd)
	}
	return bd != nil
}

// drop removes a binding of x.
func (x *exchange) drop(bd *binding) {
	x.bindings.remove(bd)
	d, key := bd.dest(), bd.key()
	if d.x != nil {
		x.toExchanges--
	}
	d.sources().drop(x)
	switch x.kind {
	case "direct":
		if l := x.direct[key]; l != nil {
			if l.remove(d); l.len() == 0 {
				delete(x.direct, key)
			}
		}
	case "topic":
		x.topic.remove(splitTopic(key, nil), d)
	}
}

// unbindAll drops every binding to d (its queue or exchange was deleted)
// and reports whether there was one.
func (x *exchange) unbindAll(d destination) bool {
	bds := x.bindings.byDest[d]
	if len(bds) == 0 {
		return false
	}
	for _, bd := range slices.Clone(bds) {
		x.drop(bd)
	}
	return true
}

// sourceCounts counts the bindings to a queue or exchange by their source
// exchange, as RabbitMQ's reverse routes do: deleting the destination
// finds them at once.
type sourceCounts map[*exchange]int

// sources returns the counts of d's bindings.
func (d destination) sources() *sourceCounts {
	if d.x != nil {
		return &d.x.sources
	}
	return &d.q.sources
}

// add counts one more binding from src.
func (s *sourceCounts) add(src *exchange) {
	if *s == nil {
		*s = sourceCounts{}
	}
	(*s)[src]++
}

// drop counts one binding from src less.
func (s *sourceCounts) drop(src *exchange) {
	if (*s)[src]--; (*s)[src] <= 0 {
		delete(*s, src)
	}
}

// match passes to visit the destinations x's bindings give a message with
// routing key key; the default exchange reaches the queue named key. A
// destination may come more than once. The topic walk w (its id, and its
// words buffer) is the caller's.
func (x *exchange) match(v *vhost, key string, headers Table, w *topicWalk) {
	switch {
	case x.name == "":
		if q, ok := v.queues[key]; ok {
			w.visit(destination{q: q})
		}
	case x.kind == "direct":
		if l := x.direct[key]; l != nil {
			for _, e := range l.items {
				w.visit(e.dest)
			}
		}
	case x.kind == "fanout":
		for _, bd := range x.bindings.list {
			w.visit(bd.dest())
		}
	case x.kind == "topic":
		w.words = splitTopic(key, w.words[:0])
		w.match(x.topic)
		clear(w.words)
	case x.kind == "headers":
		for _, bd := range x.bindings.list {
			if headersMatch(bd.args, headers) {
				w.visit(bd.dest())
			}
		}
	}
}
