package sim_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// The consumer timeout as RabbitMQ 3.10.8 answers it, measured with
// consumer_timeout 3000 and channel_tick_interval 1000 (and 24000/12000
// for the tick phase) set with rabbitmqctl eval application:set_env, is
// in scenarios/testdata/measured, whose config directive sets them. This
// file keeps what a scenario cannot show: the order of the broker's timers
// and the x-death time, and the reason the trace gives. The tests run on
// the 3.10 profile (timeoutEnv): the queues they time out are classic,
// whose deliveries 4.3 no longer times out
// (scenarios/testdata/profiles/consumer-timeout-quorum-only.txt).

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
