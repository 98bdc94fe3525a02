package channel_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/amqpsim/amqpsim/channel"
	"github.com/amqpsim/amqpsim/consumer"
	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/queue"
)

// newChannel returns a channel with n unacked deliveries, tags 1..n; get marks which are basic.get ones.
func newChannel(t *testing.T, n int, get func(tag uint64) bool) *channel.Channel {
	t.Helper()
	q, err := queue.New("/", "q", queue.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := channel.New(1)
	g := &consumer.Group{}
	cons := &consumer.Consumer{Tag: "c", Group: g}
	for i := 0; i < n; i++ {
		tag := c.NextTag()
		d := channel.Delivery{Tag: tag, Queue: q, Message: &queue.Message{}}
		if get == nil || !get(tag) {
			d.Consumer = cons
		}
		c.Record(d)
	}
	return c
}

func tags(ds []channel.Delivery) []uint64 {
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
	c := channel.New(1)
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
	_, err := channel.New(1).Qos(1024, 0, false)
	var perr *protocol.Error
	if !errors.As(err, &perr) {
		t.Fatalf("err = %v", err)
	}
	check(t, "error", protocol.Error{Code: 540, Text: "NOT_IMPLEMENTED - prefetch_size!=0 (1024)", Method: protocol.BasicQos, Hard: true}, *perr)
}

// Limiter volume: from 0 it starts at the unacked count (gets included); N1→N2 keeps it; global=false clears it.
func TestLimiterVolumeRules(t *testing.T) {
	c := newChannel(t, 3, func(tag uint64) bool { return tag == 2 }) // tag 2 is a basic.get
	c.Qos(0, 5, true)
	check(t, "start", [2]int{5, 3}, [2]int{c.Limiter.Limit, c.Limiter.Volume})
	c.Qos(0, 2, true)
	check(t, "N1→N2 keeps volume", [2]int{2, 3}, [2]int{c.Limiter.Limit, c.Limiter.Volume})
	ds, _ := c.Settle(protocol.BasicAck, 0, true, nil)
	c.Released(ds) // two consumer deliveries count, the get does not
	check(t, "after settling all", 1, c.Limiter.Volume)
	c.Qos(0, 7, false)
	check(t, "global=false clears", [3]int{0, 0, 7}, [3]int{c.Limiter.Limit, c.Limiter.Volume, c.Prefetch})
}

// Allow counts only ack-mode deliveries, refuses at the limit (for no-ack too) and suspends the group.
func TestLimiterAllow(t *testing.T) {
	var l channel.Limiter
	g := &consumer.Group{}
	if !l.Allow(g, true) || l.Volume != 0 {
		t.Fatal("no limit should allow without counting")
	}
	c := channel.New(1)
	c.Qos(0, 2, true)
	if !c.Limiter.Allow(g, false) || c.Limiter.Volume != 0 {
		t.Error("a no-ack delivery counted")
	}
	c.Limiter.Allow(g, true)
	c.Limiter.Allow(g, true)
	if c.Limiter.Allow(g, false) {
		t.Error("allowed a no-ack delivery at the limit")
	}
	if !g.Suspended {
		t.Error("refused group not suspended")
	}
}

// Settling below the limit returns the refused groups once, in refusal order; raising the limit does too.
func TestLimiterReleasesRefusedGroups(t *testing.T) {
	c := newChannel(t, 0, nil)
	c.Qos(0, 1, true)
	g1, g2 := &consumer.Group{}, &consumer.Group{}
	c.Limiter.Allow(g1, true)
	c.Limiter.Allow(g2, true)
	c.Limiter.Allow(g1, true)
	names := func(gs []*consumer.Group) []string {
		out := []string{}
		for _, g := range gs {
			out = append(out, map[*consumer.Group]string{g1: "g1", g2: "g2"}[g])
		}
		return out
	}
	groups, _ := c.Qos(0, 1, true) // same limit: still reached
	check(t, "nothing released without room", []string{}, names(groups))
	groups, _ = c.Qos(0, 3, true)
	check(t, "released", []string{"g2", "g1"}, names(groups))
	c.Limiter.Allow(g1, true)
	c.Limiter.Allow(g1, true) // volume 3 of 3
	c.Limiter.Allow(g2, true)
	groups, _ = c.Qos(0, 0, false)
	check(t, "global=false releases", []string{"g2"}, names(groups))
}

// Settling only basic.get deliveries does not move the volume; a volume of 0 is never lowered.
func TestLimiterReleasedSkipsGets(t *testing.T) {
	c := newChannel(t, 2, func(uint64) bool { return true })
	c.Qos(0, 1, true)
	ds, _ := c.Settle(protocol.BasicAck, 0, true, nil)
	if groups := c.Released(ds); groups != nil || c.Limiter.Volume != 2 {
		t.Errorf("volume = %d, want 2 (gets counted at the start are never released)", c.Limiter.Volume)
	}
	c2 := newChannel(t, 1, nil)
	c2.Qos(0, 3, true)
	c2.Limiter.Volume = 0
	ds, _ = c2.Settle(protocol.BasicAck, 1, false, nil)
	c2.Released(ds)
	if c2.Limiter.Volume != 0 {
		t.Errorf("volume = %d, want 0", c2.Limiter.Volume)
	}
}
