package sim_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// The consumer-timeout tests pin the simulator to RabbitMQ 3.10.8 measured
// with consumer_timeout 3000 and channel_tick_interval 1000 (and 24000/12000
// for the tick phase), set with rabbitmqctl eval application:set_env.
// They run on the 3.10 profile (timeoutEnv): the queues they time out are
// classic, whose deliveries 4.3 no longer times out
// (TestConsumerTimeoutQuorumOnly43).

// timeoutEnv is newEnvConfig on RabbitMQ 3.10, the release measured.
func timeoutEnv(t *testing.T, cfg sim.Config) *env {
	t.Helper()
	cfg.Version = sim.V3_10
	return newEnvConfig(t, cfg)
}

// timeoutText is RabbitMQ 3.10.8's reply text, verbatim.
func timeoutText(channel int, timeout time.Duration) string {
	return fmt.Sprintf("PRECONDITION_FAILED - delivery acknowledgement on channel %d timed out. Timeout value used: %d ms. This timeout value can be configured, see consumers doc guide to learn more", channel, timeout.Milliseconds())
}

// Measured: channel.close(406, text above, class 0, method 0) on channel 2
// only; the connection and its other channels stay open; the channel's
// basic.get deliveries count like consumer deliveries; both are requeued in
// place with redelivered=true.
func TestConsumerTimeoutClosesOnlyTheChannel(t *testing.T) {
	e := timeoutEnv(t, sim.Config{ConsumerTimeout: 3 * time.Second, ChannelTickInterval: time.Second})
	e.declare("q", sim.QueueOptions{})
	e.publish("q", "g1", "g2", "g3")
	ch2 := e.channel(e.conn)
	for range 2 {
		if _, ok, err := ch2.Get("q", false); !ok || err != nil {
			t.Fatalf("get: ok=%t err=%v", ok, err)
		}
	}
	e.b.Advance(10 * time.Second)

	perr := asError(ch2.Err())
	if perr == nil {
		t.Fatalf("channel 2 not closed by the timeout: %v", ch2.Err())
	}
	wantErr(t, perr, 406, timeoutText(2, 3*time.Second), protocol.Method{})
	if perr.Method != (protocol.Method{Class: 0, ID: 0}) || perr.Hard {
		t.Errorf("class/method %v hard=%t, want 0/0 soft", perr.Method, perr.Hard)
	}
	if e.conn.Err() != nil || e.ch.Err() != nil {
		t.Fatalf("the timeout closed more than channel 2: conn=%v ch1=%v", e.conn.Err(), e.ch.Err())
	}
	diff(t, "requeued", []dv{{1, "g1", true}, {2, "g2", true}, {3, "g3", false}}, brief(e.getAll("q")))
}

// Consumer deliveries are requeued the same way; no-ack deliveries are never
// timed out (measured: a no-ack basic.get channel stayed open).
func TestConsumerTimeoutConsumerAndNoAck(t *testing.T) {
	e := timeoutEnv(t, sim.Config{ConsumerTimeout: 3 * time.Second, ChannelTickInterval: time.Second})
	e.declare("q", sim.QueueOptions{})
	e.declare("free", sim.QueueOptions{})
	noAck := e.channel(e.conn)
	e.consume(noAck, "free", "n", sim.ConsumeOptions{NoAck: true})
	e.publish("free", "n1")
	e.consume(e.ch, "q", "c", sim.ConsumeOptions{})
	e.publish("q", "m1")
	e.b.Advance(time.Hour)
	wantErr(t, asError(e.ch.Err()), 406, timeoutText(1, 3*time.Second), protocol.Method{})
	if noAck.Err() != nil {
		t.Errorf("a no-ack consumer's channel was closed: %v", noAck.Err())
	}
	d, ok, err := noAck.Get("q", true)
	if err != nil || !ok || string(d.Body) != "m1" || !d.Redelivered {
		t.Errorf("requeued delivery: %+v ok=%t err=%v, want m1 redelivered", d, ok, err)
	}
}

// closeAt returns when the broker pushed channel.close for channel id of
// connection conn, as virtual time since the start, or -1.
func closeAt(b *sim.Broker, conn string, id uint16) time.Duration {
	for _, ev := range b.Trace() {
		if ev.Kind == sim.EventPush && ev.Method == protocol.ChannelClose && ev.Conn == conn && ev.Channel == id {
			return ev.At
		}
	}
	return -1
}

// With a tick longer than the channel's hibernation backoff (at most 10 s)
// an idle channel cancels its tick and the delivery that wakes it starts a
// new one. Measured with timeout 24 s and tick 12 s, deliveries 3.0-11.5 s
// after the channel opened: the close came 24.002-24.158 s after the
// delivery every time (not 36 s). The simulator starts the tick at the first
// unacked delivery and closes exactly T after it, for the default 30 min / 60
// s too.
func TestConsumerTimeoutFiresTimeoutAfterTheDelivery(t *testing.T) {
	for _, tc := range []struct {
		timeout, tick time.Duration
		offsets       []time.Duration // delivery time after the channel opened
	}{
		{24 * time.Second, 12 * time.Second, []time.Duration{3003 * time.Millisecond, 4704 * time.Millisecond, 6402 * time.Millisecond, 8104 * time.Millisecond, 9802 * time.Millisecond, 11508 * time.Millisecond}},
		{3 * time.Second, time.Second, []time.Duration{100 * time.Millisecond, 3102 * time.Millisecond, 3852 * time.Millisecond}},
		{0, 0, []time.Duration{25 * time.Second, 90 * time.Second}}, // RabbitMQ's defaults: 30 min, 60 s
	} {
		for _, off := range tc.offsets {
			t.Run(fmt.Sprintf("%v/%v/%v", tc.timeout, tc.tick, off), func(t *testing.T) {
				e := timeoutEnv(t, sim.Config{ConsumerTimeout: tc.timeout, ChannelTickInterval: tc.tick})
				timeout, tick := tc.timeout, tc.tick
				if timeout == 0 {
					timeout, tick = sim.DefaultConsumerTimeout, sim.DefaultChannelTickInterval
				}
				e.declare("q", sim.QueueOptions{})
				e.consume(e.ch, "q", "c", sim.ConsumeOptions{})
				e.b.Advance(off)
				e.publish("q", "m")
				// Step in uneven slices to show the result does not depend
				// on how the clock is advanced.
				for range 3 {
					e.b.Advance(timeout/3 + 7*time.Millisecond)
				}
				e.b.Advance(2 * tick)
				got := closeAt(e.b, "app", 1) - off
				if got != timeout {
					t.Errorf("closed %v after the delivery, want %v", got, timeout)
				}
				if got < timeout || got > timeout+tick {
					t.Errorf("closed %v after the delivery, outside RabbitMQ's [T, T+tick] = [%v, %v]", got, timeout, timeout+tick)
				}
			})
		}
	}
}

// The simulator's tick model: it runs while the channel holds unacked
// deliveries, counted from the first; only the oldest delivery is checked;
// it stops when the last one is settled and restarts with the next.
// RabbitMQ 3.10.8 with timeout 3 s and tick 1 s: m1 at 0, m2 at 2 s, ack of
// m1 at 2.5 s: closed 5.018 s after m1 (m2 became the oldest); acked in time,
// idle, a new delivery: closed 3.527 s after it. Both lie in [T, T+tick]
// after the delivery that timed out; the simulator's exact times follow.
func TestConsumerTimeoutTickModel(t *testing.T) {
	cfg := sim.Config{ConsumerTimeout: 3 * time.Second, ChannelTickInterval: time.Second}
	t.Run("oldest unacked counts", func(t *testing.T) {
		e := timeoutEnv(t, cfg)
		e.declare("q", sim.QueueOptions{})
		c := e.consume(e.ch, "q", "c", sim.ConsumeOptions{})
		e.publish("q", "o1")
		d1, _ := c.Next()
		e.b.Advance(2 * time.Second)
		e.publish("q", "o2")
		e.b.Advance(500 * time.Millisecond)
		e.must(e.ch.Ack(d1.DeliveryTag, false))
		e.b.Advance(10 * time.Second)
		// Ticks at 1, 2, 3, 4, 5 s after o1; o2 (delivered at 2 s) is 3 s
		// old at the 5 s tick.
		if got := closeAt(e.b, "app", 1); got != 5*time.Second {
			t.Errorf("closed at %v, want 5s (RabbitMQ: 5.018s)", got)
		}
	})
	t.Run("tick stops when nothing is unacked and restarts", func(t *testing.T) {
		e := timeoutEnv(t, cfg)
		e.declare("q", sim.QueueOptions{})
		c := e.consume(e.ch, "q", "c", sim.ConsumeOptions{})
		e.publish("q", "a1")
		d1, _ := c.Next()
		e.b.Advance(500 * time.Millisecond)
		e.must(e.ch.Ack(d1.DeliveryTag, false))
		e.b.Advance(2200 * time.Millisecond)
		e.publish("q", "a2") // at 2.7 s: a new tick, 3.7, 4.7, 5.7 s
		e.b.Advance(10 * time.Second)
		if got := closeAt(e.b, "app", 1); got != 5700*time.Millisecond {
			t.Errorf("closed at %v, want 5.7s (a tick kept from 0 would give 6s)", got)
		}
	})
	t.Run("acked in time never closes", func(t *testing.T) {
		e := timeoutEnv(t, cfg)
		e.declare("q", sim.QueueOptions{})
		c := e.consume(e.ch, "q", "c", sim.ConsumeOptions{})
		for i := range 20 {
			e.publish("q", fmt.Sprint("m", i))
			d, _ := c.Next()
			e.b.Advance(2900 * time.Millisecond)
			e.must(e.ch.Ack(d.DeliveryTag, false))
		}
		e.b.Advance(time.Hour)
		if e.ch.Err() != nil {
			t.Errorf("closed: %v", e.ch.Err())
		}
	})
}

// A negative Config.ConsumerTimeout disables the check, as a non-integer
// consumer_timeout does (measured with application:set_env(rabbit,
// consumer_timeout, false): an unacked basic.get held for 6 s, no close).
func TestConsumerTimeoutDisabled(t *testing.T) {
	e := timeoutEnv(t, sim.Config{ConsumerTimeout: -1})
	e.declare("q", sim.QueueOptions{})
	e.publish("q", "d")
	if _, ok, err := e.ch.Get("q", false); !ok || err != nil {
		t.Fatalf("get: ok=%t err=%v", ok, err)
	}
	e.b.Advance(1000 * time.Hour)
	if e.ch.Err() != nil {
		t.Errorf("closed: %v", e.ch.Err())
	}
}

// Timers fire in due order whatever the Advance step: a message whose TTL
// ends at minute 3 is dead-lettered at minute 3, before the consumer timeout
// closes the channel at minute 5, and the timeout's requeue does not bring it
// back.
func TestTimerOrderTTLBeforeConsumerTimeout(t *testing.T) {
	for _, step := range []time.Duration{time.Second, 7 * time.Second, 59 * time.Second, time.Minute, 150 * time.Second, 4 * time.Minute, 10 * time.Minute} {
		t.Run(step.String(), func(t *testing.T) {
			e := timeoutEnv(t, sim.Config{ConsumerTimeout: 5 * time.Minute})
			e.declare("dlq", sim.QueueOptions{})
			e.declare("work", sim.QueueOptions{Args: sim.Table{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": "dlq"}})
			e.qos(e.ch, 1, false)
			c := e.consume(e.ch, "work", "c", sim.ConsumeOptions{})
			e.publish("work", "held")
			e.must(e.b.Publish("/", "", "work", sim.Message{Properties: sim.Properties{Expiration: "180000"}, Body: []byte("ttl")}))
			if got := bodies(c.Deliveries()); len(got) != 1 || got[0] != "held" {
				t.Fatalf("deliveries %v", got)
			}
			for elapsed := time.Duration(0); elapsed < 10*time.Minute; elapsed += step {
				e.b.Advance(step)
			}
			var order []string
			for _, ev := range e.b.Trace() {
				switch {
				case ev.Kind == sim.EventDeadLetter:
					order = append(order, fmt.Sprintf("%v dead-letter", ev.At))
				case ev.Kind == sim.EventPush && ev.Method == protocol.ChannelClose:
					order = append(order, fmt.Sprintf("%v -> channel.close", ev.At))
				}
			}
			diff(t, "timer order", []string{"3m0s dead-letter", "5m0s -> channel.close"}, order)
			ms, _ := e.b.QueueMessages("/", "dlq")
			if len(ms) != 1 || string(ms[0].Body) != "ttl" {
				t.Fatalf("dlq = %v", ms)
			}
			if _, ts := deathsOf(t, ms[0].Headers); len(ts) != 1 || !ts[0].Equal(sim.Epoch().Add(3*time.Minute)) {
				t.Errorf("x-death time %v, want %v", ts, sim.Epoch().Add(3*time.Minute))
			}
			diff(t, "work after the timeout", []string{"held"}, e.ready("work"))
		})
	}
}

// The timeout fires on a channel tick, not at delivery + timeout: with
// timeout 3 s and tick 1 s, m1 at 0 s, m2 at 2.5 s and m1 acked at 2.7 s,
// the oldest delivery (m2) is 3 s old at 5.5 s, and the channel closes at
// the 6 s tick (rabbit_channel:handle_info(tick) checks the oldest unacked
// delivery against consumer_timeout only when the tick runs).
func TestConsumerTimeoutFiresOnTheTickAfterTheOldestDeliveryTimesOut(t *testing.T) {
	e := timeoutEnv(t, sim.Config{ConsumerTimeout: 3 * time.Second, ChannelTickInterval: time.Second})
	e.declare("q", sim.QueueOptions{})
	e.consume(e.ch, "q", "c", sim.ConsumeOptions{})
	e.publish("q", "m1")
	e.b.Advance(2500 * time.Millisecond)
	e.publish("q", "m2")
	e.b.Advance(200 * time.Millisecond)
	e.must(e.ch.Ack(1, false))
	e.b.Advance(2800 * time.Millisecond) // 5.5 s: m2 is exactly 3 s old, between ticks
	if e.ch.Err() != nil {
		t.Fatalf("closed between ticks: %v", e.ch.Err())
	}
	e.b.Advance(time.Second)
	if at := closeAt(e.b, "app", 1); at != 6*time.Second {
		t.Errorf("closed at %v, want the 6s tick", at)
	}
}

// TestConsumerTimeoutCloseReason: the EventChannelClose of a channel the
// consumer timeout closed says so (ReasonConsumerTimeout), however it
// came (the tick, ForceConsumerTimeout, FaultConsumerTimeout); another
// channel error's does not.
func TestConsumerTimeoutCloseReason(t *testing.T) {
	for _, how := range []string{"tick", "force", "fault", "error"} {
		b := sim.New(sim.Config{Version: sim.V3_10})
		ch, _ := b.Connect("app").Channel()
		ch.QueueDeclare("q", sim.QueueOptions{})
		if how == "fault" {
			b.CloseAtDelivery(sim.DeliveryFault{N: 1, Action: sim.FaultConsumerTimeout})
		}
		b.Publish("/", "", "q", sim.Message{Body: []byte("m")})
		ch.Get("q", false)
		switch how {
		case "tick":
			b.Advance(31 * time.Minute)
		case "force":
			if err := ch.ForceConsumerTimeout(); err != nil {
				t.Fatal(err)
			}
		case "error":
			ch.Ack(99, false)
		}
		var reasons []string
		for _, e := range b.Trace() {
			if e.Kind == sim.EventChannelClose {
				reasons = append(reasons, e.Reason)
			}
		}
		want := []string{sim.ReasonConsumerTimeout}
		if how == "error" {
			want = []string{""}
		}
		if fmt.Sprint(reasons) != fmt.Sprint(want) {
			t.Errorf("%s: channel.close reasons %q, want %q", how, reasons, want)
		}
	}
}
