package sim_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/amqpsim/amqpsim/sim"
)

// bodiesOf reads every unread delivery of c and returns the bodies.
func bodiesOf(c *sim.Consumer) []string {
	var out []string
	for _, d := range c.Deliveries() {
		out = append(out, string(d.Body))
	}
	return out
}

// recover and nack-multiple requeue one (queue, consumer tag) group at a time,
// basic.get deliveries first and consumer tags in ascending order, and a
// waiting consumer gets each group before the next is requeued (measured on
// RabbitMQ 3.10.8: "zz" holding m1 m3 m5 and "aa" holding m2 m4 m6 are
// redelivered to W as m2 m4 m6 m1 m3 m5).
func TestRecoverRequeuesGroupByGroup(t *testing.T) {
	for _, settle := range []string{"recover", "nack-multiple"} {
		t.Run(settle, func(t *testing.T) {
			e := newEnv(t)
			e.declare("q", sim.QueueOptions{})
			zz := e.consume(e.ch, "q", "zz", sim.ConsumeOptions{})
			aa := e.consume(e.ch, "q", "aa", sim.ConsumeOptions{})
			e.publish("q", "m1", "m2", "m3", "m4", "m5", "m6")
			if got, want := bodiesOf(zz), []string{"m1", "m3", "m5"}; !cmp.Equal(got, want) {
				t.Fatalf("zz holds %v, want %v", got, want)
			}
			bodiesOf(aa)
			e.must(e.ch.Cancel("zz"))
			e.must(e.ch.Cancel("aa"))
			w := e.consume(e.channel(e.conn), "q", "w", sim.ConsumeOptions{NoAck: true})
			if settle == "recover" {
				e.must(e.ch.Recover(true))
			} else {
				e.must(e.ch.Nack(0, true, true))
			}
			if diff := cmp.Diff([]string{"m2", "m4", "m6", "m1", "m3", "m5"}, bodiesOf(w)); diff != "" {
				t.Errorf("W's redeliveries (-want +got):\n%s", diff)
			}
		})
	}
}

// A basic.get delivery is requeued before the consumers' groups (RabbitMQ
// 3.10.8: get'd m3 plus "aaa" holding m1 m2 come back to W as m3 m1 m2).
func TestRecoverRequeuesGetDeliveriesFirst(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{})
	e.publish("q", "m1", "m2", "m3")
	e.qos(e.ch, 2, false)
	aaa := e.consume(e.ch, "q", "aaa", sim.ConsumeOptions{})
	if _, ok, err := e.ch.Get("q", false); err != nil || !ok {
		t.Fatalf("get: ok=%t err=%v", ok, err)
	}
	bodiesOf(aaa)
	e.must(e.ch.Cancel("aaa"))
	w := e.consume(e.channel(e.conn), "q", "w", sim.ConsumeOptions{NoAck: true})
	e.must(e.ch.Recover(true))
	if diff := cmp.Diff([]string{"m3", "m1", "m2"}, bodiesOf(w)); diff != "" {
		t.Errorf("W's redeliveries (-want +got):\n%s", diff)
	}
}

// A channel close requeues everything at once, in publish order (RabbitMQ
// 3.10.8: W gets m1..m6), unlike recover.
func TestChannelCloseRequeuesAllAtOnce(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{})
	e.consume(e.ch, "q", "zz", sim.ConsumeOptions{})
	e.consume(e.ch, "q", "aa", sim.ConsumeOptions{})
	e.publish("q", "m1", "m2", "m3", "m4", "m5", "m6")
	w := e.consume(e.channel(e.conn), "q", "w", sim.ConsumeOptions{NoAck: true})
	e.must(e.ch.Close())
	if diff := cmp.Diff([]string{"m1", "m2", "m3", "m4", "m5", "m6"}, bodiesOf(w)); diff != "" {
		t.Errorf("W's redeliveries (-want +got):\n%s", diff)
	}
}

// A passive declare of "" does not mean the channel's last queue (RabbitMQ
// 3.10.8: "NOT_FOUND - no queue ” in vhost '/'"), while get does.
func TestPassiveDeclareOfEmptyNameIsNotFound(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{})
	_, err := e.ch.QueueDeclare("", sim.QueueOptions{Passive: true})
	var perr *sim.Error
	if !errors.As(err, &perr) || perr.Code != 404 || perr.Text != "NOT_FOUND - no queue '' in vhost '/'" {
		t.Fatalf("passive declare \"\": %v", err)
	}
}

// queue.bind to a headers exchange checks x-match (RabbitMQ 3.10.8 texts).
func TestHeadersBindingXMatchIsValidated(t *testing.T) {
	for _, tc := range []struct {
		xmatch any
		want   string
	}{
		{"bogus", `PRECONDITION_FAILED - Invalid x-match field value <<"bogus">>; expected all, any, all-with-x, or any-with-x`},
		{1, "PRECONDITION_FAILED - Invalid x-match field type signedint (value 1); expected longstr"},
	} {
		e := newEnv(t)
		e.declare("q", sim.QueueOptions{})
		err := e.ch.QueueBind("q", "", "amq.headers", sim.Table{"x-match": tc.xmatch})
		var perr *sim.Error
		if !errors.As(err, &perr) || perr.Code != 406 || perr.Text != tc.want || perr.Hard {
			t.Errorf("x-match %v: got %v, want 406 %q on the channel", tc.xmatch, err, tc.want)
		}
	}
}
