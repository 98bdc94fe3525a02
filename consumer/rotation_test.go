package consumer_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/amqpsim/amqpsim/consumer"
)

// picks runs Pick n times, recording each delivery, and returns the tags ("-" for none).
func picks(r *consumer.Rotation[int], n int, allow func(*consumer.Consumer[int]) bool) []string {
	var out []string
	for i := 0; i < n; i++ {
		c := r.Pick(allow)
		if c == nil {
			out = append(out, "-")
			continue
		}
		r.Delivered(c)
		out = append(out, c.Tag)
	}
	return out
}

func add(r *consumer.Rotation[int], g *consumer.Group[int], tag string, priority, prefetch int) *consumer.Consumer[int] {
	c := consumer.New(consumer.Settings{Tag: tag, Priority: priority, Prefetch: prefetch}, g, 0)
	r.Add(c)
	return c
}

func check(t *testing.T, what string, want, got any) {
	t.Helper()
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("%s (-want +got):\n%s", what, d)
	}
}

// Consumers of one priority take messages in turn (rabbit_queue_consumers: out of the head, back in at the tail).
func TestRotationRoundRobin(t *testing.T) {
	var r consumer.Rotation[int]
	g := &consumer.Group[int]{}
	for _, tag := range []string{"a", "b", "c"} {
		add(&r, g, tag, 0, 0)
	}
	check(t, "picks", []string{"a", "b", "c", "a", "b", "c", "a"}, picks(&r, 7, nil))
	if r.Len() != 3 {
		t.Errorf("Len = %d", r.Len())
	}
}

// The highest non-empty band is served first; lower bands only when every higher consumer is blocked.
func TestRotationPriorityBands(t *testing.T) {
	var r consumer.Rotation[int]
	g := &consumer.Group[int]{}
	add(&r, g, "low", -1, 0)
	add(&r, g, "mid", 0, 0)
	add(&r, g, "hi1", 5, 2)
	add(&r, g, "hi2", 5, 1)
	check(t, "picks", []string{"hi1", "hi2", "hi1", "mid", "mid"}, picks(&r, 5, nil))
}

// Blocking is lazy: a consumer whose window just filled stays in the rotation until its turn comes.
func TestRotationLazyBlocking(t *testing.T) {
	var r consumer.Rotation[int]
	g := &consumer.Group[int]{}
	a := add(&r, g, "a", 0, 1)
	b := add(&r, g, "b", 0, 0)
	check(t, "first", []string{"a"}, picks(&r, 1, nil))
	if a.Blocked() || a.HasCredit() {
		t.Fatalf("a: blocked=%t credit=%t, want in rotation without credit", a.Blocked(), a.HasCredit())
	}
	check(t, "b's turn", []string{"b"}, picks(&r, 1, nil))
	if a.Blocked() {
		t.Fatal("a blocked before its turn")
	}
	check(t, "a's turn", []string{"b"}, picks(&r, 1, nil))
	if !a.Blocked() || b.Blocked() {
		t.Fatalf("a blocked=%t b blocked=%t", a.Blocked(), b.Blocked())
	}
}

// Spent blocks a consumer whose window filled at once (rabbit_fifo's
// checkout_one/4): given credit back it rejoins behind the others, where
// lazy blocking would have left it ahead (quorum-credit-rejoin.txt).
func TestRotationSpent(t *testing.T) {
	var r consumer.Rotation[int]
	g := &consumer.Group[int]{}
	a := add(&r, g, "a", 0, 1)
	b := add(&r, g, "b", 0, 2)
	var got []string
	for range 2 {
		c := r.Pick(nil)
		r.Delivered(c)
		r.Spent(c)
		got = append(got, c.Tag)
	}
	check(t, "fill", []string{"a", "b"}, got)
	if !a.Blocked() || b.Blocked() {
		t.Fatalf("a blocked=%t b blocked=%t, want a only", a.Blocked(), b.Blocked())
	}
	if !r.Credit([]*consumer.Consumer[int]{a}) {
		t.Fatal("Credit reported no rejoin")
	}
	check(t, "after credit", []string{"b", "a"}, picks(&r, 2, nil))
}

// Consumers regaining credit rejoin at the tail of their band, in the order they were blocked, not the order settled.
func TestRotationRejoinAtTailInBlockOrder(t *testing.T) {
	var r consumer.Rotation[int]
	g, other := &consumer.Group[int]{}, &consumer.Group[int]{}
	c1 := add(&r, g, "c1", 0, 1)
	c2 := add(&r, g, "c2", 0, 1)
	add(&r, other, "d", 0, 0)
	check(t, "fill", []string{"c1", "c2", "d", "d"}, picks(&r, 4, nil)) // the 4th blocks c1 then c2
	if !c1.Blocked() || !c2.Blocked() {
		t.Fatal("c1 and c2 not blocked")
	}
	if !r.Credit([]*consumer.Consumer[int]{c2, c1}) {
		t.Fatal("Credit reported no rejoin")
	}
	check(t, "after credit", []string{"d", "c1", "c2", "d"}, picks(&r, 4, nil))
}

// An unblock also brings back the group's consumers that have credit but were blocked by the channel's suspension.
func TestRotationUnblockBringsGroupMatesWithCredit(t *testing.T) {
	var r consumer.Rotation[int]
	g := &consumer.Group[int]{}
	full := add(&r, g, "full", 0, 1)
	free := add(&r, g, "free", 0, 0)
	check(t, "one each", []string{"full", "free"}, picks(&r, 2, nil))
	refuse := func(c *consumer.Consumer[int]) bool { return false } // the rotation suspends the group
	check(t, "suspended", []string{"-"}, picks(&r, 1, refuse))
	if !full.Blocked() || !free.Blocked() {
		t.Fatal("not both blocked")
	}
	consumer.ClearSuspension(g) // as if the limiter had room again but had not resumed the group yet
	r.Credit([]*consumer.Consumer[int]{full})
	check(t, "both back, in block order", []string{"full", "free"}, picks(&r, 2, nil))
}

// A settlement that lifts no window off zero brings nobody back.
func TestRotationCreditWithoutGainDoesNotRejoin(t *testing.T) {
	var r consumer.Rotation[int]
	g := &consumer.Group[int]{}
	a := add(&r, g, "a", 0, 2)
	picks(&r, 1, nil)
	if r.Credit([]*consumer.Consumer[int]{a}) {
		t.Error("Credit of a consumer that had credit reported a rejoin")
	}
	if a.Outstanding() != 0 {
		t.Errorf("Outstanding = %d", a.Outstanding())
	}
}

// Resume lifts a group's suspension and brings back its consumers with credit, at the tail in block order.
func TestRotationResume(t *testing.T) {
	var r consumer.Rotation[int]
	g, h := &consumer.Group[int]{}, &consumer.Group[int]{}
	add(&r, g, "g1", 0, 0)
	add(&r, g, "g2", 0, 0)
	add(&r, h, "h", 0, 0)
	limitG := func(c *consumer.Consumer[int]) bool { return c.Group() != g }
	check(t, "g suspended", []string{"h", "h"}, picks(&r, 2, limitG))
	if r.Resume(h) {
		t.Error("Resume of a group that is not suspended did something")
	}
	if !r.Resume(g) || g.Suspended() {
		t.Fatal("Resume(g) failed")
	}
	check(t, "resumed", []string{"h", "g1", "g2"}, picks(&r, 3, nil))
}

// No-ack consumers have no window: prefetch is ignored and Outstanding never moves.
func TestRotationNoAckIgnoresPrefetch(t *testing.T) {
	var r consumer.Rotation[int]
	c := consumer.New(consumer.Settings{Tag: "n", NoAck: true, Prefetch: 1}, &consumer.Group[int]{}, 0)
	r.Add(c)
	check(t, "picks", []string{"n", "n", "n"}, picks(&r, 3, nil))
	if c.Outstanding() != 0 || !c.HasCredit() {
		t.Errorf("outstanding=%d credit=%t", c.Outstanding(), c.HasCredit())
	}
}

// Remove takes a consumer out wherever it is; settling a removed consumer's deliveries does not bring it back.
func TestRotationRemove(t *testing.T) {
	var r consumer.Rotation[int]
	g := &consumer.Group[int]{}
	a := add(&r, g, "a", 0, 1)
	b := add(&r, g, "b", 0, 0)
	picks(&r, 3, nil) // a, b, then a is blocked and b picked
	r.Remove(a)
	r.Remove(a) // twice is harmless
	if r.Len() != 1 {
		t.Fatalf("Len = %d", r.Len())
	}
	if r.Credit([]*consumer.Consumer[int]{a}) {
		t.Error("a removed consumer rejoined")
	}
	r.Remove(b)
	check(t, "empty", []string{"-"}, picks(&r, 1, nil))
}

// Offer (single active consumer) tries one consumer alone and blocks it when it cannot take a message.
func TestRotationOffer(t *testing.T) {
	var r consumer.Rotation[int]
	g := &consumer.Group[int]{}
	a := add(&r, g, "a", 0, 1)
	if !r.Offer(a, nil) {
		t.Fatal("offer refused with credit")
	}
	r.Delivered(a)
	if r.Offer(a, nil) || !a.Blocked() {
		t.Fatal("offer accepted without credit")
	}
	r.Credit([]*consumer.Consumer[int]{a})
	if !r.Offer(a, nil) {
		t.Fatal("offer refused after credit came back")
	}
}

// A paused consumer keeps its place until its turn comes, as a quorum
// queue keeps a timed-out consumer in its service queue: unpaused before
// then, it takes its turn there; reached while paused, it leaves the
// rotation, and credit it gets meanwhile does not bring it back.
func TestRotationPauseIsLazy(t *testing.T) {
	var r consumer.Rotation[int]
	g := &consumer.Group[int]{}
	a := add(&r, g, "a", 0, 3)
	add(&r, g, "b", 0, 3)
	r.Pause(a)
	r.Unpause(a, false)
	check(t, "unpaused in place", []string{"a", "b"}, picks(&r, 2, nil))
	r.Pause(a)
	check(t, "paused", []string{"b", "b"}, picks(&r, 2, nil))
	if !a.Blocked() {
		t.Fatal("a paused consumer reached in its band stayed in the rotation")
	}
	if r.Credit([]*consumer.Consumer[int]{a}) {
		t.Error("credit brought a paused consumer back")
	}
}

// Unpaused with rejoin, a consumer that left the rotation joins the tail
// of its band at once; without, it waits for the next Credit naming it,
// even though it has credit to spare (rabbit_fifo puts it back in its
// service queue at its next settlement).
func TestRotationUnpauseRejoin(t *testing.T) {
	for _, rejoin := range []bool{true, false} {
		var r consumer.Rotation[int]
		g := &consumer.Group[int]{}
		a := add(&r, g, "a", 0, 2)
		add(&r, g, "b", 0, 5)
		check(t, "first", []string{"a", "b"}, picks(&r, 2, nil))
		r.Pause(a)
		check(t, "a paused", []string{"b"}, picks(&r, 1, nil))
		r.Unpause(a, rejoin)
		if rejoin {
			check(t, "rejoined at the tail", []string{"b", "a"}, picks(&r, 2, nil))
			continue
		}
		check(t, "parked", []string{"b", "b"}, picks(&r, 2, nil))
		if !r.Credit([]*consumer.Consumer[int]{a}) {
			t.Fatal("the next credit did not bring a back")
		}
		check(t, "after credit", []string{"b", "a", "a"}, picks(&r, 3, nil))
	}
}
