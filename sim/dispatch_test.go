package sim_test

import (
	"testing"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// holdings returns each consumer's unread deliveries' bodies.
func holdings(cs ...*sim.Consumer) [][]string {
	out := [][]string{}
	for _, c := range cs {
		out = append(out, bodies(c.Deliveries()))
	}
	return out
}

// Within one priority the queue hands messages to its consumers in turn.
func TestDispatchRoundRobinWithinPriority(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{})
	c1 := e.consume(e.ch, "q", "c1", sim.ConsumeOptions{})
	c2 := e.consume(e.ch, "q", "c2", sim.ConsumeOptions{})
	c3 := e.consume(e.channel(e.conn), "q", "c3", sim.ConsumeOptions{})
	e.publish("q", msgs(7)...)
	diff(t, "holdings", [][]string{{"m1", "m4", "m7"}, {"m2", "m5"}, {"m3", "m6"}}, holdings(c1, c2, c3))
}

// A consumer whose window is full is skipped; the others keep taking messages.
func TestDispatchSkipsFullConsumer(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{})
	e.qos(e.ch, 1, false)
	c1 := e.consume(e.ch, "q", "c1", sim.ConsumeOptions{})
	e.qos(e.ch, 3, false)
	c2 := e.consume(e.ch, "q", "c2", sim.ConsumeOptions{})
	e.publish("q", msgs(6)...)
	diff(t, "holdings", [][]string{{"m1"}, {"m2", "m3", "m4"}}, holdings(c1, c2))
	if st := c1.Stats(); !st.Blocked {
		t.Errorf("c1 not blocked: %+v", st)
	}
}

// An ack that frees a full consumer's slot puts it at the tail of its band, behind consumers never blocked.
func TestDispatchUnblockedConsumerRejoinsAtTail(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{})
	chA := e.channel(e.conn)
	e.qos(chA, 1, false)
	c1 := e.consume(chA, "q", "c1", sim.ConsumeOptions{})
	c2 := e.consume(e.ch, "q", "c2", sim.ConsumeOptions{})
	c3 := e.consume(e.ch, "q", "c3", sim.ConsumeOptions{})
	e.publish("q", "m1", "m2", "m3", "m4") // m4: c1 is tried, blocked, and c2 takes it
	diff(t, "before ack", [][]string{{"m1"}, {"m2", "m4"}, {"m3"}}, holdings(c1, c2, c3))
	e.must(chA.Ack(1, false)) // rotation is now c3, c2, c1
	diff(t, "the ack delivers nothing at once", [][]string{{}, {}, {}}, holdings(c1, c2, c3))
	e.publish("q", "m5", "m6", "m7")
	diff(t, "after ack", [][]string{{"m7"}, {"m6"}, {"m5"}}, holdings(c1, c2, c3))
}

// When every other consumer is blocked, the one that just acked gets the next message.
func TestDispatchAckingConsumerGetsNextWhenOthersBlocked(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{})
	e.qos(e.ch, 1, false)
	ch2 := e.channel(e.conn)
	e.qos(ch2, 1, false)
	c1 := e.consume(e.ch, "q", "c1", sim.ConsumeOptions{})
	c2 := e.consume(ch2, "q", "c2", sim.ConsumeOptions{})
	e.publish("q", msgs(4)...)
	diff(t, "before", [][]string{{"m1"}, {"m2"}}, holdings(c1, c2))
	e.must(ch2.Ack(1, false))
	diff(t, "after c2 acks", [][]string{{}, {"m3"}}, holdings(c1, c2))
}

// A higher-priority consumer gets every message while it can accept; lower ones get the overflow.
func TestDispatchHigherPriorityGetsEverythingWhileItCanAccept(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{})
	low := e.consume(e.ch, "q", "low", sim.ConsumeOptions{})
	chHigh := e.channel(e.conn)
	e.qos(chHigh, 2, false)
	high := e.consume(chHigh, "q", "high", sim.ConsumeOptions{Args: sim.Table{"x-priority": int32(5)}})
	e.publish("q", msgs(5)...)
	diff(t, "holdings", [][]string{{"m1", "m2"}, {"m3", "m4", "m5"}}, holdings(high, low))
	e.must(chHigh.Ack(0, true))
	e.publish("q", "m6", "m7", "m8")
	diff(t, "after high acks", [][]string{{"m6", "m7"}, {"m8"}}, holdings(high, low))
}

// Consumers of one priority band rotate; a lower band gets nothing while the band above can accept.
func TestDispatchPriorityBandsRoundRobinWithinBand(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{})
	five := sim.ConsumeOptions{Args: sim.Table{"x-priority": int64(5)}}
	a := e.consume(e.ch, "q", "a", five)
	zero := e.consume(e.ch, "q", "zero", sim.ConsumeOptions{})
	neg := e.consume(e.ch, "q", "neg", sim.ConsumeOptions{Args: sim.Table{"x-priority": int16(-1)}})
	b := e.consume(e.ch, "q", "b", five)
	e.publish("q", msgs(4)...)
	diff(t, "holdings", [][]string{{"m1", "m3"}, {"m2", "m4"}, {}, {}}, holdings(a, b, zero, neg))
	if p := neg.Stats().Priority; p != -1 {
		t.Errorf("priority = %d, want -1", p)
	}
}

// No-ack consumers are not limited by their own window (they have no credit entry).
func TestDispatchNoAckConsumerUnlimitedByOwnWindow(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{})
	e.qos(e.ch, 1, false)
	ack := e.consume(e.ch, "q", "ack", sim.ConsumeOptions{})
	noAck := e.consume(e.ch, "q", "noack", sim.ConsumeOptions{NoAck: true})
	e.publish("q", msgs(5)...)
	diff(t, "holdings", [][]string{{"m1"}, {"m2", "m3", "m4", "m5"}}, holdings(ack, noAck))
}

// A message published to a queue with a ready consumer goes straight to it, redelivered=false.
func TestDispatchDirectDeliveryNotRedelivered(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{})
	c := e.consume(e.ch, "q", "c", sim.ConsumeOptions{})
	e.publish("q", "m1")
	diff(t, "deliveries", []dv{{1, "m1", false}}, brief(c.Deliveries()))
	if s := e.stats("q"); s.Ready != 0 || s.Unacked != 1 {
		t.Errorf("ready=%d unacked=%d, want 0 and 1", s.Ready, s.Unacked)
	}
}

// Single active consumer: the first registered consumer gets every message; the others get nothing.
func TestDispatchSingleActiveConsumerFirstRegisteredGetsAll(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{Args: sim.Table{"x-single-active-consumer": true}})
	c1 := e.consume(e.ch, "q", "c1", sim.ConsumeOptions{})
	c2 := e.consume(e.ch, "q", "c2", sim.ConsumeOptions{Args: sim.Table{"x-priority": int32(10)}})
	e.publish("q", msgs(3)...)
	diff(t, "holdings", [][]string{{"m1", "m2", "m3"}, {}}, holdings(c1, c2))
	diff(t, "active", []bool{true, false}, []bool{c1.Stats().Active, c2.Stats().Active})
	if n := e.stats("q").Consumers; n != 2 {
		t.Errorf("consumers = %d, want 2 (waiting consumers count)", n)
	}
}

// While the single active consumer is blocked nothing is delivered; the waiting ones get nothing.
func TestDispatchSingleActiveConsumerBlockedDeliversNothing(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{Args: sim.Table{"x-single-active-consumer": true}})
	e.qos(e.ch, 1, false)
	c1 := e.consume(e.ch, "q", "c1", sim.ConsumeOptions{})
	c2 := e.consume(e.channel(e.conn), "q", "c2", sim.ConsumeOptions{})
	e.publish("q", msgs(3)...)
	diff(t, "holdings", [][]string{{"m1"}, {}}, holdings(c1, c2))
	e.must(e.ch.Ack(1, false))
	diff(t, "after ack", [][]string{{"m2"}, {}}, holdings(c1, c2))
}

// When the active consumer goes, the highest-priority then earliest-registered waiting consumer takes over.
func TestDispatchSingleActiveConsumerTakeover(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{Args: sim.Table{"x-single-active-consumer": true}})
	p := func(n int32) sim.ConsumeOptions { return sim.ConsumeOptions{Args: sim.Table{"x-priority": n}} }
	cs := []*sim.Consumer{
		e.consume(e.ch, "q", "c1", p(0)),
		e.consume(e.ch, "q", "c2", p(0)),
		e.consume(e.ch, "q", "c3", p(5)),
		e.consume(e.ch, "q", "c4", p(5)),
	}
	steps := []struct{ cancel, next string }{{"c1", "c3"}, {"c3", "c4"}, {"c4", "c2"}}
	for _, st := range steps {
		e.must(e.ch.Cancel(st.cancel))
		e.publish("q", "after "+st.cancel)
		got := map[string][]string{}
		for _, c := range cs {
			if b := bodies(c.Deliveries()); len(b) > 0 {
				got[c.Tag()] = b
			}
		}
		diff(t, "after cancelling "+st.cancel, map[string][]string{st.next: {"after " + st.cancel}}, got)
	}
}

// The takeover also happens when the active consumer's channel closes; its unacked go back to the new one.
func TestDispatchSingleActiveConsumerTakeoverOnChannelClose(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{Args: sim.Table{"x-single-active-consumer": true}})
	chA := e.channel(e.conn)
	e.consume(chA, "q", "a", sim.ConsumeOptions{})
	b := e.consume(e.ch, "q", "b", sim.ConsumeOptions{})
	e.publish("q", "m1", "m2")
	e.must(chA.Close())
	diff(t, "b", []dv{{1, "m1", true}, {2, "m2", true}}, brief(b.Deliveries()))
	if !b.Stats().Active {
		t.Error("b is not active")
	}
}

// An exclusive consumer needs a queue without consumers; while it exists nobody else may consume.
func TestDispatchExclusiveConsumerRules(t *testing.T) {
	const text = "ACCESS_REFUSED - queue 'q' in vhost '/' in exclusive use"
	tests := []struct {
		name          string
		first, second bool // exclusive flags
		sac           bool
		firstFails    bool
	}{
		{"exclusive beside a consumer", false, true, false, false},
		{"consumer beside an exclusive one", true, false, false, false},
		{"exclusive beside an exclusive one", true, true, false, false},
		{"exclusive on a single active consumer queue", true, false, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			o := sim.QueueOptions{}
			if tt.sac {
				o.Args = sim.Table{"x-single-active-consumer": true}
			}
			e.declare("q", o)
			other := e.channel(e.conn)
			_, err := e.ch.Consume("q", sim.ConsumeOptions{Tag: "first", Exclusive: tt.first})
			if tt.firstFails {
				wantErr(t, err, 403, text, protocol.BasicConsume)
				return
			}
			e.must(err)
			_, err = other.Consume("q", sim.ConsumeOptions{Tag: "second", Exclusive: tt.second})
			wantErr(t, err, 403, text, protocol.BasicConsume)
			if other.Err() == nil || e.ch.Err() != nil {
				t.Errorf("want only the second channel closed: %v, %v", other.Err(), e.ch.Err())
			}
		})
	}
}

// Once the exclusive consumer is cancelled, others may consume again.
func TestDispatchExclusiveConsumerCancelFreesQueue(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{})
	e.consume(e.ch, "q", "x", sim.ConsumeOptions{Exclusive: true})
	e.must(e.ch.Cancel("x"))
	e.consume(e.ch, "q", "y", sim.ConsumeOptions{})
}

// basic.cancel dispatches the queue: cancelling the single active consumer
// makes the next one active, and it gets the ready messages at once.
func TestCancelDispatchesToTheNextSingleActiveConsumer(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{Args: sim.Table{"x-single-active-consumer": true}})
	e.qos(e.ch, 1, false)
	a := e.consume(e.ch, "q", "a", sim.ConsumeOptions{})
	ch2 := e.channel(e.conn)
	b := e.consume(ch2, "q", "b", sim.ConsumeOptions{})
	e.publish("q", "m1", "m2")
	diff(t, "a", []string{"m1"}, bodies(a.Deliveries()))
	e.must(e.ch.Cancel("a"))
	diff(t, "b after the cancel", []string{"m2"}, bodies(b.Deliveries()))
}
