package channel_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/amqpsim/amqpsim/channel"
	"github.com/amqpsim/amqpsim/protocol"
)

// testChannel names queues by string and refers to deliveries by body.
type testChannel = channel.Channel[string, string]

// newChannel returns a channel with n unacked deliveries, tags 1..n; get marks which are basic.get ones.
func newChannel(t *testing.T, n int, get func(tag uint64) bool) *testChannel {
	t.Helper()
	c := channel.New[string, string]()
	record(c, n, get)
	return c
}

// record adds n deliveries from queue 1 to c; get marks basic.get ones, the others are consumer c's.
func record(c *testChannel, n int, get func(tag uint64) bool) {
	for i := 0; i < n; i++ {
		tag := c.NextTag()
		d := channel.Delivery[string]{Tag: tag, Queue: 1}
		if get == nil || !get(tag) {
			d.ConsumerTag = "c"
		}
		c.Record(d)
	}
}

func tags(ds []channel.Delivery[string]) []uint64 {
	out := []uint64{}
	for _, d := range ds {
		out = append(out, d.Tag)
	}
	return out
}

func check(t *testing.T, what string, want, got any) {
	t.Helper()
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("%s (-want +got):\n%s", what, d)
	}
}

// Settle follows RabbitMQ's collect_acks: tag 0 + multiple is all; tag 0 alone is unknown; multiple N needs N outstanding; nothing is settled on error.
func TestSettleMultipleRules(t *testing.T) {
	tests := []struct {
		name     string
		pre      []uint64 // settled singly first
		tag      uint64
		multiple bool
		want     []uint64
		errTag   uint64 // 0: no error expected
	}{
		{"multiple tag 0 settles all", nil, 0, true, []uint64{1, 2, 3, 4}, 0},
		{"multiple tag 0 after some settled", []uint64{2}, 0, true, []uint64{1, 3, 4}, 0},
		{"single", nil, 3, false, []uint64{3}, 0},
		{"multiple through N", nil, 3, true, []uint64{1, 2, 3}, 0},
		{"multiple skips settled ones", []uint64{1, 2}, 3, true, []uint64{3}, 0},
		{"single tag 0", nil, 0, false, nil, 1},
		{"multiple N already settled", []uint64{3}, 3, true, nil, 1},
		{"multiple N never issued", nil, 9, true, nil, 1},
		{"single settled twice", []uint64{2}, 2, false, nil, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newChannel(t, 4, nil)
			for _, tag := range tt.pre {
				if _, err := c.Settle(protocol.BasicAck, tag, false, nil); err != nil {
					t.Fatal(err)
				}
			}
			before := c.Unacked()
			ds, err := c.Settle(protocol.BasicNack, tt.tag, tt.multiple, nil)
			if tt.errTag == 0 {
				if err != nil {
					t.Fatal(err)
				}
				check(t, "settled", tt.want, tags(ds))
				if c.Unacked() != before-len(tt.want) {
					t.Errorf("unacked = %d, want %d", c.Unacked(), before-len(tt.want))
				}
				return
			}
			var perr *protocol.Error
			if !errors.As(err, &perr) {
				t.Fatalf("err = %v", err)
			}
			want := protocol.Error{Code: 406, Text: "PRECONDITION_FAILED - unknown delivery tag " + itoa(tt.tag), Method: protocol.BasicNack}
			check(t, "error", want, *perr)
			if c.Unacked() != before {
				t.Errorf("an error settled something: unacked %d, was %d", c.Unacked(), before)
			}
		})
	}
}

func itoa(n uint64) string {
	if n == 0 {
		return "0"
	}
	s := ""
	for ; n > 0; n /= 10 {
		s = string(rune('0'+n%10)) + s
	}
	return s
}

// multiple=true tag=0 on an empty ledger is fine.
func TestSettleMultipleTagZeroEmpty(t *testing.T) {
	c := channel.New[string, string]()
	ds, err := c.Settle(protocol.BasicAck, 0, true, nil)
	if err != nil || len(ds) != 0 {
		t.Errorf("ds=%v err=%v", ds, err)
	}
}

// Tags start at 1 and grow by one; the ledger keeps tag order and TakeAll empties it.
func TestTagsAndLedgerOrder(t *testing.T) {
	c := newChannel(t, 5, nil)
	c.Settle(protocol.BasicAck, 2, false, nil)
	c.Settle(protocol.BasicAck, 4, false, nil)
	check(t, "deliveries", []uint64{1, 3, 5}, tags(c.Deliveries()))
	if o := c.Oldest(); o == nil || o.Tag != 1 {
		t.Errorf("oldest = %v", o)
	}
	check(t, "take all", []uint64{1, 3, 5}, tags(c.TakeAll()))
	if c.Unacked() != 0 || c.Oldest() != nil {
		t.Error("ledger not empty")
	}
	if tag := c.NextTag(); tag != 6 {
		t.Errorf("next tag = %d, want 6", tag)
	}
}

// prefetch_size≠0 is 540 NOT_IMPLEMENTED, a hard error.
func TestQosPrefetchSizeRefused(t *testing.T) {
	_, err := channel.New[string, string]().Qos(0, 1024, false)
	var perr *protocol.Error
	if !errors.As(err, &perr) {
		t.Fatalf("err = %v", err)
	}
	check(t, "error", protocol.Error{Code: 540, Text: "NOT_IMPLEMENTED - prefetch_size!=0 (1024)", Method: protocol.BasicQos, Hard: true}, *perr)
}

// Limiter volume: from 0 it starts at the unacked count (gets included); N1→N2 keeps it; global=false clears it.
func TestLimiterVolumeRules(t *testing.T) {
	c := newChannel(t, 3, func(tag uint64) bool { return tag == 2 }) // tag 2 is a basic.get
	limit := func() [2]int { l, v := c.GlobalLimit(); return [2]int{l, v} }
	c.Qos(5, 0, true)
	check(t, "start", [2]int{5, 3}, limit())
	c.Qos(2, 0, true)
	check(t, "N1→N2 keeps volume", [2]int{2, 3}, limit())
	ds, _ := c.Settle(protocol.BasicAck, 0, true, nil)
	c.Released(ds) // two consumer deliveries count, the get does not
	check(t, "after settling all", [2]int{2, 1}, limit())
	c.Qos(7, 0, false)
	check(t, "global=false clears", [3]int{0, 0, 7}, [3]int{limit()[0], limit()[1], c.Prefetch()})
}

// Allow counts only ack-mode deliveries and refuses at the limit, for no-ack too.
func TestLimiterAllow(t *testing.T) {
	c := channel.New[string, string]()
	if !c.Allow("q", true) {
		t.Fatal("no limit should allow")
	}
	if _, v := c.GlobalLimit(); v != 0 {
		t.Fatal("no limit should not count")
	}
	c.Qos(2, 0, true)
	if _, v := c.GlobalLimit(); !c.Allow("q", false) || v != 0 {
		t.Error("a no-ack delivery counted")
	}
	c.Allow("q", true)
	c.Allow("q", true)
	if c.Allow("q", false) {
		t.Error("allowed a no-ack delivery at the limit")
	}
	if qs, _ := c.Qos(3, 0, true); !cmp.Equal(qs, []string{"q"}) {
		t.Errorf("released %v, want the refused queue", qs)
	}
}

// Settling below the limit returns the refused queues once, in refusal order; raising the limit does too; a forgotten queue is not returned.
func TestLimiterReleasesRefusedQueues(t *testing.T) {
	c := newChannel(t, 0, nil)
	c.Qos(1, 0, true)
	c.Allow("q1", true)
	c.Allow("q2", true)
	c.Allow("q1", true)
	qs, _ := c.Qos(1, 0, true) // same limit: still reached
	check(t, "nothing released without room", []string(nil), qs)
	qs, _ = c.Qos(3, 0, true)
	check(t, "released", []string{"q2", "q1"}, qs)
	c.Allow("q1", true)
	c.Allow("q1", true) // volume 3 of 3
	c.Allow("q2", true)
	c.Allow("q3", true)
	c.Forget("q3")
	qs, _ = c.Qos(0, 0, false)
	check(t, "global=false releases", []string{"q2"}, qs)
}

// Settling only basic.get deliveries does not move the volume; a volume of 0 is never lowered.
func TestLimiterReleasedSkipsGets(t *testing.T) {
	c := newChannel(t, 2, func(uint64) bool { return true })
	c.Qos(1, 0, true)
	ds, _ := c.Settle(protocol.BasicAck, 0, true, nil)
	if qs := c.Released(ds); qs != nil {
		t.Errorf("released %v", qs)
	}
	if _, v := c.GlobalLimit(); v != 2 {
		t.Errorf("volume = %d, want 2 (gets counted at the start are never released)", v)
	}
	c2 := newChannel(t, 0, nil)
	c2.Qos(3, 0, true) // volume starts at 0
	record(c2, 1, nil) // a delivery the limiter never counted
	ds, _ = c2.Settle(protocol.BasicAck, 1, false, nil)
	c2.Released(ds)
	if _, v := c2.GlobalLimit(); v != 0 {
		t.Errorf("volume = %d, want 0", v)
	}
}

// Groups: queues in creation order, each basic.get alone in tag order, then consumer tags in order; stable within a group.
func TestSettlementGroups(t *testing.T) {
	ds := []channel.Delivery[string]{
		{Tag: 1, Queue: 2, ConsumerTag: "b", Ref: "q2 b 1"},
		{Tag: 2, Queue: 1, ConsumerTag: "", Ref: "q1 get 2"},
		{Tag: 3, Queue: 1, ConsumerTag: "b", Ref: "q1 b 3"},
		{Tag: 4, Queue: 1, ConsumerTag: "a", Ref: "q1 a 4"},
		{Tag: 5, Queue: 1, ConsumerTag: "", Ref: "q1 get 5"},
		{Tag: 6, Queue: 1, ConsumerTag: "a", Ref: "q1 a 6"},
		{Tag: 7, Queue: 2, ConsumerTag: "b", Ref: "q2 b 7"},
	}
	var got [][]string
	channel.Groups(ds, func(g []channel.Delivery[string]) {
		var refs []string
		for _, d := range g {
			refs = append(refs, d.Ref)
		}
		got = append(got, refs)
	})
	want := [][]string{{"q1 get 2"}, {"q1 get 5"}, {"q1 a 4", "q1 a 6"}, {"q1 b 3"}, {"q2 b 1", "q2 b 7"}}
	check(t, "groups", want, got)
}

// Restore puts settled deliveries back in tag order, settleable again.
func TestRestore(t *testing.T) {
	c := newChannel(t, 5, nil)
	ds, _ := c.Settle(protocol.BasicAck, 4, false, nil)
	ds, _ = c.Settle(protocol.BasicAck, 2, false, ds)
	c.Restore(ds)
	check(t, "deliveries", []uint64{1, 2, 3, 4, 5}, tags(c.Deliveries()))
	if _, err := c.Settle(protocol.BasicAck, 4, false, nil); err != nil {
		t.Errorf("restored tag not settleable: %v", err)
	}
}
