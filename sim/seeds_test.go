package sim_test

import (
	"testing"
	"time"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// Tests named TestSeedNNN... check the claims of the seed documents in
// shared/seeds. Where a seed and RabbitMQ disagree, the test asserts what
// RabbitMQ does and says so.

// seedTwoConsumers is seed 000's diagram: a queue and two consumers, each on its own channel with a window of two.
func seedTwoConsumers(t *testing.T) (e *env, ch1, ch2 *sim.Channel, c1, c2 *sim.Consumer) {
	e = newEnv(t)
	e.declare("orders", sim.QueueOptions{})
	ch1, ch2 = e.channel(e.conn), e.channel(e.conn)
	e.qos(ch1, 2, false)
	e.qos(ch2, 2, false)
	c1 = e.consume(ch1, "orders", "c1", sim.ConsumeOptions{})
	c2 = e.consume(ch2, "orders", "c2", sim.ConsumeOptions{})
	e.publish("orders", msgs(6)...)
	return
}

// 000: the queue pushes to each consumer within its window; messages beyond both windows wait in order.
func TestSeed000QueuePushesWithinEachWindow(t *testing.T) {
	e, _, _, c1, c2 := seedTwoConsumers(t)
	diff(t, "windows", [][]string{{"m1", "m3"}, {"m2", "m4"}}, holdings(c1, c2))
	diff(t, "waiting", []string{"m5", "m6"}, e.ready("orders"))
}

// 000: deliveries rotate over the consumers, skipping one whose window is full.
func TestSeed000RoundRobinSkipsFullWindow(t *testing.T) {
	e, _, ch2, c1, c2 := seedTwoConsumers(t)
	holdings(c1, c2)
	e.must(ch2.Ack(1, false))
	diff(t, "only c2 has room", [][]string{{}, {"m5"}}, holdings(c1, c2))
}

// 000: basic.ack frees a slot and the next delivery is pushed at once.
func TestSeed000AckFreesSlotAndNextIsPushed(t *testing.T) {
	e, ch1, _, c1, c2 := seedTwoConsumers(t)
	holdings(c1, c2)
	e.must(ch1.Ack(1, false))
	diff(t, "c1 after its ack", []dv{{3, "m5", false}}, brief(c1.Deliveries()))
}

// 000: a closed channel's unacknowledged deliveries return and are delivered again, marked redelivered.
func TestSeed000ChannelCloseReturnsDeliveriesRedelivered(t *testing.T) {
	e, ch1, ch2, c1, c2 := seedTwoConsumers(t)
	holdings(c1, c2)
	e.must(ch2.Close())
	diff(t, "back in place", []string{"m2", "m4", "m5", "m6"}, e.ready("orders"))
	e.must(ch1.Ack(0, true))
	diff(t, "redelivered to c1", []dv{{3, "m2", true}, {4, "m4", true}}, brief(c1.Deliveries()))
}

// 000: RabbitMQ reads a window of 0 as no limit (and a client that sends no basic.qos runs unlimited).
func TestSeed000ZeroWindowIsNoLimit(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{})
	c := e.consume(e.ch, "q", "c", sim.ConsumeOptions{}) // no basic.qos sent
	e.publish("q", msgs(50)...)
	if n := len(c.Deliveries()); n != 50 {
		t.Errorf("got %d, want 50", n)
	}
}

// 000: ack removes the message; reject with requeue puts it back; without requeue the queue drops it (no DLX).
func TestSeed000SettlementOutcomes(t *testing.T) {
	e := settleEnv(t, 3)
	e.must(e.ch.Ack(1, false))
	e.must(e.ch.Reject(2, true))
	e.must(e.ch.Reject(3, false))
	diff(t, "stats", sim.QueueStats{Vhost: "/", Name: "q", Ready: 1, Bytes: 2}, e.stats("q"))
	diff(t, "ready", []string{"m2"}, e.ready("q"))
}

// 002: an unacked manual-ack delivery stays assigned; the broker does not redeliver it while the connection lives.
// RabbitMQ 3.10's consumer_timeout (30 min default) would close the channel later; amqpsim does not model it, so only 29 minutes are checked.
func TestSeed002UnackedStaysAssignedUntilConnectionDrops(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{})
	e.qos(e.ch, 1, false)
	worker := e.b.Connect("worker")
	wch := e.channel(worker)
	e.qos(wch, 1, false)
	stuck := e.consume(wch, "q", "stuck", sim.ConsumeOptions{})
	e.publish("q", "m1")
	holdings(stuck)
	other := e.consume(e.ch, "q", "other", sim.ConsumeOptions{})
	e.b.Advance(29 * time.Minute)
	diff(t, "nothing redelivered", [][]string{{}}, holdings(other))
	e.must(worker.Close())
	diff(t, "after the connection drops", []dv{{1, "m1", true}}, brief(other.Deliveries()))
}

// 002: at-most-once (auto-ack) loses in-flight messages on a crash; at-least-once (manual ack) redelivers them.
func TestSeed002AckModesOnCrash(t *testing.T) {
	for _, noAck := range []bool{true, false} {
		e := newEnv(t)
		e.declare("q", sim.QueueOptions{})
		worker := e.b.Connect("worker")
		e.consume(e.channel(worker), "q", "w", sim.ConsumeOptions{NoAck: noAck})
		e.publish("q", "m1", "m2")
		e.must(worker.Close())
		want := []string{"m1", "m2"}
		if noAck {
			want = []string{}
		}
		diff(t, "ready after the crash", want, e.ready("q"))
	}
}

// 002: nack with requeue=false drops the message when no dead-letter exchange is configured.
func TestSeed002NackWithoutRequeueDrops(t *testing.T) {
	e := settleEnv(t, 1)
	e.must(e.ch.Nack(1, false, false))
	diff(t, "stats", sim.QueueStats{Vhost: "/", Name: "q"}, e.stats("q"))
}

// 002: consumers on one queue get deliveries round robin, and a disconnected one's unacked go to the remaining ones.
func TestSeed002DisconnectRequeuesToRemainingConsumers(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{})
	var cs []*sim.Consumer
	var conns []*sim.Connection
	for i := 0; i < 3; i++ {
		conn := e.b.Connect("")
		conns = append(conns, conn)
		ch := e.channel(conn)
		e.qos(ch, 10, false)
		cs = append(cs, e.consume(ch, "q", "w", sim.ConsumeOptions{}))
	}
	e.publish("q", msgs(6)...)
	diff(t, "round robin", [][]string{{"m1", "m4"}, {"m2", "m5"}, {"m3", "m6"}}, holdings(cs...))
	e.must(conns[0].Close())
	diff(t, "reassigned", [][]string{{"m1"}, {"m4"}}, holdings(cs[1], cs[2]))
}

// 002: a reasonable prefetch keeps one slow consumer from hoarding the backlog; with 0 the first one takes all.
func TestSeed002PrefetchStopsHoarding(t *testing.T) {
	for _, prefetch := range []int{0, 10} {
		e := newEnv(t)
		e.declare("q", sim.QueueOptions{})
		e.publish("q", msgs(100)...)
		ch1, ch2 := e.channel(e.conn), e.channel(e.conn)
		e.qos(ch1, prefetch, false)
		e.qos(ch2, prefetch, false)
		first := e.consume(ch1, "q", "first", sim.ConsumeOptions{})
		late := e.consume(ch2, "q", "late", sim.ConsumeOptions{})
		want := [2]int{100, 0}
		if prefetch == 10 {
			want = [2]int{10, 10}
		}
		diff(t, "split", want, [2]int{len(first.Deliveries()), len(late.Deliveries())})
	}
}

// 002: x-max-length keeps a primary queue bounded and overflow goes to a
// dead-letter exchange: with drop-head, the oldest ready messages leave for
// the DLQ with reason maxlen.
func TestSeed002MaxLengthOverflowGoesToDeadLetterQueue(t *testing.T) {
	e := newEnv(t)
	e.declare("dlq", sim.QueueOptions{})
	e.declare("q", sim.QueueOptions{Args: sim.Table{"x-max-length": int32(2), "x-dead-letter-exchange": "", "x-dead-letter-routing-key": "dlq"}})
	e.publish("q", "m1", "m2", "m3", "m4")
	diff(t, "q", []string{"m3", "m4"}, e.ready("q"))
	diff(t, "dlq", []string{"m1", "m2"}, e.ready("dlq"))
}

// 002: a failed message nacked without requeue goes to the dead-letter
// exchange instead of looping in the primary queue.
func TestSeed002NackWithoutRequeueDeadLetters(t *testing.T) {
	e := newEnv(t)
	e.declare("dlq", sim.QueueOptions{})
	e.declare("q", sim.QueueOptions{Args: sim.Table{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": "dlq"}})
	e.publish("q", "m1")
	c := e.consume(e.ch, "q", "c", sim.ConsumeOptions{})
	d, _ := c.Next()
	e.must(e.ch.Nack(d.DeliveryTag, false, false))
	diff(t, "q ready", 0, len(e.ready("q")))
	diff(t, "dlq", []string{"m1"}, e.ready("dlq"))
}

// 003 says a non-zero prefetch-size is ignored; RabbitMQ actually closes the connection with 540.
func TestSeed003PrefetchSizeClosesConnection(t *testing.T) {
	e := newEnv(t)
	err := e.ch.Qos(10, 1024, false)
	wantErr(t, err, 540, "NOT_IMPLEMENTED - prefetch_size!=0 (1024)", protocol.BasicQos)
	wantClosed(t, e.conn.Err(), asError(err))
}

// 003: prefetch-count is 16 bits: 65,535 is the maximum.
func TestSeed003PrefetchCountMax65535(t *testing.T) {
	e := newEnv(t)
	e.must(e.ch.Qos(65535, 0, false))
	if err := e.ch.Qos(65536, 0, false); err == nil {
		t.Error("65536 accepted")
	}
}

// 003: with no limit the first consumer receives essentially the whole queue, and later ones sit idle.
func TestSeed003UnlimitedFirstConsumerTakesAll(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{})
	e.publish("q", msgs(1000)...)
	first := e.consume(e.ch, "q", "first", sim.ConsumeOptions{})
	late := e.consume(e.ch, "q", "late", sim.ConsumeOptions{})
	diff(t, "split", [2]int{1000, 0}, [2]int{len(first.Deliveries()), len(late.Deliveries())})
	diff(t, "unacked", 1000, e.stats("q").Unacked)
}

// 003: global=false, prefetch 10, three consumers on a channel: 30 outstanding; global=true: the three share 10.
func TestSeed003GlobalFlagPerConsumerVersusShared(t *testing.T) {
	for _, global := range []bool{false, true} {
		// 3.10: from 4.3 global_qos is denied and global=true is per consumer
		// (TestGlobalQosPerConsumer43).
		e := newEnvOn(t, sim.V3_10)
		e.declare("q", sim.QueueOptions{})
		e.qos(e.ch, 10, global)
		for _, tag := range []string{"a", "b", "c"} {
			e.consume(e.ch, "q", tag, sim.ConsumeOptions{})
		}
		e.publish("q", msgs(100)...)
		want := 30
		if global {
			want = 10
		}
		if got := e.ch.Stats().Unacked; got != want {
			t.Errorf("global=%t: %d outstanding, want %d", global, got, want)
		}
	}
}

// 003: both limits intersect: per-consumer 20 bounds each worker, channel 100 bounds the channel.
func TestSeed003BothLimitsIntersect(t *testing.T) {
	// 3.10: from 4.3 global_qos is denied and global=true is per consumer
	// (TestGlobalQosPerConsumer43).
	e := newEnvOn(t, sim.V3_10)
	e.declare("q", sim.QueueOptions{})
	e.qos(e.ch, 20, false)
	e.qos(e.ch, 100, true)
	var cs []*sim.Consumer
	for i := 0; i < 8; i++ {
		cs = append(cs, e.consume(e.ch, "q", string(rune('a'+i)), sim.ConsumeOptions{}))
	}
	e.publish("q", msgs(1000)...)
	total := 0
	for _, c := range cs {
		n := len(c.Deliveries())
		if n > 20 {
			t.Errorf("%s holds %d, over its window of 20", c.Tag(), n)
		}
		total += n
	}
	if total != 100 {
		t.Errorf("channel holds %d, want 100", total)
	}
}

// 003: global=false 20 and then global=true 100 leaves both in force.
func TestSeed003SecondCallDoesNotReplaceFirst(t *testing.T) {
	// 3.10: from 4.3 global_qos is denied and global=true is per consumer
	// (TestGlobalQosPerConsumer43).
	e := newEnvOn(t, sim.V3_10)
	e.qos(e.ch, 20, false)
	e.qos(e.ch, 100, true)
	s := e.ch.Stats()
	diff(t, "limits", [2]int{20, 100}, [2]int{s.Prefetch, s.GlobalLimit})
}

// 003 says a basic.qos never clears the other scope; RabbitMQ's global=false does clear the channel-wide limit.
func TestSeed003GlobalFalseDoesClearGlobal(t *testing.T) {
	e := newEnv(t)
	e.qos(e.ch, 100, true)
	e.qos(e.ch, 20, false)
	if s := e.ch.Stats(); s.GlobalLimit != 0 {
		t.Errorf("GlobalLimit = %d, want 0: global=false clears it", s.GlobalLimit)
	}
}

// 003: basic.get is not subject to basic.qos: a poller with prefetch 1 accumulates unacked messages with zero consumers.
func TestSeed003GetNotSubjectToQos(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{})
	e.publish("q", msgs(50)...)
	e.qos(e.ch, 1, false)
	e.qos(e.ch, 1, true)
	for i := 0; i < 50; i++ {
		if _, ok, err := e.ch.Get("q", false); !ok || err != nil {
			t.Fatalf("get %d: ok=%t err=%v", i, ok, err)
		}
	}
	diff(t, "stats", sim.QueueStats{Vhost: "/", Name: "q", Unacked: 50}, e.stats("q"))
}

// 003: the window is per consumer and per queue: one worker consuming three queues with prefetch 10 holds 30.
func TestSeed003WindowPerQueue(t *testing.T) {
	e := newEnv(t)
	e.qos(e.ch, 10, false)
	for _, q := range []string{"a", "b", "c"} {
		e.declare(q, sim.QueueOptions{})
		e.publish(q, msgs(20)...)
		e.consume(e.ch, q, "w-"+q, sim.ConsumeOptions{})
	}
	if got := e.ch.Stats().Unacked; got != 30 {
		t.Errorf("%d outstanding, want 30", got)
	}
}

// 003: lowering a channel-wide limit revokes nothing (the broker waits for acks); raising it takes effect at once.
func TestSeed003LoweringWaitsRaisingIsImmediate(t *testing.T) {
	// 3.10: from 4.3 global_qos is denied and global=true is per consumer
	// (TestGlobalQosPerConsumer43).
	e := newEnvOn(t, sim.V3_10)
	e.declare("q", sim.QueueOptions{})
	e.qos(e.ch, 10, true)
	c := e.consume(e.ch, "q", "c", sim.ConsumeOptions{})
	e.publish("q", msgs(30)...)
	holdings(c)
	e.qos(e.ch, 2, true)
	e.must(e.ch.Ack(8, true))
	diff(t, "still over the lowered limit", [][]string{{}}, holdings(c))
	e.qos(e.ch, 12, true)
	if n := len(c.Deliveries()); n != 10 {
		t.Errorf("raising to 12 with 2 outstanding delivered %d, want 10", n)
	}
}

// 003 says a new qos value applies to subsequent deliveries; for global=false RabbitMQ applies it only to consumers created afterwards.
func TestSeed003PerConsumerQosChangeSparesExistingConsumers(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{})
	e.qos(e.ch, 1000, false)
	c := e.consume(e.ch, "q", "c", sim.ConsumeOptions{})
	e.qos(e.ch, 10, false)
	e.publish("q", msgs(50)...)
	if n := len(c.Deliveries()); n != 50 {
		t.Errorf("existing consumer got %d, want all 50 (its window is still 1000)", n)
	}
}

// 003: basic.qos after basic.consume leaves the consumer unlimited: on a reconnect it takes the whole backlog.
func TestSeed003QosAfterConsumeLeavesConsumerUnlimited(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{})
	e.publish("q", msgs(500)...)
	c := e.consume(e.ch, "q", "c", sim.ConsumeOptions{})
	e.qos(e.ch, 10, false)
	if n := len(c.Deliveries()); n != 500 {
		t.Errorf("got %d, want the whole backlog of 500", n)
	}
}
