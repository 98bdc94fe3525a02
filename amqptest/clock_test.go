package amqptest_test

import (
	"testing"
	"testing/synctest"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/amqpsim/amqpsim/amqptest"
	"github.com/amqpsim/amqpsim/sim"
)

// TestWallClockConsumerTimeout: with sim.Config.Clock set to time.Now,
// the code under test sleeping in a synctest bubble is what moves the
// broker's clock. A
// consumer that holds a delivery for 31 minutes has its channel closed by
// RabbitMQ's consumer timeout (30 minutes by default), with RabbitMQ
// 3.10's 406 and text, at the channel tick 30 minutes after the delivery.
// The broker is a 4.0: from 4.3 a quorum queue times the delivery out
// itself and cancels the consumer instead.
func TestWallClockConsumerTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := amqptest.NewServer(t, amqptest.WithConfig(sim.Config{Clock: time.Now, Version: sim.V4_0}))
		conn := dial(t, srv)
		ch := channel(t, conn)
		declareQuorum(t, ch, "jobs")
		closed := ch.NotifyClose(make(chan *amqp.Error, 1))
		ds, err := ch.Consume("jobs", "", false, false, false, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		publish(t, ch, "jobs", "slow job")
		d := recv(t, ds)
		start := time.Now()
		time.Sleep(31 * time.Minute) // the handler, far too slow
		var e *amqp.Error
		select {
		case e = <-closed:
		default:
			t.Fatal("the channel is still open after 31 minutes")
		}
		want := "PRECONDITION_FAILED - delivery acknowledgement on channel 1 timed out. Timeout value used: 1800000 ms. This timeout value can be configured, see consumers doc guide to learn more"
		if e == nil || e.Code != amqp.PreconditionFailed || e.Reason != want {
			t.Fatalf("channel closed with %v, want 406 %q", e, want)
		}
		if got := srv.Broker().Now().Sub(start); got != 31*time.Minute {
			t.Errorf("the broker's clock moved %v, want the 31 minutes slept", got)
		}
		if err := d.Ack(false); err == nil {
			t.Error("ack on the closed channel succeeded")
		}
		if err := srv.Broker().Advance(time.Minute); err == nil {
			t.Error("Advance accepted beside the wall clock")
		}
	})
}

// TestWallClockTTLAndExpires: message TTLs and x-expires fire while the
// test sleeps.
func TestWallClockTTLAndExpires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := amqptest.NewServer(t, amqptest.WithConfig(sim.Config{Clock: time.Now}))
		ch := channel(t, dial(t, srv))
		if _, err := ch.QueueDeclare("short", false, false, false, false, amqp.Table{"x-message-ttl": int32(60000)}); err != nil {
			t.Fatal(err)
		}
		if _, err := ch.QueueDeclare("brief", false, false, false, false, amqp.Table{"x-expires": int32(300000)}); err != nil {
			t.Fatal(err)
		}
		publish(t, ch, "short", "m1", "m2")
		time.Sleep(59 * time.Second)
		if st := stats(t, srv, "short"); st.Ready != 2 {
			t.Errorf("after 59 s ready = %d, want 2", st.Ready)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if st := stats(t, srv, "short"); st.Ready != 0 {
			t.Errorf("after 60 s ready = %d, want 0", st.Ready)
		}
		time.Sleep(4 * time.Minute)
		synctest.Wait()
		for _, q := range srv.Broker().Queues() {
			if q.Name == "brief" {
				t.Error("queue brief outlived its x-expires")
			}
		}
	})
}

// TestWithBrokerFollowsItsClock: a broker opened with a Clock and served
// WithBroker is woken at its timers as a new one is: its TTL fires while
// the test sleeps, with no call to the broker.
func TestWithBrokerFollowsItsClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := sim.New(sim.Config{Clock: time.Now})
		srv := amqptest.NewServer(t, amqptest.WithBroker(b))
		ch := channel(t, dial(t, srv))
		if _, err := ch.QueueDeclare("short", false, false, false, false, amqp.Table{"x-message-ttl": int32(60000)}); err != nil {
			t.Fatal(err)
		}
		publish(t, ch, "short", "m1")
		time.Sleep(time.Minute)
		synctest.Wait()
		if tr := b.Trace(); tr[len(tr)-1].Kind != sim.EventDeadLetter || tr[len(tr)-1].Reason != "expired" {
			t.Errorf("the last event is %v, want the message's expiry", tr[len(tr)-1])
		}
	})
}
