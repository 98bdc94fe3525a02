package sim_test

import (
	"testing"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// settleEnv is a queue "q" with n messages, all got (unacked) on e.ch with tags 1..n.
func settleEnv(t *testing.T, n int) *env {
	t.Helper()
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{})
	e.publish("q", msgs(n)...)
	for i := 0; i < n; i++ {
		if _, ok, err := e.ch.Get("q", false); !ok || err != nil {
			t.Fatalf("get: ok=%t err=%v", ok, err)
		}
	}
	return e
}

// unacked returns the number of unacked deliveries on e.ch.
func (e *env) unacked() int { return e.ch.Stats().Unacked }

// ack, nack and reject follow RabbitMQ's collect_acks rules for multiple and tag 0.
func TestSettleMultipleAndTagZeroRules(t *testing.T) {
	type op func(ch *sim.Channel) error
	tests := []struct {
		name    string
		pre     []uint64 // tags acked singly first
		op      op
		unacked int // left afterwards, when no error
		errText string
		method  protocol.Method
	}{
		{"ack multiple tag 0 acks all", nil, func(ch *sim.Channel) error { return ch.Ack(0, true) }, 0, "", protocol.Method{}},
		{"ack multiple tag N acks through N", nil, func(ch *sim.Channel) error { return ch.Ack(2, true) }, 1, "", protocol.Method{}},
		{"ack multiple skips already acked", []uint64{1}, func(ch *sim.Channel) error { return ch.Ack(3, true) }, 0, "", protocol.Method{}},
		{"ack single tag 0 is unknown", nil, func(ch *sim.Channel) error { return ch.Ack(0, false) }, 0, "PRECONDITION_FAILED - unknown delivery tag 0", protocol.Method{Class: 60, ID: 80}},
		{"ack multiple needs tag N outstanding", []uint64{2}, func(ch *sim.Channel) error { return ch.Ack(2, true) }, 0, "PRECONDITION_FAILED - unknown delivery tag 2", protocol.BasicAck},
		{"ack multiple never-issued tag", nil, func(ch *sim.Channel) error { return ch.Ack(9, true) }, 0, "PRECONDITION_FAILED - unknown delivery tag 9", protocol.BasicAck},
		{"ack twice", []uint64{1}, func(ch *sim.Channel) error { return ch.Ack(1, false) }, 0, "PRECONDITION_FAILED - unknown delivery tag 1", protocol.BasicAck},
		{"nack multiple tag 0 settles all", nil, func(ch *sim.Channel) error { return ch.Nack(0, true, false) }, 0, "", protocol.Method{}},
		{"nack multiple tag N", nil, func(ch *sim.Channel) error { return ch.Nack(2, true, false) }, 1, "", protocol.Method{}},
		{"nack unknown tag", nil, func(ch *sim.Channel) error { return ch.Nack(7, false, true) }, 0, "PRECONDITION_FAILED - unknown delivery tag 7", protocol.Method{Class: 60, ID: 120}},
		{"nack single tag 0", nil, func(ch *sim.Channel) error { return ch.Nack(0, false, true) }, 0, "PRECONDITION_FAILED - unknown delivery tag 0", protocol.BasicNack},
		{"reject settles one", nil, func(ch *sim.Channel) error { return ch.Reject(2, false) }, 2, "", protocol.Method{}},
		{"reject tag 0 is unknown", nil, func(ch *sim.Channel) error { return ch.Reject(0, false) }, 0, "PRECONDITION_FAILED - unknown delivery tag 0", protocol.Method{Class: 60, ID: 90}},
		{"reject unknown tag", nil, func(ch *sim.Channel) error { return ch.Reject(7, true) }, 0, "PRECONDITION_FAILED - unknown delivery tag 7", protocol.BasicReject},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := settleEnv(t, 3)
			for _, tag := range tt.pre {
				e.must(e.ch.Ack(tag, false))
			}
			err := tt.op(e.ch)
			if tt.errText == "" {
				e.must(err)
				if got := e.unacked(); got != tt.unacked {
					t.Errorf("unacked = %d, want %d", got, tt.unacked)
				}
				return
			}
			wantErr(t, err, 406, tt.errText, tt.method)
			if e.conn.Err() != nil {
				t.Errorf("a soft error closed the connection: %v", e.conn.Err())
			}
		})
	}
}

// multiple=true tag=0 with nothing outstanding is fine.
func TestAckMultipleTagZeroWhenEmptyIsOK(t *testing.T) {
	e := newEnv(t)
	e.must(e.ch.Ack(0, true))
	e.must(e.ch.Nack(0, true, true))
	if e.ch.Err() != nil {
		t.Fatal(e.ch.Err())
	}
}

// multiple=true tag=N needs N itself outstanding; nothing is applied when the error fires, so the close requeues the older ones too.
func TestAckMultipleNeedsTagOutstanding(t *testing.T) {
	e := settleEnv(t, 3)
	e.must(e.ch.Ack(2, false))
	err := e.ch.Ack(2, true)
	wantErr(t, err, 406, "PRECONDITION_FAILED - unknown delivery tag 2", protocol.BasicAck)
	diff(t, "ready after the error close", []string{"m1", "m3"}, e.ready("q"))
}

// A tag from a no-ack delivery, or from another channel, is unknown.
func TestAckUnknownForNoAckAndOtherChannel(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{})
	e.publish("q", "m1", "m2")
	d, _, err := e.ch.Get("q", true)
	e.must(err)
	wantErr(t, e.ch.Ack(d.DeliveryTag, false), 406, "PRECONDITION_FAILED - unknown delivery tag 1", protocol.BasicAck)

	ch1, ch2 := e.channel(e.conn), e.channel(e.conn)
	d, _, err = ch1.Get("q", false)
	e.must(err)
	wantErr(t, ch2.Ack(d.DeliveryTag, false), 406, "PRECONDITION_FAILED - unknown delivery tag 1", protocol.BasicAck)
	e.must(ch1.Ack(d.DeliveryTag, false))
}

// Delivery tags are per channel, start at 1 and grow by one per deliver or get-ok, no-ack ones included.
func TestDeliveryTagsCountEveryDeliverAndGet(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{})
	e.declare("r", sim.QueueOptions{})
	e.publish("q", msgs(4)...)
	g1, _, _ := e.ch.Get("q", true)
	g2, _, _ := e.ch.Get("q", false)
	c := e.consume(e.ch, "q", "c", sim.ConsumeOptions{NoAck: true})
	e.publish("r", "r1")
	g3, _, _ := e.ch.Get("r", false)
	tags := []uint64{g1.DeliveryTag, g2.DeliveryTag}
	for _, d := range c.Deliveries() {
		tags = append(tags, d.DeliveryTag)
	}
	tags = append(tags, g3.DeliveryTag)
	diff(t, "tags", []uint64{1, 2, 3, 4, 5}, tags)
	other := e.channel(e.conn)
	e.publish("r", "r2")
	g4, _, _ := other.Get("r", false)
	if g4.DeliveryTag != 1 {
		t.Errorf("first tag on a new channel = %d, want 1", g4.DeliveryTag)
	}
}

// A requeued message returns to its original position, redelivered.
func TestRequeueReturnsToOriginalPosition(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{})
	e.publish("q", msgs(5)...)
	for i := 0; i < 3; i++ {
		e.ch.Get("q", false)
	}
	e.must(e.ch.Reject(2, true))
	diff(t, "ready", []string{"m2", "m4", "m5"}, e.ready("q"))
	d, _, _ := e.ch.Get("q", false)
	diff(t, "next get", dv{4, "m2", true}, dv{d.DeliveryTag, string(d.Body), d.Redelivered})
}

// Several messages requeued in any order end up in publish order.
func TestRequeueSeveralInAnyOrderEndsInPublishOrder(t *testing.T) {
	orders := map[string][]uint64{"forward": {1, 2, 3, 4}, "reverse": {4, 3, 2, 1}, "mixed": {3, 1, 4, 2}}
	for name, order := range orders {
		t.Run(name, func(t *testing.T) {
			e := settleEnv(t, 4)
			e.publish("q", "m5")
			for i, tag := range order {
				if i%2 == 0 {
					e.must(e.ch.Nack(tag, false, true))
				} else {
					e.must(e.ch.Reject(tag, true))
				}
			}
			diff(t, "ready", msgs(5), e.ready("q"))
			c := e.consume(e.ch, "q", "c", sim.ConsumeOptions{})
			want := []dv{{5, "m1", true}, {6, "m2", true}, {7, "m3", true}, {8, "m4", true}, {9, "m5", false}}
			diff(t, "redeliveries", want, brief(c.Deliveries()))
		})
	}
}

// nack or reject without requeue drops the message (no dead-letter exchange configured).
func TestSettleWithoutRequeueDrops(t *testing.T) {
	e := settleEnv(t, 3)
	e.must(e.ch.Reject(1, false))
	e.must(e.ch.Nack(3, true, false))
	diff(t, "stats", sim.QueueStats{Vhost: "/", Name: "q"}, e.stats("q"))
}

// Acks, nacks and rejects, requeue or not, all free prefetch slots.
func TestSettleAnyKindFreesPrefetchSlot(t *testing.T) {
	settles := map[string]func(ch *sim.Channel, tag uint64) error{
		"ack":            func(ch *sim.Channel, tag uint64) error { return ch.Ack(tag, false) },
		"nack requeue":   func(ch *sim.Channel, tag uint64) error { return ch.Nack(tag, false, true) },
		"nack drop":      func(ch *sim.Channel, tag uint64) error { return ch.Nack(tag, false, false) },
		"reject requeue": func(ch *sim.Channel, tag uint64) error { return ch.Reject(tag, true) },
		"reject drop":    func(ch *sim.Channel, tag uint64) error { return ch.Reject(tag, false) },
	}
	for name, settle := range settles {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			e.declare("q", sim.QueueOptions{})
			e.qos(e.ch, 1, false)
			c := e.consume(e.ch, "q", "c", sim.ConsumeOptions{})
			e.publish("q", "m1", "m2")
			diff(t, "first", []string{"m1"}, bodies(c.Deliveries()))
			e.must(settle(e.ch, 1))
			if got := len(c.Deliveries()); got != 1 {
				t.Errorf("after %s got %d deliveries, want 1", name, got)
			}
		})
	}
}

// basic.recover(requeue=true) requeues every unacked delivery on the channel, get and cancelled consumers' ones included.
func TestRecoverRequeueTrueRequeuesAll(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{})
	e.publish("q", msgs(4)...)
	e.ch.Get("q", false)
	e.qos(e.ch, 1, false)
	e.consume(e.ch, "q", "gone", sim.ConsumeOptions{})
	e.must(e.ch.Cancel("gone"))
	e.must(e.ch.Recover(true))
	if e.unacked() != 0 {
		t.Errorf("unacked = %d, want 0", e.unacked())
	}
	c := e.consume(e.ch, "q", "c", sim.ConsumeOptions{})
	diff(t, "redeliveries", []dv{{3, "m1", true}}, brief(c.Deliveries()))
	diff(t, "ready", []string{"m2", "m3", "m4"}, e.ready("q"))
}

// basic.recover(requeue=false) is 540 NOT_IMPLEMENTED, closing the connection.
func TestRecoverRequeueFalseClosesConnection(t *testing.T) {
	e := settleEnv(t, 2)
	err := e.ch.Recover(false)
	wantErr(t, err, 540, "NOT_IMPLEMENTED - requeue=false", protocol.Method{Class: 60, ID: 110})
	wantClosed(t, e.conn.Err(), asError(err))
	diff(t, "requeued by the close", []string{"m1", "m2"}, e.ready("q"))
}
