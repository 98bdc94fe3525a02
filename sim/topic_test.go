package sim

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/queue"
)

// naiveTopicMatch is the topic matcher amqpsim had before the trie, kept
// as the reference the trie is checked against: a binding key and a
// routing key, split into words, compared word by word, "#" trying every
// number of words (exponential in the "#" words; obviously right).
func naiveTopicMatch(pattern, key string) bool {
	return naiveMatchWords(splitTopic(pattern, nil), splitTopic(key, nil))
}

func naiveMatchWords(p, k []string) bool {
	for len(p) > 0 {
		switch p[0] {
		case "#":
			for len(p) > 0 && p[0] == "#" {
				p = p[1:]
			}
			if len(p) == 0 {
				return true
			}
			for i := 0; i <= len(k); i++ {
				if naiveMatchWords(p, k[i:]) {
					return true
				}
			}
			return false
		case "*":
			if len(k) == 0 {
				return false
			}
		default:
			if len(k) == 0 || k[0] != p[0] {
				return false
			}
		}
		p, k = p[1:], k[1:]
	}
	return len(k) == 0
}

// testRouter routes one key through one exchange, as Broker.route's
// matching does, and returns the queues reached, by name, and the trie
// states visited.
func testRouter(x *exchange, key string) (names []string, states int) {
	r := &testRouterState
	r.mark++
	r.out, r.walk.visit, r.walk.states, r.walk.budget = nil, r.take, 0, routeStateBudget
	x.match(nil, key, nil, &r.walk)
	for _, q := range r.out {
		names = append(names, q.Name())
	}
	slices.Sort(names)
	return names, r.walk.states
}

// testRouterState is testRouter's, kept from route to route as a
// broker's is (its marks and walk numbers go on).
var testRouterState router

// testQueues returns n queues named q0, q1, ... for bindings.
func testQueues(t testing.TB, n int) []*brokerQueue {
	b := New(Config{})
	var qs []*brokerQueue
	for i := range n {
		q, err := b.newQueue("/", fmt.Sprintf("q%d", i), queue.Options{})
		if err != nil {
			t.Fatal(err)
		}
		qs = append(qs, q)
	}
	return qs
}

// TestTopicTrieMatchesNaive: a topic exchange's trie routes every routing
// key to exactly the destinations the naive matcher finds among its live
// bindings, through random binds and unbinds (with and without
// arguments, so that a key can bind one queue twice), with "*", "#" and
// empty words; each route visits at most (nodes + 1) × (words + 1)
// states; and unbinding everything leaves an empty trie.
func TestTopicTrieMatchesNaive(t *testing.T) {
	qs := testQueues(t, 4)
	rapid.Check(t, func(t *rapid.T) {
		x := newExchange("t", "topic", ExchangeOptions{})
		word := rapid.SampledFrom([]string{"a", "b", "", "*", "#"})
		keyWord := rapid.SampledFrom([]string{"a", "b", ""})
		genKey := func(w *rapid.Generator[string], label string) string {
			n := rapid.IntRange(0, 6).Draw(t, label+"-words")
			if n == 0 {
				return ""
			}
			ws := make([]string, n)
			for i := range ws {
				ws[i] = w.Draw(t, label)
			}
			return strings.Join(ws, ".")
		}
		type live struct {
			q        int
			key      string
			withArgs bool
		}
		var bound []live
		args := func(with bool) Table {
			if with {
				return Table{"x": int32(1)}
			}
			return nil
		}
		for range rapid.IntRange(1, 80).Draw(t, "steps") {
			switch rapid.IntRange(0, 3).Draw(t, "op") {
			case 0, 1:
				l := live{q: rapid.IntRange(0, len(qs)-1).Draw(t, "queue"), key: genKey(word, "binding"), withArgs: rapid.Bool().Draw(t, "args")}
				x.bind(destination{q: qs[l.q]}, l.key, args(l.withArgs))
				if !slices.Contains(bound, l) {
					bound = append(bound, l)
				}
			case 2:
				if len(bound) == 0 {
					continue
				}
				i := rapid.IntRange(0, len(bound)-1).Draw(t, "unbind")
				l := bound[i]
				x.unbind(destination{q: qs[l.q]}, l.key, args(l.withArgs))
				bound = slices.Delete(bound, i, i+1)
			case 3:
				key := genKey(keyWord, "routing")
				var want []string
				for _, l := range bound {
					if name := qs[l.q].Name(); naiveTopicMatch(l.key, key) && !slices.Contains(want, name) {
						want = append(want, name)
					}
				}
				slices.Sort(want)
				got, states := testRouter(x, key)
				if !slices.Equal(got, want) {
					t.Fatalf("routing key %q: trie reaches %v, the naive matcher %v (bindings %v)", key, got, want, bound)
				}
				if bound := (x.topic.nodes + 1) * (len(splitTopic(key, nil)) + 1); states > bound {
					t.Fatalf("routing key %q visited %d states, more than (nodes + 1) × (words + 1) = %d", key, states, bound)
				}
			}
		}
		for _, l := range bound {
			x.unbind(destination{q: qs[l.q]}, l.key, args(l.withArgs))
		}
		if x.topic.nodes != 0 || x.bindings.len() != 0 || !x.topic.root.leaf() || x.topic.root.dests.len() != 0 {
			t.Fatalf("after unbinding everything: %d trie nodes, %d bindings", x.topic.nodes, x.bindings.len())
		}
	})
}

// TestTopicWalkBound: the attack of issue 27, a binding key of 20 "#.a"
// pairs and "b" (which RabbitMQ accepts up to 4.2: TopicMaxHashWords)
// and a publish with a key of 40 words, stalled the broker for good under
// the naive matcher, which tries every way of giving words to each "#".
// The trie's walk visits each (node, word) state once: here at most
// (41 + 1) × (40 + 1) = 1,722 states for a key of 40 "a" words (which
// does not match: no "b"), and a key that ends in "b" matches. Counted,
// not timed.
func TestTopicWalkBound(t *testing.T) {
	b := New(Config{Version: V3_10})
	conn := b.Connect("attacker")
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.ExchangeDeclare("tx", "topic", ExchangeOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDeclare("q", QueueOptions{}); err != nil {
		t.Fatal(err)
	}
	attack := strings.Repeat("#.a.", 20) + "b"
	if err := ch.QueueBind("q", attack, "tx", nil); err != nil {
		t.Fatal(err)
	}
	nodes := b.vhosts["/"].exchanges["tx"].topic.nodes
	if nodes != 41 {
		t.Fatalf("%d trie nodes for %q, want 41 (one per word)", nodes, attack)
	}
	for _, tc := range []struct {
		key   string
		ready int
	}{
		{strings.TrimSuffix(strings.Repeat("a.", 40), "."), 0},
		{strings.Repeat("a.", 39) + "b", 1},
	} {
		if err := ch.Publish("tx", tc.key, PublishOptions{}, Message{Body: []byte("m")}); err != nil {
			t.Fatal(err)
		}
		states := b.router.walk.states
		if bound := (nodes + 1) * (40 + 1); states > bound {
			t.Errorf("key %q: %d states, above the bound %d", tc.key, states, bound)
		}
		if s, _ := b.QueueStats("/", "q"); s.Ready != tc.ready {
			t.Errorf("key %q: %d ready, want %d", tc.key, s.Ready, tc.ready)
		}
		t.Logf("key of 40 words: %d states visited", states)
	}
}

// TestRouteStateBudget: a publish whose topic matching would visit more
// states than the broker's budget is refused with 541 INTERNAL_ERROR,
// having enqueued nothing and visited no more than the budget (the
// connection closes, as for RabbitMQ's other 541s); the default budget
// admits the attack's 1,241 states and a CC header of 8,000 keys of three
// words over it. Here the budget is lowered, to keep the test small.
func TestRouteStateBudget(t *testing.T) {
	b := New(Config{Version: V3_10})
	conn := b.Connect("c")
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	ch.ExchangeDeclare("tx", "topic", ExchangeOptions{})
	ch.QueueDeclare("q", QueueOptions{})
	if err := ch.QueueBind("q", strings.Repeat("#.a.", 20)+"b", "tx", nil); err != nil {
		t.Fatal(err)
	}
	key := strings.Repeat("a.", 39) + "b"
	b.router.walk.budget = 1000
	err = ch.Publish("tx", key, PublishOptions{}, Message{Body: []byte("m")})
	var perr *protocol.Error
	if !errors.As(err, &perr) || perr.Code != protocol.InternalError || !strings.Contains(perr.Text, "more than 1000 topic binding states") {
		t.Fatalf("publish over the budget: %v, want 541 naming the budget", err)
	}
	if states := b.router.walk.states; states > 1001 {
		t.Errorf("%d states visited, past the budget of 1000", states)
	}
	if s, _ := b.QueueStats("/", "q"); s.Ready != 0 {
		t.Errorf("%d messages enqueued by a refused publish", s.Ready)
	}

	b.router.walk.budget = routeStateBudget
	ch, _ = b.Connect("c2").Channel()
	if err := ch.Publish("tx", key, PublishOptions{}, Message{Body: []byte("m")}); err != nil {
		t.Fatalf("the attack's publish under the default budget: %v", err)
	}
	cc := make([]any, 8000)
	for i := range cc {
		cc[i] = fmt.Sprintf("a.%d.b", i)
	}
	if err := ch.Publish("tx", "x", PublishOptions{}, Message{Body: []byte("m"), Properties: Properties{Headers: Table{"CC": cc}}}); err != nil {
		t.Fatalf("8,000 CC keys under the default budget: %v", err)
	}
	if s, _ := b.QueueStats("/", "q"); s.Ready != 1 {
		t.Errorf("%d ready, want the attack key's publish (the CC keys match nothing)", s.Ready)
	}
}
