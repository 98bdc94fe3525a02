package sim

import "strings"

// topicTrie holds a topic exchange's bindings as RabbitMQ keeps them
// (rabbit_db_topic_exchange, its trie of binding key words): each binding
// key is a path of words from the root, "*" and "#" words included, and
// the node where it ends holds its destinations. Routing walks only the
// paths a routing key can take, so a publish costs what its words and the
// bindings that can match them cost, not what the number of bindings
// does.
type topicTrie struct {
	root trieNode
	// nodes counts the nodes below the root: at most the words of all the
	// binding keys. The walk's bound (match) is in nodes.
	nodes int
}

// trieNode is one word of one or more binding keys.
type trieNode struct {
	parent *trieNode
	word   string
	// lit is the child of the one literal word below, words the children
	// by literal word when there are more (a comparison is cheaper than
	// a map's hash, and most nodes have one); star and hash the "*" and
	// "#" children.
	lit        *trieNode
	words      map[string]*trieNode
	star, hash *trieNode
	// dests are the destinations of the binding keys that end here.
	dests destList
	// walk and from remember, for a "#" node, the routing keys it was
	// matched against in walk number walk: every suffix of the key's words
	// from word from on (see topicWalk.skip).
	walk uint64
	from int
}

// splitTopic appends the words of a routing key or binding key to buf.
// An empty key has no words at all (RabbitMQ's split_topic_key(<<>>) is
// []), while "." is two empty words: "*" does not match the empty key,
// "*.*" matches "." (checked against RabbitMQ 3.10.8).
func splitTopic(key string, buf []string) []string {
	if key == "" {
		return buf
	}
	for {
		i := strings.IndexByte(key, '.')
		if i < 0 {
			return append(buf, key)
		}
		buf = append(buf, key[:i])
		key = key[i+1:]
	}
}

// child returns n's child for word, nil if there is none.
func (n *trieNode) child(word string) *trieNode {
	switch word {
	case "*":
		return n.star
	case "#":
		return n.hash
	}
	return n.literal(word)
}

// literal returns n's child for the literal word w, nil if there is none.
func (n *trieNode) literal(w string) *trieNode {
	if n.lit != nil {
		if n.lit.word == w {
			return n.lit
		}
		return nil
	}
	return n.words[w]
}

// addLiteral makes c a literal child of n.
func (n *trieNode) addLiteral(c *trieNode) {
	switch {
	case n.words != nil:
		n.words[c.word] = c
	case n.lit == nil:
		n.lit = c
	default:
		n.words = map[string]*trieNode{n.lit.word: n.lit, c.word: c}
		n.lit = nil
	}
}

// dropLiteral removes n's literal child c.
func (n *trieNode) dropLiteral(c *trieNode) {
	if n.lit == c {
		n.lit = nil
		return
	}
	delete(n.words, c.word)
	if len(n.words) == 1 {
		for _, only := range n.words {
			n.lit = only
		}
		n.words = nil
	}
}

// leaf reports whether n has no children.
func (n *trieNode) leaf() bool {
	return n.lit == nil && n.words == nil && n.star == nil && n.hash == nil
}

// add binds destination d with binding key words.
func (t *topicTrie) add(words []string, d destination) {
	n := &t.root
	for _, w := range words {
		c := n.child(w)
		if c == nil {
			c = &trieNode{parent: n, word: w}
			switch w {
			case "*":
				n.star = c
			case "#":
				n.hash = c
			default:
				n.addLiteral(c)
			}
			t.nodes++
		}
		n = c
	}
	n.dests.add(d)
}

// remove drops one binding of destination d with binding key words, and
// the nodes no binding key needs any more.
func (t *topicTrie) remove(words []string, d destination) {
	n := &t.root
	for _, w := range words {
		if n = n.child(w); n == nil {
			return
		}
	}
	n.dests.remove(d)
	for n != &t.root && n.dests.len() == 0 && n.leaf() {
		p := n.parent
		switch n.word {
		case "*":
			p.star = nil
		case "#":
			p.hash = nil
		default:
			p.dropLiteral(n)
		}
		t.nodes--
		n = p
	}
}

// topicWalk matches one routing key against a trie, as
// rabbit_db_topic_exchange:trie_match/8 does: at each node the key's next
// word, then "*", take one word; "#" takes zero or more. RabbitMQ 4.3.5
// added its memo of visited states to that walk (a '#' binding key that
// repeats made it exponential in the key's words); this walk keeps the
// same memo, on every release, as a suffix per "#" node. So each (node,
// word) state is visited at most once, and matching a key of w words
// visits at most (nodes + 1) × (w + 1) states, each in constant time
// (TestTopicWalkBound).
//
// That bound grows with the bindings: 1,000 binding keys "#.#" and 125
// "a" or "*" words (which 4.3 accepts) and a key of 128 "a" words take
// 7.3 million states. RabbitMQ spends that time in the publishing
// channel's process; amqpsim, whose broker is one lock, would hold every
// other connection meanwhile. So one publish visits at most
// routeStateBudget states, its keys and exchanges together, and a
// publish that would visit more is refused (route).
type topicWalk struct {
	id    uint64 // the number of the last walk, unique in the broker
	words []string
	visit func(destination)
	// states counts the (node, word) states visited; past budget the walk
	// stops, and over is set.
	states, budget int
	over           bool
}

// routeStateBudget is the most topic trie states one publish may visit:
// a few hundred milliseconds of the broker at most (docs/benchmarks.md,
// "Routing's bound"), hundreds of times what any routing that is not an
// attack takes (a key of three words over 100,000 bindings: under 20).
const routeStateBudget = 1 << 22

// match visits the destinations of every binding key that matches the
// walk's words; a destination bound by several keys is visited once per
// key. Each match is a walk of its own (a new id).
func (w *topicWalk) match(t *topicTrie) {
	w.id++
	w.node(&t.root, 0)
}

// node matches the node n, reached with words[i:] left.
func (w *topicWalk) node(n *trieNode, i int) {
	if w.states++; w.states > w.budget {
		w.over = true
		return
	}
	if i == len(w.words) {
		for _, d := range n.dests.items {
			w.visit(d.dest)
		}
	} else {
		if c := n.literal(w.words[i]); c != nil {
			w.node(c, i+1)
		}
		if n.star != nil {
			w.node(n.star, i+1)
		}
	}
	if n.hash != nil {
		w.skip(n.hash, i)
	}
}

// skip matches the "#" node h, reached with words[i:] left: h is matched
// with each suffix words[j:], j ≥ i (trie_match_skip_any/8). Within one
// walk the suffixes h was matched with always run to the end of the key:
// h.from, the first word of the longest. A later arrival from word i
// matches only words i to h.from - 1, since h is never reached again
// while it is being matched (the trie is a tree, and the walk goes down).
func (w *topicWalk) skip(h *trieNode, i int) {
	end := len(w.words) + 1
	if h.walk == w.id {
		end = h.from
	}
	if i >= end {
		return
	}
	h.walk, h.from = w.id, i
	for j := i; j < end && !w.over; j++ {
		w.node(h, j)
	}
}

// countHashWords returns how many words of a binding key are "#"
// (rabbit_exchange_type_topic:count_hash_wildcards/1).
func countHashWords(key string) int {
	n := 0
	for _, w := range splitTopic(key, nil) {
		if w == "#" {
			n++
		}
	}
	return n
}

// destList is a set of destinations, each with the number of bindings
// that put it there (a destination bound with one key twice, by
// different arguments), in no particular order: routing sorts what it
// reaches (route). Adding and removing cost nothing in its size.
type destList struct {
	items []destCount
	// index is each destination's place in items, kept once items is
	// longer than destListScan.
	index map[destination]int
}

type destCount struct {
	dest destination
	n    int
}

// destListScan is how many destinations a destList searches one by one
// before it keeps an index.
const destListScan = 8

func (l *destList) len() int { return len(l.items) }

// find returns d's place in l, -1 if it is not there.
func (l *destList) find(d destination) int {
	if l.index != nil {
		if i, ok := l.index[d]; ok {
			return i
		}
		return -1
	}
	for i, e := range l.items {
		if e.dest == d {
			return i
		}
	}
	return -1
}

// add counts one more binding to d.
func (l *destList) add(d destination) {
	if i := l.find(d); i >= 0 {
		l.items[i].n++
		return
	}
	l.items = append(l.items, destCount{dest: d, n: 1})
	switch {
	case l.index != nil:
		l.index[d] = len(l.items) - 1
	case len(l.items) > destListScan:
		l.index = make(map[destination]int, len(l.items))
		for i, e := range l.items {
			l.index[e.dest] = i
		}
	}
}

// remove counts one binding to d less, dropping d with its last.
func (l *destList) remove(d destination) {
	i := l.find(d)
	if i < 0 {
		return
	}
	if l.items[i].n--; l.items[i].n > 0 {
		return
	}
	last := len(l.items) - 1
	if i != last {
		l.items[i] = l.items[last]
		if l.index != nil {
			l.index[l.items[i].dest] = i
		}
	}
	l.items[last] = destCount{}
	l.items = l.items[:last]
	if l.index != nil {
		delete(l.index, d)
		if len(l.items) == 0 {
			l.index = nil
		}
	}
	if len(l.items) == 0 {
		l.items = nil
	}
}
