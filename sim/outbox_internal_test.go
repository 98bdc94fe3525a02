package sim

import "testing"

// A reader that always leaves the newest push unread (a consumer one
// delivery behind) must not make the outbox keep every push it has taken,
// nor its lane every position: the taken prefixes are reclaimed although
// neither ever empties.
func TestOutboxReclaimsTakenPrefix(t *testing.T) {
	var o outbox
	var l lane
	o.add(outItem{}, &l)
	for range 100000 {
		o.add(outItem{}, &l)
		if !o.next(&l, new(outItem)) {
			t.Fatal("the lane's oldest push not found")
		}
	}
	if o.pending() != 1 {
		t.Fatalf("%d pending, want 1", o.pending())
	}
	if n := cap(o.log); n > 1024 {
		t.Errorf("the outbox holds room for %d pushes after 100000 taken with one waiting; want it bounded", n)
	}
	if n := cap(l.seqs); n > 1024 {
		t.Errorf("the lane holds room for %d positions after 100000 taken with one waiting; want it bounded", n)
	}
}

// A push no lane reads (an unread confirm's place, here a lane never
// read) holds no more than itself while another lane's pushes come and go
// behind it; and a Drain empties every lane.
func TestOutboxUnreadLaneHoldsOnlyItself(t *testing.T) {
	var o outbox
	var unread, busy lane
	for range 100000 {
		o.add(outItem{}, &unread)
		o.add(outItem{}, &busy)
		o.next(&busy, new(outItem))
	}
	if o.pending() != 100000 {
		t.Fatalf("%d pending, want 100000", o.pending())
	}
	if n := len(o.log); n > 2*100000 {
		t.Errorf("the log holds %d items for 100000 waiting", n)
	}
	got := o.drain(nil)
	if len(got) != 100000 || o.pending() != 0 {
		t.Fatalf("drained %d, %d pending", len(got), o.pending())
	}
	if o.next(&unread, new(outItem)) {
		t.Error("a lane still had a push after Drain took everything")
	}
	o.add(outItem{}, &unread)
	if !o.next(&unread, new(outItem)) {
		t.Error("a lane lost a push made after the Drain")
	}
}
