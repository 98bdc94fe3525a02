package sim

import "testing"

// A reader that always leaves the newest push unread (a consumer one
// delivery behind) must not make the outbox keep every push it has taken:
// the taken prefix is reclaimed although the outbox never empties.
func TestOutboxReclaimsTakenPrefix(t *testing.T) {
	var o outbox
	prev := o.add(outItem{})
	for range 100000 {
		next := o.add(outItem{})
		if _, ok := o.take(prev); !ok {
			t.Fatalf("push %d not found", prev)
		}
		prev = next
	}
	if o.pending() != 1 {
		t.Fatalf("%d pending, want 1", o.pending())
	}
	if n := cap(o.items); n > 1024 {
		t.Errorf("the outbox holds room for %d pushes after 100000 taken with one waiting; want it bounded", n)
	}
}
