package sim_test

import (
	"testing"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// RabbitMQ refuses prefetch_size≠0 with 540 NOT_IMPLEMENTED, a hard error that closes the connection.
func TestQosPrefetchSizeClosesConnection(t *testing.T) {
	e := newEnv(t)
	other := e.channel(e.conn)
	err := e.ch.Qos(1, 1024, false)
	wantErr(t, err, 540, "NOT_IMPLEMENTED - prefetch_size!=0 (1024)", protocol.Method{Class: 60, ID: 10})
	cause := asError(err)
	wantClosed(t, e.conn.Err(), cause)
	wantClosed(t, other.Err(), cause)
	wantClosed(t, e.ch.Qos(1, 0, false), cause)
}

// prefetch_count 0 means unlimited: a consumer gets the whole backlog.
func TestQosZeroPrefetchIsUnlimited(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{})
	e.publish("q", msgs(100)...)
	e.qos(e.ch, 0, false)
	c := e.consume(e.ch, "q", "c", sim.ConsumeOptions{})
	if n := len(c.Deliveries()); n != 100 {
		t.Fatalf("got %d deliveries, want 100", n)
	}
}

// global=false sets the prefetch of consumers created afterwards; each keeps the value in force at its creation.
func TestQosGlobalFalseAppliesToConsumersCreatedAfter(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{})
	e.qos(e.ch, 2, false)
	c1 := e.consume(e.ch, "q", "c1", sim.ConsumeOptions{})
	e.qos(e.ch, 5, false)
	c2 := e.consume(e.ch, "q", "c2", sim.ConsumeOptions{})
	e.publish("q", msgs(20)...)
	diff(t, "c1", []string{"m1", "m3"}, bodies(c1.Deliveries()))
	diff(t, "c2", []string{"m2", "m4", "m5", "m6", "m7"}, bodies(c2.Deliveries()))
	diff(t, "prefetches", []int{2, 5}, []int{c1.Stats().Prefetch, c2.Stats().Prefetch})
}

// A later global=false qos does not change existing consumers, lowering or raising.
func TestQosGlobalFalseDoesNotChangeExistingConsumers(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{})
	e.qos(e.ch, 3, false)
	c := e.consume(e.ch, "q", "c", sim.ConsumeOptions{})
	e.qos(e.ch, 1, false)
	e.publish("q", msgs(10)...)
	diff(t, "lowered", []string{"m1", "m2", "m3"}, bodies(c.Deliveries()))
	e.qos(e.ch, 10, false)
	if n := len(c.Deliveries()); n != 0 {
		t.Errorf("raising the channel prefetch delivered %d to an existing consumer, want 0", n)
	}
	if got := c.Stats().Prefetch; got != 3 {
		t.Errorf("consumer prefetch = %d, want 3", got)
	}
}

// global=false also removes the channel-wide limit at once; consumers it blocked resume.
func TestQosGlobalFalseClearsChannelLimit(t *testing.T) {
	// 3.10: from 4.3 global_qos is denied and global=true is per consumer
	// (TestGlobalQosPerConsumer43).
	e := newEnvOn(t, sim.V3_10)
	e.declare("q", sim.QueueOptions{})
	e.qos(e.ch, 2, true)
	c := e.consume(e.ch, "q", "c", sim.ConsumeOptions{})
	e.publish("q", msgs(5)...)
	diff(t, "under the global limit", []string{"m1", "m2"}, bodies(c.Deliveries()))
	e.qos(e.ch, 10, false)
	diff(t, "after global=false", []string{"m3", "m4", "m5"}, bodies(c.Deliveries()))
	if s := e.ch.Stats(); s.GlobalLimit != 0 || s.Prefetch != 10 {
		t.Errorf("GlobalLimit=%d Prefetch=%d, want 0 and 10", s.GlobalLimit, s.Prefetch)
	}
}

// global=true is one window shared by all the channel's consumers, served round robin.
func TestQosGlobalTrueSharedByChannelConsumers(t *testing.T) {
	// 3.10: from 4.3 global_qos is denied and global=true is per consumer
	// (TestGlobalQosPerConsumer43).
	e := newEnvOn(t, sim.V3_10)
	e.declare("q", sim.QueueOptions{})
	e.qos(e.ch, 3, true)
	c1 := e.consume(e.ch, "q", "c1", sim.ConsumeOptions{})
	c2 := e.consume(e.ch, "q", "c2", sim.ConsumeOptions{})
	e.publish("q", msgs(10)...)
	diff(t, "c1", []string{"m1", "m3"}, bodies(c1.Deliveries()))
	diff(t, "c2", []string{"m2"}, bodies(c2.Deliveries()))
	if s := e.ch.Stats(); s.GlobalVolume != 3 {
		t.Errorf("GlobalVolume = %d, want 3", s.GlobalVolume)
	}
}

// global=true applies at once to consumers that already exist.
func TestQosGlobalTrueAppliesToExistingConsumers(t *testing.T) {
	// 3.10: from 4.3 global_qos is denied and global=true is per consumer
	// (TestGlobalQosPerConsumer43).
	e := newEnvOn(t, sim.V3_10)
	e.declare("q", sim.QueueOptions{})
	c := e.consume(e.ch, "q", "c", sim.ConsumeOptions{})
	e.qos(e.ch, 2, true)
	e.publish("q", msgs(5)...)
	diff(t, "deliveries", []string{"m1", "m2"}, bodies(c.Deliveries()))
}

// An ack that brings the volume below the limit releases the channel's consumers.
func TestQosGlobalAckReleasesBlockedConsumers(t *testing.T) {
	// 3.10: from 4.3 global_qos is denied and global=true is per consumer
	// (TestGlobalQosPerConsumer43).
	e := newEnvOn(t, sim.V3_10)
	e.declare("q", sim.QueueOptions{})
	e.qos(e.ch, 2, true)
	c1 := e.consume(e.ch, "q", "c1", sim.ConsumeOptions{})
	c2 := e.consume(e.ch, "q", "c2", sim.ConsumeOptions{})
	e.publish("q", msgs(6)...)
	diff(t, "before ack", [][]string{{"m1"}, {"m2"}}, [][]string{bodies(c1.Deliveries()), bodies(c2.Deliveries())})
	// c1 was refused first (then c2, blocked by the suspended channel): both rejoin in that order.
	e.must(e.ch.Ack(1, false))
	diff(t, "after ack", [][]string{{"m3"}, {}}, [][]string{bodies(c1.Deliveries()), bodies(c2.Deliveries())})
	// Now c2 was refused first.
	e.must(e.ch.Ack(0, true))
	diff(t, "after ack all", [][]string{{"m5"}, {"m4"}}, [][]string{bodies(c1.Deliveries()), bodies(c2.Deliveries())})
}

// Switching the limit on from 0 starts the volume at the channel's unacked count, basic.get deliveries included.
func TestQosGlobalVolumeStartsAtUnackedIncludingGets(t *testing.T) {
	// 3.10: from 4.3 global_qos is denied and global=true is per consumer
	// (TestGlobalQosPerConsumer43).
	e := newEnvOn(t, sim.V3_10)
	e.declare("q", sim.QueueOptions{})
	e.declare("other", sim.QueueOptions{})
	e.publish("q", msgs(6)...)
	e.publish("other", "o1")
	c := e.consume(e.ch, "other", "c", sim.ConsumeOptions{}) // one consumer delivery
	if _, ok, err := e.ch.Get("q", false); !ok || err != nil {
		t.Fatalf("get: ok=%t err=%v", ok, err)
	}
	e.qos(e.ch, 3, true)
	if s := e.ch.Stats(); s.GlobalVolume != 2 {
		t.Fatalf("GlobalVolume = %d, want 2 (one deliver + one get)", s.GlobalVolume)
	}
	c2 := e.consume(e.ch, "q", "c2", sim.ConsumeOptions{})
	diff(t, "c2", []string{"m2"}, bodies(c2.Deliveries()))
	diff(t, "c", []string{"o1"}, bodies(c.Deliveries()))
}

// A get delivery counted when the limit was switched on is never released by its ack (notify_limiter skips gets); checked against RabbitMQ 3.10.8.
func TestQosGlobalGetCountedAtStartIsNeverReleased(t *testing.T) {
	// 3.10: from 4.3 global_qos is denied and global=true is per consumer
	// (TestGlobalQosPerConsumer43).
	e := newEnvOn(t, sim.V3_10)
	e.declare("q", sim.QueueOptions{})
	e.publish("q", msgs(5)...)
	d, _, err := e.ch.Get("q", false)
	e.must(err)
	e.qos(e.ch, 1, true)
	c := e.consume(e.ch, "q", "c", sim.ConsumeOptions{})
	diff(t, "while the get is unacked", []string{}, bodies(c.Deliveries()))
	e.must(e.ch.Ack(d.DeliveryTag, false))
	diff(t, "after acking the get", []string{}, bodies(c.Deliveries()))
	e.qos(e.ch, 2, true)
	diff(t, "after raising to 2", []string{"m2"}, bodies(c.Deliveries()))
}

// Changing the limit from N1 to N2 keeps the volume; raising it releases at once, lowering revokes nothing.
func TestQosGlobalVolumeKeptWhenLimitChanges(t *testing.T) {
	// 3.10: from 4.3 global_qos is denied and global=true is per consumer
	// (TestGlobalQosPerConsumer43).
	e := newEnvOn(t, sim.V3_10)
	e.declare("q", sim.QueueOptions{})
	e.qos(e.ch, 2, true)
	c := e.consume(e.ch, "q", "c", sim.ConsumeOptions{})
	e.publish("q", msgs(10)...)
	diff(t, "limit 2", []string{"m1", "m2"}, bodies(c.Deliveries()))
	e.qos(e.ch, 4, true)
	diff(t, "raised to 4", []string{"m3", "m4"}, bodies(c.Deliveries()))
	e.qos(e.ch, 1, true)
	if s := e.ch.Stats(); s.GlobalVolume != 4 || s.Unacked != 4 {
		t.Fatalf("volume=%d unacked=%d, want 4 and 4", s.GlobalVolume, s.Unacked)
	}
	e.must(e.ch.Ack(3, true))
	diff(t, "lowered to 1, volume 1", []string{}, bodies(c.Deliveries()))
	e.must(e.ch.Ack(4, false))
	diff(t, "volume 0", []string{"m5"}, bodies(c.Deliveries()))
}

// basic.get deliveries made while the limit is active do not count toward the volume.
func TestQosGlobalGetDeliveriesWhileActiveDoNotCount(t *testing.T) {
	// 3.10: from 4.3 global_qos is denied and global=true is per consumer
	// (TestGlobalQosPerConsumer43).
	e := newEnvOn(t, sim.V3_10)
	e.declare("q", sim.QueueOptions{})
	e.publish("q", msgs(6)...)
	e.qos(e.ch, 2, true)
	for i := 0; i < 3; i++ {
		if _, ok, err := e.ch.Get("q", false); !ok || err != nil {
			t.Fatalf("get %d: ok=%t err=%v", i, ok, err)
		}
	}
	c := e.consume(e.ch, "q", "c", sim.ConsumeOptions{})
	diff(t, "deliveries", []string{"m4", "m5"}, bodies(c.Deliveries()))
	if s := e.ch.Stats(); s.GlobalVolume != 2 || s.Unacked != 5 {
		t.Errorf("volume=%d unacked=%d, want 2 and 5", s.GlobalVolume, s.Unacked)
	}
}

// global=true with 0 removes the channel-wide limit at once.
func TestQosGlobalZeroRemovesLimit(t *testing.T) {
	// 3.10: from 4.3 global_qos is denied and global=true is per consumer
	// (TestGlobalQosPerConsumer43).
	e := newEnvOn(t, sim.V3_10)
	e.declare("q", sim.QueueOptions{})
	e.qos(e.ch, 1, true)
	c := e.consume(e.ch, "q", "c", sim.ConsumeOptions{})
	e.publish("q", msgs(3)...)
	diff(t, "limited", []string{"m1"}, bodies(c.Deliveries()))
	e.qos(e.ch, 0, true)
	diff(t, "unlimited", []string{"m2", "m3"}, bodies(c.Deliveries()))
	if s := e.ch.Stats(); s.GlobalLimit != 0 || s.GlobalVolume != 0 {
		t.Errorf("limit=%d volume=%d, want 0 and 0", s.GlobalLimit, s.GlobalVolume)
	}
}

// Both limits apply: a delivery needs per-consumer credit and channel room.
func TestQosBothLimitsIntersect(t *testing.T) {
	tests := []struct {
		name             string
		perConsumer, all int
		want1, want2     []string
	}{
		{"channel limit smaller", 2, 3, []string{"m1", "m3"}, []string{"m2"}},
		{"consumer limit smaller", 1, 10, []string{"m1"}, []string{"m2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// 3.10: from 4.3 global_qos is denied and global=true is per consumer
			// (TestGlobalQosPerConsumer43).
			e := newEnvOn(t, sim.V3_10)
			e.declare("q", sim.QueueOptions{})
			e.qos(e.ch, tt.perConsumer, false)
			e.qos(e.ch, tt.all, true)
			c1 := e.consume(e.ch, "q", "c1", sim.ConsumeOptions{})
			c2 := e.consume(e.ch, "q", "c2", sim.ConsumeOptions{})
			e.publish("q", msgs(10)...)
			diff(t, "c1", tt.want1, bodies(c1.Deliveries()))
			diff(t, "c2", tt.want2, bodies(c2.Deliveries()))
		})
	}
}

// qos(10,false) then qos(50,true) keeps both limits.
func TestQosPerConsumerThenGlobalKeepsBoth(t *testing.T) {
	// 3.10: from 4.3 global_qos is denied and global=true is per consumer
	// (TestGlobalQosPerConsumer43).
	e := newEnvOn(t, sim.V3_10)
	e.qos(e.ch, 10, false)
	e.qos(e.ch, 50, true)
	s := e.ch.Stats()
	diff(t, "limits", [2]int{10, 50}, [2]int{s.Prefetch, s.GlobalLimit})
}

// qos(50,true) then qos(10,false) leaves only the per-consumer limit.
func TestQosGlobalThenPerConsumerLeavesOnlyPerConsumer(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{})
	e.qos(e.ch, 2, true)
	e.qos(e.ch, 3, false)
	s := e.ch.Stats()
	diff(t, "limits", [2]int{3, 0}, [2]int{s.Prefetch, s.GlobalLimit})
	c1 := e.consume(e.ch, "q", "c1", sim.ConsumeOptions{})
	c2 := e.consume(e.ch, "q", "c2", sim.ConsumeOptions{})
	e.publish("q", msgs(10)...)
	diff(t, "per consumer only", [2]int{3, 3}, [2]int{len(c1.Deliveries()), len(c2.Deliveries())})
}

// A no-ack consumer has no window of its own: the per-consumer prefetch is ignored.
func TestQosNoAckConsumerIgnoresPerConsumerPrefetch(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{})
	e.qos(e.ch, 1, false)
	c := e.consume(e.ch, "q", "c", sim.ConsumeOptions{NoAck: true})
	e.publish("q", msgs(5)...)
	diff(t, "deliveries", msgs(5), bodies(c.Deliveries()))
	if st := c.Stats(); st.Prefetch != 0 || st.Outstanding != 0 {
		t.Errorf("prefetch=%d outstanding=%d, want 0 and 0", st.Prefetch, st.Outstanding)
	}
}

// No-ack deliveries never raise the channel volume, so they are not limited by it while it has room.
func TestQosNoAckDeliveriesDoNotCountTowardGlobalVolume(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{})
	e.qos(e.ch, 2, true)
	c := e.consume(e.ch, "q", "c", sim.ConsumeOptions{NoAck: true})
	e.publish("q", msgs(5)...)
	diff(t, "deliveries", msgs(5), bodies(c.Deliveries()))
	if v := e.ch.Stats().GlobalVolume; v != 0 {
		t.Errorf("GlobalVolume = %d, want 0", v)
	}
}

// A full channel limit stops no-ack consumers of the channel too (can_send checks Volume >= Limit first).
func TestQosGlobalLimitBlocksNoAckConsumer(t *testing.T) {
	// 3.10: from 4.3 global_qos is denied and global=true is per consumer
	// (TestGlobalQosPerConsumer43).
	e := newEnvOn(t, sim.V3_10)
	e.declare("q", sim.QueueOptions{})
	e.qos(e.ch, 2, true)
	ackMode := e.consume(e.ch, "q", "ack", sim.ConsumeOptions{})
	e.publish("q", "m1", "m2")
	noAck := e.consume(e.ch, "q", "noack", sim.ConsumeOptions{NoAck: true})
	e.publish("q", "m3", "m4")
	diff(t, "ack-mode", []string{"m1", "m2"}, bodies(ackMode.Deliveries()))
	diff(t, "no-ack while full", []string{}, bodies(noAck.Deliveries()))
	e.must(e.ch.Ack(0, true))
	got := len(ackMode.Deliveries()) + len(noAck.Deliveries())
	if got != 2 {
		t.Errorf("after the ack %d messages were delivered, want 2", got)
	}
}

// The channel-wide limit is per channel: another channel has its own.
func TestQosGlobalLimitIsPerChannel(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{})
	ch2 := e.channel(e.conn)
	e.qos(e.ch, 1, true)
	e.qos(ch2, 1, true)
	c1 := e.consume(e.ch, "q", "c1", sim.ConsumeOptions{})
	c2 := e.consume(ch2, "q", "c2", sim.ConsumeOptions{})
	e.publish("q", msgs(5)...)
	diff(t, "deliveries", [][]string{{"m1"}, {"m2"}}, [][]string{bodies(c1.Deliveries()), bodies(c2.Deliveries())})
}

// The channel-wide limit spans every queue the channel consumes from.
func TestQosGlobalLimitSpansQueues(t *testing.T) {
	// 3.10: from 4.3 global_qos is denied and global=true is per consumer
	// (TestGlobalQosPerConsumer43).
	e := newEnvOn(t, sim.V3_10)
	e.declare("a", sim.QueueOptions{})
	e.declare("b", sim.QueueOptions{})
	e.qos(e.ch, 3, true)
	ca := e.consume(e.ch, "a", "ca", sim.ConsumeOptions{})
	cb := e.consume(e.ch, "b", "cb", sim.ConsumeOptions{})
	e.publish("a", "a1", "a2")
	e.publish("b", "b1", "b2")
	diff(t, "a then b", [][]string{{"a1", "a2"}, {"b1"}}, [][]string{bodies(ca.Deliveries()), bodies(cb.Deliveries())})
	e.must(e.ch.Ack(1, false))
	diff(t, "released", [][]string{{}, {"b2"}}, [][]string{bodies(ca.Deliveries()), bodies(cb.Deliveries())})
}

// A cancelled consumer's unacked deliveries still count against the channel limit until settled.
func TestQosCancelledConsumerUnackedStillCountsTowardGlobal(t *testing.T) {
	// 3.10: from 4.3 global_qos is denied and global=true is per consumer
	// (TestGlobalQosPerConsumer43).
	e := newEnvOn(t, sim.V3_10)
	e.declare("q", sim.QueueOptions{})
	e.qos(e.ch, 2, true)
	e.consume(e.ch, "q", "c1", sim.ConsumeOptions{})
	e.publish("q", msgs(4)...)
	e.must(e.ch.Cancel("c1"))
	c2 := e.consume(e.ch, "q", "c2", sim.ConsumeOptions{})
	diff(t, "while c1's deliveries are unacked", []string{}, bodies(c2.Deliveries()))
	e.must(e.ch.Ack(1, false))
	diff(t, "after one ack", []string{"m3"}, bodies(c2.Deliveries()))
}

// prefetch_count is an AMQP short (0..65535); out of range is API misuse, a Go error that leaves the channel open.
func TestQosCountOutOfRangeIsAPIError(t *testing.T) {
	e := newEnv(t)
	e.must(e.ch.Qos(65535, 0, false))
	err := e.ch.Qos(65536, 0, false)
	if err == nil || asError(err) != nil {
		t.Fatalf("Qos(65536) = %v, want a plain Go error", err)
	}
	if e.ch.Err() != nil {
		t.Errorf("channel closed: %v", e.ch.Err())
	}
}
