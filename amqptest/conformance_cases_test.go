package amqptest_test

// The conformance cases: sections 1-5 and 7-10 of
// docs/rabbitmq-semantics.md, each a short amqp091-go program. See
// conformance_test.go for the harness and the golden files.

import (
	"context"
	"fmt"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// one opens connection c1 with channel ch1 and declares queue "q".
func one(e *env, o ...qopt) (*Conn, *Ch, string) {
	c := e.Conn("c1")
	ch := c.Ch("ch1")
	q := e.Q("q")
	ch.Declare(q, o...)
	return c, ch, q
}

var _ = conformance(
	// ---- 1. basic.qos ----

	confCase{"qos-per-consumer-window", func(t *testing.T, e *env) {
		_, ch, q := one(e)
		ch.Qos(2, 0, false)
		ch.Consume(q, "A")
		ch.Publish(q, "m1", "m2", "m3", "m4", "m5")
		e.Step("ack 1")
		ch.Ack(1, false)
		e.Step("ack 2 and 3")
		ch.Ack(3, true)
		e.Step("counts")
		ch.Declare(q, qopt{Passive: true})
	}},

	confCase{"qos-after-consume-not-retroactive", func(t *testing.T, e *env) {
		// A keeps the unlimited prefetch it was created with; B, created
		// after qos(1), is limited to one.
		_, ch, q := one(e)
		ch.Consume(q, "A")
		ch.Qos(1, 0, false)
		ch.Consume(q, "B")
		ch.Publish(q, "m1", "m2", "m3", "m4", "m5", "m6")
		e.Step("counts")
		ch.Declare(q, qopt{Passive: true})
	}},

	confCase{"qos-global-shared-by-consumers", func(t *testing.T, e *env) {
		_, ch, q := one(e)
		ch.Qos(3, 0, true)
		ch.Consume(q, "A")
		ch.Consume(q, "B")
		ch.Publish(q, "m1", "m2", "m3", "m4", "m5", "m6")
		e.Step("ack 2")
		ch.Ack(2, false)
		e.Step("ack 1")
		ch.Ack(1, false)
		e.Step("counts")
		ch.Declare(q, qopt{Passive: true})
	}},

	confCase{"qos-both-limits", func(t *testing.T, e *env) {
		// qos(1,false) then qos(2,true): each consumer at most one, the
		// channel at most two.
		_, ch, q := one(e)
		ch.Qos(1, 0, false)
		ch.Qos(2, 0, true)
		ch.Consume(q, "A")
		ch.Consume(q, "B")
		ch.Consume(q, "C")
		ch.Publish(q, "m1", "m2", "m3", "m4", "m5")
		e.Step("ack 1")
		ch.Ack(1, false)
		e.Step("ack 2")
		ch.Ack(2, false)
		e.Step("counts")
		ch.Declare(q, qopt{Passive: true})
	}},

	confCase{"qos-global-then-consumer-clears-global", func(t *testing.T, e *env) {
		// qos(3,true) then qos(2,false): only the per-consumer limit is left.
		_, ch, q := one(e)
		ch.Qos(3, 0, true)
		ch.Qos(2, 0, false)
		ch.Consume(q, "A")
		ch.Consume(q, "B")
		ch.Publish(q, "m1", "m2", "m3", "m4", "m5", "m6")
		e.Step("counts")
		ch.Declare(q, qopt{Passive: true})
	}},

	confCase{"qos-consumer-qos-lifts-live-global", func(t *testing.T, e *env) {
		// A was created with no per-consumer prefetch; qos(5,false) removes
		// the global limit at once, and A gets the rest.
		_, ch, q := one(e)
		ch.Qos(1, 0, true)
		ch.Consume(q, "A")
		ch.Publish(q, "m1", "m2", "m3")
		e.Step("qos 5 per consumer")
		ch.Qos(5, 0, false)
	}},

	confCase{"qos-global-lowered-live", func(t *testing.T, e *env) {
		_, ch, q := one(e)
		ch.Qos(5, 0, true)
		ch.Consume(q, "A")
		ch.Publish(q, "m1", "m2", "m3", "m4", "m5", "m6", "m7", "m8")
		e.Step("qos 2 global")
		ch.Qos(2, 0, true)
		e.Step("ack up to 3")
		ch.Ack(3, true)
		e.Step("ack 4")
		ch.Ack(4, false)
		e.Step("counts")
		ch.Declare(q, qopt{Passive: true})
	}},

	confCase{"qos-global-raised-live", func(t *testing.T, e *env) {
		_, ch, q := one(e)
		ch.Qos(2, 0, true)
		ch.Consume(q, "A")
		ch.Publish(q, "m1", "m2", "m3", "m4", "m5")
		e.Step("qos 4 global")
		ch.Qos(4, 0, true)
		e.Step("qos 0 global")
		ch.Qos(0, 0, true)
	}},

	confCase{"qos-global-volume-starts-at-unacked", func(t *testing.T, e *env) {
		// Turned on with three unacked (two deliveries and a get), the
		// global limit starts full; acking the get frees nothing, acking a
		// delivery frees a slot.
		_, ch, q := one(e)
		q2 := e.Q("q2")
		ch.Declare(q2)
		ch.Consume(q, "A")
		ch.Publish(q, "m1", "m2")
		ch.Publish(q2, "x1")
		e.Step("get")
		ch.Get(q2, false)
		ch.Qos(3, 0, true)
		ch.Publish(q, "m3", "m4")
		e.Step("ack the get")
		ch.Ack(3, false)
		e.Step("ack 1")
		ch.Ack(1, false)
		e.Step("counts")
		ch.Declare(q, qopt{Passive: true})
	}},

	confCase{"qos-prefetch-size-closes-connection", func(t *testing.T, e *env) {
		c, ch, q := one(e)
		other := c.Ch("ch2")
		ch.Qos(0, 1024, false)
		e.Step("after")
		other.Declare(q, qopt{Passive: true})
	}},

	confCase{"qos-no-ack-consumer-blocked-by-global", func(t *testing.T, e *env) {
		// No-ack deliveries never count against the global limit, but a
		// no-ack consumer is held back while acking consumers fill it.
		_, ch, q := one(e)
		q2 := e.Q("q2")
		ch.Declare(q2)
		ch.Qos(1, 0, true)
		ch.Consume(q, "A")
		ch.Consume(q2, "B", cons{NoAck: true})
		ch.Publish(q, "m1")
		e.Step("publish to q2")
		ch.Publish(q2, "n1", "n2", "n3")
		e.Step("ack 1")
		ch.Ack(1, false)
		e.Step("more to q2")
		ch.Publish(q2, "n4", "n5")
	}},

	confCase{"qos-no-ack-ignores-consumer-prefetch", func(t *testing.T, e *env) {
		_, ch, q := one(e)
		ch.Qos(1, 0, false)
		ch.Consume(q, "A", cons{NoAck: true})
		ch.Publish(q, "m1", "m2", "m3")
		e.Step("counts")
		ch.Declare(q, qopt{Passive: true})
	}},

	// ---- 2. dispatch ----

	confCase{"dispatch-round-robin", func(t *testing.T, e *env) {
		c, ch, q := one(e)
		ch2 := c.Ch("ch2")
		ch.Consume(q, "A")
		ch2.Consume(q, "B")
		ch.Consume(q, "C")
		ch.Publish(q, "m1", "m2", "m3", "m4", "m5", "m6", "m7")
	}},

	confCase{"dispatch-unblocked-consumer-rejoins-at-tail", func(t *testing.T, e *env) {
		c, ch1, q := one(e)
		ch2, ch3 := c.Ch("ch2"), c.Ch("ch3")
		ch1.Qos(1, 0, false)
		ch1.Consume(q, "A")
		ch2.Consume(q, "B")
		ch3.Consume(q, "C")
		ch1.Publish(q, "m1", "m2", "m3", "m4", "m5")
		e.Step("A acks")
		ch1.Ack(1, false)
		e.Step("publish more")
		ch1.Publish(q, "m6", "m7", "m8")
	}},

	confCase{"dispatch-consumer-priority", func(t *testing.T, e *env) {
		c, ch1, q := one(e)
		ch2 := c.Ch("ch2")
		ch1.Qos(1, 0, false)
		ch1.Consume(q, "A", cons{Args: amqp.Table{"x-priority": 10}})
		ch2.Consume(q, "B")
		ch1.Publish(q, "m1", "m2", "m3")
		e.Step("A acks")
		ch1.Ack(1, false)
		e.Step("publish more")
		ch1.Publish(q, "m4", "m5")
	}},

	confCase{"dispatch-priority-not-an-integer", func(t *testing.T, e *env) {
		c, ch, q := one(e)
		ch.Consume(q, "A", cons{Args: amqp.Table{"x-priority": "high"}})
		e.Step("other channel")
		c.Ch("ch2").Declare(q, qopt{Passive: true})
	}},

	confCase{"dispatch-single-active-consumer", func(t *testing.T, e *env) {
		c, ch1, q := one(e, qopt{Args: amqp.Table{"x-single-active-consumer": true}})
		ch2 := c.Ch("ch2")
		ch1.Consume(q, "A")
		ch2.Consume(q, "B")
		ch2.Declare(q, qopt{Passive: true})
		ch2.Publish(q, "m1", "m2", "m3")
		e.Step("cancel A")
		ch1.Cancel("A")
		e.Step("publish m4")
		ch2.Publish(q, "m4")
		e.Step("close ch1")
		ch1.Close()
		e.Step("counts")
		ch2.Declare(q, qopt{Passive: true})
	}},

	confCase{"dispatch-single-active-consumer-failover-priority", func(t *testing.T, e *env) {
		c, ch1, q := one(e, qopt{Args: amqp.Table{"x-single-active-consumer": true}})
		ch2, ch3 := c.Ch("ch2"), c.Ch("ch3")
		ch1.Consume(q, "A")
		ch2.Consume(q, "B")
		ch1.Publish(q, "m1")
		e.Step("C joins with priority 5")
		ch3.Consume(q, "C", cons{Args: amqp.Table{"x-priority": 5}})
		ch1.Publish(q, "m2")
		e.Step("cancel A")
		ch1.Cancel("A")
		ch1.Publish(q, "m3")
	}},

	confCase{"dispatch-single-active-consumer-exclusive-refused", func(t *testing.T, e *env) {
		c, ch1, q := one(e, qopt{Args: amqp.Table{"x-single-active-consumer": true}})
		ch1.Consume(q, "A", cons{Exclusive: true})
		e.Step("non-exclusive")
		ch2 := c.Ch("ch2")
		ch2.Qos(1, 0, false)
		ch2.Consume(q, "B")
		ch2.Publish(q, "m1", "m2")
		e.Step("basic.get beside the active consumer")
		c.Ch("ch3").Get(q, false)
	}},

	confCase{"dispatch-exclusive-consumer", func(t *testing.T, e *env) {
		c, ch1, q := one(e)
		q2 := e.Q("q2")
		ch1.Declare(q2)
		ch1.Qos(1, 0, false)
		ch1.Consume(q, "A", cons{Exclusive: true})
		ch1.Publish(q, "m1", "m2", "m3")
		e.Step("second consumer")
		c.Ch("ch2").Consume(q, "B")
		e.Step("second exclusive")
		c.Ch("ch3").Consume(q, "C", cons{Exclusive: true})
		e.Step("get is allowed")
		c.Ch("ch4").Get(q, true)
		ch1.Declare(q, qopt{Passive: true})
		e.Step("exclusive beside a consumer")
		c.Ch("ch5").Consume(q2, "D")
		c.Ch("ch6").Consume(q2, "E", cons{Exclusive: true})
		e.Step("counts")
		ch1.Declare(q2, qopt{Passive: true})
	}},

	// ---- 4. basic.get ----

	confCase{"get-beside-full-window", func(t *testing.T, e *env) {
		_, ch, q := one(e)
		ch.Qos(1, 0, false)
		ch.Consume(q, "A")
		ch.Publish(q, "m1", "m2", "m3", "m4")
		e.Step("gets ignore qos")
		ch.Get(q, false)
		ch.Get(q, false)
		e.Step("ack the gets")
		ch.Ack(3, false)
		ch.Ack(2, false)
		e.Step("ack A's")
		ch.Ack(1, false)
		e.Step("counts")
		ch.Declare(q, qopt{Passive: true})
	}},

	confCase{"get-message-count-and-empty", func(t *testing.T, e *env) {
		_, ch, q := one(e)
		ch.Get(q, false)
		ch.Publish(q, "m1", "m2", "m3")
		e.Step("gets")
		ch.Get(q, false)
		ch.Get(q, true)
		ch.Declare(q, qopt{Passive: true})
		ch.Nack(1, false, true)
		ch.Get(q, false)
		ch.Get(q, false)
		ch.Get(q, false)
		ch.Declare(q, qopt{Passive: true})
	}},

	// ---- 3. acks, nacks, rejects ----

	confCase{"ack-multiple", func(t *testing.T, e *env) {
		_, ch, q := one(e)
		ch.Consume(q, "A")
		ch.Publish(q, "m1", "m2", "m3", "m4")
		e.Step("ack up to 3")
		ch.Ack(3, true)
		e.Step("close the channel")
		ch.Close()
		e.Step("what is left")
		ch2 := e.Conn("c2").Ch("ch2")
		ch2.Get(q, true)
		ch2.Get(q, true)
	}},

	confCase{"ack-multiple-of-settled-tag", func(t *testing.T, e *env) {
		// Multiple up to tag 2 fails once 2 is settled, although 1 is not.
		c, ch, q := one(e)
		ch.Consume(q, "A")
		ch.Publish(q, "m1", "m2", "m3")
		e.Step("ack 2")
		ch.Ack(2, false)
		e.Step("ack up to 2")
		ch.Ack(2, true)
		e.Step("requeued")
		ch2 := c.Ch("ch2")
		ch2.Get(q, true)
		ch2.Get(q, true)
		ch2.Get(q, true)
	}},

	confCase{"ack-tag-zero", func(t *testing.T, e *env) {
		c, ch, q := one(e)
		ch.Consume(q, "A")
		ch.Publish(q, "m1", "m2", "m3")
		e.Step("ack 0 multiple")
		ch.Ack(0, true)
		ch.Ack(0, true)
		e.Step("counts")
		ch.Declare(q, qopt{Passive: true})
		ch.Publish(q, "m4")
		e.Step("ack 0 single")
		ch.Ack(0, false)
		e.Step("requeued")
		c.Ch("ch2").Get(q, true)
	}},

	confCase{"ack-nack-multiple-requeue", func(t *testing.T, e *env) {
		_, ch, q := one(e)
		ch.Qos(3, 0, false)
		ch.Consume(q, "A")
		ch.Publish(q, "m1", "m2", "m3", "m4", "m5")
		e.Step("nack up to 2, requeue")
		ch.Nack(2, true, true)
		e.Step("nack 0 multiple, no requeue")
		ch.Nack(0, true, false)
		e.Step("counts")
		ch.Declare(q, qopt{Passive: true})
	}},

	confCase{"ack-reject", func(t *testing.T, e *env) {
		_, ch, q := one(e)
		ch.Publish(q, "m1", "m2", "m3")
		e.Step("gets")
		ch.Get(q, false)
		ch.Get(q, false)
		ch.Get(q, false)
		ch.Reject(2, false)
		ch.Reject(1, true)
		e.Step("get the requeued one")
		ch.Declare(q, qopt{Passive: true})
		ch.Get(q, false)
		ch.Reject(3, false)
		ch.Reject(4, false)
		e.Step("counts")
		ch.Declare(q, qopt{Passive: true})
		e.Step("reject twice")
		ch.Reject(4, true)
	}},

	confCase{"ack-unknown-tag-closes-channel-and-requeues", func(t *testing.T, e *env) {
		c, ch1, q := one(e)
		ch2 := c.Ch("ch2")
		ch1.Consume(q, "A")
		ch1.Publish(q, "m1", "m2", "m3")
		e.Step("B joins")
		ch2.Consume(q, "B")
		ch1.Ack(1, false)
		e.Step("ack 99")
		ch1.Ack(99, false)
		e.Step("after")
		ch1.Ack(2, false)
		ch2.Declare(q, qopt{Passive: true})
		c.Ch("ch3").Declare(q, qopt{Passive: true})
	}},

	confCase{"ack-on-other-channel", func(t *testing.T, e *env) {
		c, ch1, q := one(e)
		ch2 := c.Ch("ch2")
		ch1.Publish(q, "m1")
		e.Step("get on ch1")
		ch1.Get(q, false)
		ch2.Ack(1, false)
		e.Step("after")
		ch1.Ack(1, false)
		e.Step("counts")
		ch1.Declare(q, qopt{Passive: true})
	}},

	confCase{"ack-of-no-ack-delivery", func(t *testing.T, e *env) {
		_, ch, q := one(e)
		ch.Consume(q, "A", cons{NoAck: true})
		ch.Publish(q, "m1")
		e.Step("ack 1")
		ch.Ack(1, false)
	}},

	confCase{"ack-nack-unknown-tag-texts", func(t *testing.T, e *env) {
		c, ch1, q := one(e)
		ch1.Nack(5, false, true)
		e.Step("reject")
		c.Ch("ch2").Reject(6, false)
		e.Step("nack multiple")
		c.Ch("ch3").Nack(7, true, true)
		e.Step("after")
		c.Ch("ch4").Declare(q, qopt{Passive: true})
	}},

	confCase{"ack-requeue-positions", func(t *testing.T, e *env) {
		_, ch, q := one(e)
		ch.Publish(q, "m1", "m2", "m3", "m4", "m5")
		e.Step("gets")
		for range 4 {
			ch.Get(q, false)
		}
		ch.Nack(3, false, true)
		ch.Nack(1, false, true)
		ch.Reject(4, true)
		e.Step("counts and gets")
		ch.Declare(q, qopt{Passive: true})
		for range 5 {
			ch.Get(q, true)
		}
	}},

	confCase{"ack-recover-requeue", func(t *testing.T, e *env) {
		_, ch, q := one(e)
		ch.Consume(q, "A")
		ch.Publish(q, "m1", "m2", "m3")
		e.Step("ack 2, recover")
		ch.Ack(2, false)
		ch.Recover(true)
		e.Step("counts")
		ch.Declare(q, qopt{Passive: true})
	}},

	confCase{"ack-recover-no-requeue-closes-connection", func(t *testing.T, e *env) {
		c, ch, q := one(e)
		c.Ch("ch2")
		ch.Consume(q, "A")
		ch.Publish(q, "m1")
		e.Step("recover false")
		ch.Recover(false)
		e.Step("what is left")
		ch2 := e.Conn("c2").Ch("ch3")
		ch2.Get(q, true)
	}},

	confCase{"channel-flow-false-closes-connection", func(t *testing.T, e *env) {
		c, ch, q := one(e)
		c.Ch("ch2")
		ch.Flow(true)
		ch.Declare(q, qopt{Passive: true})
		ch.Flow(false)
	}},

	// ---- 5. close, cancel, delete ----

	confCase{"close-channel-requeues-in-original-order", func(t *testing.T, e *env) {
		c, ch1, q := one(e)
		ch2 := c.Ch("ch2")
		ch1.Publish(q, "m1", "m2", "m3", "m4", "m5")
		e.Step("gets")
		ch1.Get(q, false)
		ch1.Get(q, false)
		ch1.Get(q, false)
		ch1.Ack(2, false)
		e.Step("consume on ch1")
		ch1.Consume(q, "A")
		e.Step("cancel A")
		ch1.Cancel("A")
		e.Step("close ch1")
		ch1.Close()
		e.Step("consume on ch2")
		ch2.Consume(q, "B")
	}},

	confCase{"close-connection-requeues-all", func(t *testing.T, e *env) {
		c1, ch1, q := one(e)
		ch1b := c1.Ch("ch1b")
		ch2 := e.Conn("c2").Ch("ch2")
		ch1.Publish(q, "m1", "m2", "m3", "m4", "m5", "m6")
		e.Step("consume")
		ch1.Qos(2, 0, false)
		ch1.Consume(q, "A")
		ch1b.Get(q, false)
		ch2.Qos(1, 0, false)
		ch2.Consume(q, "B")
		e.Step("close c1")
		c1.Close()
		e.Step("counts")
		ch2.Declare(q, qopt{Passive: true})
		e.Step("B acks")
		ch2.Ack(1, false)
		e.Step("B acks again")
		ch2.Ack(2, false)
	}},

	confCase{"cancel-keeps-unacked", func(t *testing.T, e *env) {
		_, ch, q := one(e)
		ch.Qos(2, 0, false)
		ch.Consume(q, "A")
		ch.Publish(q, "m1", "m2", "m3")
		e.Step("cancel A")
		ch.Cancel("A")
		ch.Declare(q, qopt{Passive: true})
		ch.Ack(1, false)
		e.Step("cancel unknown tag")
		ch.Cancel("nosuch")
		ch.Declare(q, qopt{Passive: true})
		e.Step("close")
		ch.Close()
		e.Step("after close")
		ch2 := e.Conn("c2").Ch("ch2")
		ch2.Get(q, true)
		ch2.Get(q, true)
		ch2.Get(q, true)
	}},

	confCase{"cancel-keeps-unacked-under-global-limit", func(t *testing.T, e *env) {
		_, ch, q := one(e)
		ch.Qos(2, 0, true)
		ch.Consume(q, "A")
		ch.Publish(q, "m1", "m2", "m3", "m4")
		e.Step("cancel A, B joins")
		ch.Cancel("A")
		ch.Consume(q, "B")
		e.Step("ack 1")
		ch.Ack(1, false)
	}},

	confCase{"queue-delete-cancels-consumers", func(t *testing.T, e *env) {
		c, ch1, q := one(e)
		ch2 := c.Ch("ch2")
		ch1.Consume(q, "A")
		ch2.Qos(1, 0, false)
		ch2.Consume(q, "B")
		ch1.Publish(q, "m1", "m2", "m3", "m4")
		e.Step("delete")
		ch1.Delete(q, false, false)
		e.Step("ack after delete")
		ch1.Ack(1, false)
		ch2.Ack(1, false)
		ch1.Declare(q, qopt{Passive: true})
		e.Step("after")
		ch2.Declare(q, qopt{Passive: true})
	}},

	confCase{"queue-auto-delete-on-last-cancel", func(t *testing.T, e *env) {
		_, ch, q := one(e, qopt{AutoDelete: true})
		ch.Consume(q, "A")
		ch.Publish(q, "m1", "m2")
		e.Step("cancel A")
		ch.Cancel("A")
		ch.Ack(1, false)
		e.Step("gone")
		ch.Declare(q, qopt{Passive: true})
	}},

	confCase{"queue-purge-ready-only", func(t *testing.T, e *env) {
		_, ch, q := one(e)
		ch.Qos(1, 0, false)
		ch.Consume(q, "A")
		ch.Publish(q, "m1", "m2", "m3")
		e.Step("purge")
		ch.Purge(q)
		ch.Declare(q, qopt{Passive: true})
		ch.Purge(q)
		e.Step("nack requeue")
		ch.Nack(1, false, true)
		e.Step("missing")
		ch.Purge(e.Q("nosuch"))
	}},

	confCase{"queue-delete-if-unused", func(t *testing.T, e *env) {
		c, ch, q := one(e)
		ch.Qos(1, 0, false)
		ch.Consume(q, "A")
		ch.Publish(q, "m1", "m2")
		e.Step("delete if-unused with a consumer")
		ch2 := c.Ch("ch2")
		ch2.Delete(q, true, false)
		e.Step("cancel, delete if-unused")
		ch.Cancel("A")
		ch3 := c.Ch("ch3")
		ch3.Delete(q, true, false)
		ch3.Declare(q, qopt{Passive: true})
	}},

	confCase{"queue-delete-if-empty", func(t *testing.T, e *env) {
		c, ch, q := one(e)
		ch.Qos(1, 0, false)
		ch.Consume(q, "A")
		ch.Publish(q, "m1", "m2")
		e.Step("if-empty is checked before if-unused")
		c.Ch("ch2").Delete(q, true, true)
		e.Step("only unacked left")
		ch.Cancel("A")
		ch3 := c.Ch("ch3")
		ch3.Purge(q)
		ch3.Delete(q, true, true)
		e.Step("ack after delete, delete a missing queue")
		ch.Ack(1, false)
		ch3.Delete(q, true, true)
	}},

	// ---- 9. declare-ok counts ----

	confCase{"declare-ok-counts", func(t *testing.T, e *env) {
		c, ch, q := one(e)
		ch.Declare(q)
		ch.Publish(q, "m1", "m2", "m3", "m4")
		e.Step("blocked consumers count")
		ch.Qos(1, 0, false)
		ch.Consume(q, "A")
		ch2 := c.Ch("ch2")
		ch2.Qos(1, 0, false)
		ch2.Consume(q, "B")
		ch.Declare(q)
		e.Step("get, cancel")
		ch2.Get(q, false)
		ch2.Cancel("B")
		ch.Declare(q, qopt{Passive: true})
		ch.Declare(q, qopt{NoWait: true})
		ch.Declare(q, qopt{Passive: true})
	}},

	// ---- 10. declaration errors ----

	confCase{"declare-inequivalent-args", func(t *testing.T, e *env) {
		c, ch, q := one(e, qopt{Args: amqp.Table{"x-max-length": int32(10)}})
		ch.Declare(q, qopt{Args: amqp.Table{"x-max-length": int32(10)}})
		ch.Declare(q, qopt{Args: amqp.Table{"x-max-length": int32(20)}})
		e.Step("none")
		c.Ch("ch2").Declare(q)
		e.Step("durable")
		c.Ch("ch3").Declare(q, qopt{Durable: true, Args: amqp.Table{"x-max-length": int32(10)}})
		e.Step("new argument")
		c.Ch("ch4").Declare(q, qopt{Args: amqp.Table{"x-max-length": int32(10), "x-message-ttl": int32(100)}})
		e.Step("passive ignores arguments")
		c.Ch("ch5").Declare(q, qopt{Passive: true, Args: amqp.Table{"x-max-length": int32(99)}})
	}},

	confCase{"declare-exclusive-locked", func(t *testing.T, e *env) {
		c1, ch, q := one(e, qopt{Exclusive: true})
		ch.Publish(q, "m1")
		c2 := e.Conn("c2")
		c2.Ch("p").Publish(q, "m2") // publishing is not restricted
		e.Step("declare")
		c2.Ch("d1").Declare(q, qopt{Exclusive: true})
		e.Step("passive")
		c2.Ch("d2").Declare(q, qopt{Passive: true})
		e.Step("consume")
		c2.Ch("d3").Consume(q, "B")
		e.Step("get")
		c2.Ch("d4").Get(q, false)
		e.Step("purge")
		c2.Ch("d5").Purge(q)
		e.Step("delete")
		c2.Ch("d6").Delete(q, false, false)
		e.Step("owner")
		ch.Declare(q, qopt{Passive: true})
		ch.Declare(q, qopt{Exclusive: true})
		e.Step("owner redeclares non-exclusive")
		c1.Ch("ch2").Declare(q)
		e.Step("owner closes")
		c1.Close()
		e.Step("gone")
		c2.Ch("d7").Declare(q, qopt{Passive: true})
	}},

	confCase{"declare-amq-prefix-refused", func(t *testing.T, e *env) {
		c := e.Conn("c1")
		q, x := "amq."+e.Q("q"), "amq."+e.X("x")
		c.Ch("ch1").Declare(q)
		e.Step("exchange")
		c.Ch("ch2").DeclareX(x, "direct", nil)
		e.Step("passive")
		c.Ch("ch3").Declare(q, qopt{Passive: true})
		e.Step("predeclared")
		ch4 := c.Ch("ch4")
		ch4.DeclareX("amq.direct", "direct", nil)
		ch4.DeclareX("amq.fanout", "direct", nil)
	}},

	confCase{"declare-missing-queue", func(t *testing.T, e *env) {
		c := e.Conn("c1")
		q := e.Q("nosuch")
		c.Ch("ch1").Declare(q, qopt{Passive: true})
		e.Step("consume")
		c.Ch("ch2").Consume(q, "A")
		e.Step("get")
		c.Ch("ch3").Get(q, false)
		e.Step("bind")
		c.Ch("ch4").Bind(q, "k", "amq.direct", nil)
		e.Step("empty name")
		c.Ch("ch5").Consume("", "B")
		e.Step("after")
		c.Ch("ch6").Declare(e.Q("q"))
	}},

	confCase{"declare-server-named-queue", func(t *testing.T, e *env) {
		_, ch, q := one(e)
		gen := ch.Declare("", qopt{Exclusive: true})
		ch.Publish(gen, "m1")
		e.Step("empty name means the last declared")
		ch.Get("", true)
		ch.Publish(q, "m2")
		e.Step("passive declare")
		ch.Declare(q, qopt{Passive: true})
		e.Step("empty name after a passive declare")
		ch.Get("", true)
		ch.Consume("", "")
		ch.Publish(q, "m3")
	}},

	confCase{"consumer-tag-reuse-closes-connection", func(t *testing.T, e *env) {
		c, ch, q := one(e)
		c.Ch("ch2").Consume(q, "A")
		ch.Consume(q, "A")
		e.Step("reuse on ch1")
		ch.Consume(q, "A")
	}},

	// ---- exchanges, publishing ----

	confCase{"exchange-type-mismatch", func(t *testing.T, e *env) {
		c := e.Conn("c1")
		x := e.X("x")
		ch := c.Ch("ch1")
		ch.DeclareX(x, "direct", nil)
		ch.DeclareX(x, "direct", nil)
		ch.DeclareX(x, "fanout", nil)
		e.Step("after")
		c.Ch("ch2").DeclareX(x, "direct", nil)
	}},

	confCase{"exchange-unknown-type-closes-connection", func(t *testing.T, e *env) {
		c := e.Conn("c1")
		c.Ch("ch2")
		c.Ch("ch1").DeclareX(e.X("x"), "nosuchtype", nil)
	}},

	confCase{"exchange-default-refused", func(t *testing.T, e *env) {
		c, ch, q := one(e)
		ch.Bind(q, "k", "", nil)
		e.Step("declare")
		c.Ch("ch2").DeclareX("", "direct", nil)
		e.Step("delete")
		ch3 := c.Ch("ch3")
		ch3.logErr("delete exchange \"\"", ch3.ch.ExchangeDelete("", false, false))
		e.Step("delete amq.direct")
		ch4 := c.Ch("ch4")
		ch4.logErr("delete exchange amq.direct", ch4.ch.ExchangeDelete("amq.direct", false, false))
	}},

	confCase{"publish-to-missing-exchange", func(t *testing.T, e *env) {
		c, ch, q := one(e)
		ch.Consume(q, "A")
		ch.Publish(q, "m1")
		e.Step("publish to missing exchange")
		x := e.X("nosuch")
		ch.PublishMsg(x, "k", false, amqp.Publishing{Body: []byte("m2")})
		e.Step("after")
		c.Ch("ch2").Declare(q, qopt{Passive: true})
		e.Step("bind to a missing exchange")
		c.Ch("ch3").Bind(q, "k", x, nil)
		e.Step("passive exchange declare")
		ch4 := c.Ch("ch4")
		ch4.logErr("declare exchange passive amq.topic", ch4.ch.ExchangeDeclarePassive("amq.topic", "topic", true, false, false, false, nil))
		ch4.logErr("declare exchange passive nosuch", ch4.ch.ExchangeDeclarePassive(x, "direct", false, false, false, false, nil))
	}},

	confCase{"publish-mandatory-return-and-confirms", func(t *testing.T, e *env) {
		_, ch, q := one(e)
		ch.Confirm()
		ch.PublishMsg("", q, true, amqp.Publishing{Body: []byte("routed")})
		ch.PublishMsg("", e.Q("nowhere"), true, amqp.Publishing{Body: []byte("returned")})
		ch.PublishMsg("", e.Q("nowhere"), false, amqp.Publishing{Body: []byte("dropped")})
		ch.PublishMsg("amq.direct", "nokey", true, amqp.Publishing{Body: []byte("returned2")})
		e.Step("counts")
		ch.Declare(q, qopt{Passive: true})
	}},

	confCase{"publish-exchange-routing", func(t *testing.T, e *env) {
		_, ch, q := one(e)
		qa, qb := e.Q("qa"), e.Q("qb")
		ch.Declare(qa)
		ch.Declare(qb)
		topic, fanout := e.X("topic"), e.X("fanout")
		ch.DeclareX(topic, "topic", nil)
		ch.DeclareX(fanout, "fanout", nil)
		ch.Bind(qa, "a.*", topic, nil)
		ch.Bind(qb, "#.b", topic, nil)
		ch.Bind(q, "ignored", fanout, nil)
		ch.Bind(qa, "ignored", fanout, nil)
		ch.Bind(q, "k", "amq.direct", nil)
		for _, key := range []string{"a.b", "a.c", "x.y.b", "a", "b"} {
			ch.PublishMsg(topic, key, false, amqp.Publishing{Body: []byte("t:" + key)})
		}
		ch.PublishMsg(fanout, "zzz", false, amqp.Publishing{Body: []byte("f")})
		ch.PublishMsg("amq.direct", "k", false, amqp.Publishing{Body: []byte("d")})
		e.Step("consume")
		ch.Consume(q, "Q", cons{Meta: true})
		ch.Consume(qa, "QA", cons{Meta: true})
		ch.Consume(qb, "QB", cons{Meta: true})
	}},

	confCase{"publish-confirms-reject-publish-overflow", func(t *testing.T, e *env) {
		_, ch, q := one(e, qopt{Args: amqp.Table{"x-max-length": int32(2), "x-overflow": "reject-publish"}})
		ch.Confirm()
		ch.Publish(q, "m1", "m2", "m3", "m4")
		e.Step("make room")
		ch.Get(q, true)
		ch.Publish(q, "m5")
		e.Step("counts")
		ch.Declare(q, qopt{Passive: true})
	}},

	confCase{"publish-invalid-expiration", func(t *testing.T, e *env) {
		c, ch, q := one(e)
		ch.PublishMsg("", q, false, amqp.Publishing{Body: []byte("m1"), Expiration: "soon"})
		e.Step("negative")
		ch2 := c.Ch("ch2")
		ch2.PublishMsg("", q, false, amqp.Publishing{Body: []byte("m2"), Expiration: "-5"})
		e.Step("after")
		c.Ch("ch3").Declare(q, qopt{Passive: true})
	}},

	// ---- 7, 8. TTL, max-length, dead-lettering ----

	confCase{"ttl-queue-message-ttl", func(t *testing.T, e *env) {
		_, ch, q := one(e, qopt{Args: amqp.Table{"x-message-ttl": int32(1000)}})
		ch.Publish(q, "m1", "m2")
		e.Step("counts")
		ch.Declare(q, qopt{Passive: true})
		e.Wait(1200 * time.Millisecond)
		ch.Declare(q, qopt{Passive: true})
		ch.Get(q, true)
	}},

	confCase{"ttl-per-message-expires-only-at-head", func(t *testing.T, e *env) {
		_, ch, q := one(e)
		ch.PublishMsg("", q, false, amqp.Publishing{Body: []byte("long"), Expiration: "60000"})
		ch.PublishMsg("", q, false, amqp.Publishing{Body: []byte("short"), Expiration: "200"})
		ch.PublishMsg("", q, false, amqp.Publishing{Body: []byte("none")})
		e.Wait(400 * time.Millisecond)
		ch.Declare(q, qopt{Passive: true})
		ch.Get(q, true)
		ch.Declare(q, qopt{Passive: true})
		ch.Get(q, true)
		ch.Get(q, true)
	}},

	confCase{"ttl-expired-dead-lettered", func(t *testing.T, e *env) {
		c := e.Conn("c1")
		ch := c.Ch("ch1")
		q, dlq, dlx := e.Q("q"), e.Q("dlq"), e.X("dlx")
		ch.DeclareX(dlx, "fanout", nil)
		ch.Declare(dlq)
		ch.Bind(dlq, "", dlx, nil)
		ch.Declare(q, qopt{Args: amqp.Table{"x-message-ttl": int32(500), "x-dead-letter-exchange": dlx}})
		ch.PublishMsg("", q, false, amqp.Publishing{Body: []byte("m1"), Expiration: "300"})
		ch.Publish(q, "m2")
		ch.Consume(dlq, "D", cons{Meta: true})
		e.Wait(700 * time.Millisecond)
		ch.Declare(q, qopt{Passive: true})
	}},

	confCase{"dlx-reject-with-routing-key", func(t *testing.T, e *env) {
		c := e.Conn("c1")
		ch := c.Ch("ch1")
		q, dlq := e.Q("q"), e.Q("dlq")
		ch.Declare(dlq)
		ch.Declare(q, qopt{Args: amqp.Table{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": dlq}})
		ch.Publish(q, "m1", "m2", "m3")
		e.Step("reject and nack")
		ch.Get(q, false)
		ch.Get(q, false)
		ch.Get(q, false)
		ch.Reject(1, false)
		ch.Nack(3, false, false)
		ch.Nack(2, false, true)
		e.Step("consume the dead letters")
		ch.Consume(dlq, "D", cons{Meta: true})
		ch.Declare(q, qopt{Passive: true})
	}},

	confCase{"maxlen-drop-head-dead-lettered", func(t *testing.T, e *env) {
		c := e.Conn("c1")
		ch := c.Ch("ch1")
		q, dlq := e.Q("q"), e.Q("dlq")
		ch.Declare(dlq)
		ch.Declare(q, qopt{Args: amqp.Table{"x-max-length": int32(2), "x-dead-letter-exchange": "",
			"x-dead-letter-routing-key": dlq}})
		ch.Publish(q, "m1", "m2", "m3", "m4")
		e.Step("requeue over the limit")
		ch.Get(q, false)
		ch.Publish(q, "m5")
		e.Step("nack")
		ch.Nack(1, false, true)
		e.Step("consume")
		ch.Declare(q, qopt{Passive: true})
		ch.Consume(q, "A")
		ch.Consume(dlq, "D", cons{Meta: true})
	}},

	confCase{"maxlen-bytes", func(t *testing.T, e *env) {
		_, ch, q := one(e, qopt{Args: amqp.Table{"x-max-length-bytes": int32(10)}})
		// Bodies count, ready messages only; the head goes while over.
		ch.Publish(q, "aaaa", "bbbb", "cccc", "dddddd")
		e.Step("counts")
		ch.Declare(q, qopt{Passive: true})
		ch.Get(q, false)
		ch.Publish(q, "eeee")
		e.Step("publish eeee")
		ch.Declare(q, qopt{Passive: true})
		ch.Publish(q, "ffffffffffff")
		e.Step("publish a body over the limit by itself")
		ch.Declare(q, qopt{Passive: true})
		ch.Nack(1, false, true)
		e.Step("requeue cccc")
		ch.Declare(q, qopt{Passive: true})
		ch.Get(q, true)
	}},

	confCase{"ttl-unacked-never-expire-requeued-dropped", func(t *testing.T, e *env) {
		_, ch, q := one(e, qopt{Args: amqp.Table{"x-message-ttl": int32(600)}})
		ch.Publish(q, "m1", "m2")
		ch.Get(q, false)
		e.Wait(800 * time.Millisecond)
		ch.Declare(q, qopt{Passive: true})
		ch.Nack(1, false, true)
		e.Step("after the requeue")
		ch.Declare(q, qopt{Passive: true})
		ch.Get(q, true)
	}},

	confCase{"ttl-queue-expires", func(t *testing.T, e *env) {
		c, ch, q := one(e, qopt{Args: amqp.Table{"x-expires": int32(1000)}})
		ch.Publish(q, "m1")
		q2 := e.Q("q2")
		ch.Declare(q2, qopt{Args: amqp.Table{"x-expires": int32(1000)}})
		ch.Consume(q2, "A")
		e.Wait(1300 * time.Millisecond)
		c.Ch("ch2").Declare(q, qopt{Passive: true})
		ch.Declare(q2, qopt{Passive: true})
		e.Step("zero")
		c.Ch("ch3").Declare(e.Q("q3"), qopt{Args: amqp.Table{"x-expires": int32(0)}})
	}},

	confCase{"close-channel-deletes-auto-delete-queue", func(t *testing.T, e *env) {
		// The last consumer's channel closes: the auto-delete queue goes,
		// with its unacked and ready messages. A queue that never had a
		// consumer stays.
		c, ch, q := one(e, qopt{AutoDelete: true})
		q2 := e.Q("q2")
		ch.Declare(q2, qopt{AutoDelete: true})
		ch.Qos(1, 0, false)
		ch.Consume(q, "A")
		ch.Publish(q, "m1", "m2")
		ch.Publish(q2, "n1")
		e.Step("get from the other")
		ch.Get(q2, false)
		e.Step("close")
		ch.Close()
		e.Step("after")
		ch2 := c.Ch("ch2")
		ch2.Declare(q2, qopt{Passive: true})
		ch2.Declare(q, qopt{Passive: true})
	}},

	confCase{"ack-recover-restores-prefetch", func(t *testing.T, e *env) {
		_, ch, q := one(e)
		ch.Qos(2, 0, false)
		ch.Consume(q, "A")
		ch.Publish(q, "m1", "m2", "m3")
		e.Step("recover")
		ch.Recover(true)
		e.Step("ack up to 4")
		ch.Ack(4, true)
		e.Step("old tag")
		ch.Ack(1, false)
	}},

	confCase{"maxlen-reject-publish-dlx", func(t *testing.T, e *env) {
		c := e.Conn("c1")
		ch := c.Ch("ch1")
		q, dlq := e.Q("q"), e.Q("dlq")
		ch.Declare(dlq)
		ch.Declare(q, qopt{Args: amqp.Table{"x-max-length": int32(1), "x-overflow": "reject-publish-dlx",
			"x-dead-letter-exchange": "", "x-dead-letter-routing-key": dlq}})
		ch.Confirm()
		ch.Publish(q, "m1", "m2")
		e.Step("a waiting consumer does not help")
		ch.Get(q, false)
		ch.Publish(q, "m3")
		e.Step("requeue over the limit")
		ch.Nack(1, false, true)
		e.Step("counts")
		ch.Declare(q, qopt{Passive: true})
		ch.Consume(dlq, "D", cons{Meta: true})
	}},

	confCase{"ttl-zero", func(t *testing.T, e *env) {
		// x-message-ttl 0: delivered if a consumer can take it at once,
		// else dropped, or dead-lettered with a DLX.
		c := e.Conn("c1")
		ch := c.Ch("ch1")
		q, q2, dlq := e.Q("q"), e.Q("q2"), e.Q("dlq")
		ch.Declare(dlq)
		ch.Declare(q, qopt{Args: amqp.Table{"x-message-ttl": int32(0)}})
		ch.Declare(q2, qopt{Args: amqp.Table{"x-message-ttl": int32(0), "x-dead-letter-exchange": "",
			"x-dead-letter-routing-key": dlq}})
		ch.Publish(q, "m1")
		ch.Publish(q2, "n1")
		ch.PublishMsg("", dlq, false, amqp.Publishing{Body: []byte("x1"), Expiration: "0"})
		e.Step("counts")
		ch.Declare(q, qopt{Passive: true})
		ch.Declare(q2, qopt{Passive: true})
		ch.Get(dlq, true)
		ch.Get(dlq, true)
		e.Step("with a consumer")
		ch.Qos(1, 0, false)
		ch.Consume(q, "A")
		ch.Publish(q, "m2", "m3")
		e.Step("counts again")
		ch.Declare(q, qopt{Passive: true})
	}},

	confCase{"ttl-minimum-of-queue-and-message", func(t *testing.T, e *env) {
		c := e.Conn("c1")
		ch := c.Ch("ch1")
		qa, qb := e.Q("qa"), e.Q("qb")
		ch.Declare(qa, qopt{Args: amqp.Table{"x-message-ttl": int32(60000)}})
		ch.Declare(qb, qopt{Args: amqp.Table{"x-message-ttl": int32(300)}})
		ch.PublishMsg("", qa, false, amqp.Publishing{Body: []byte("a1"), Expiration: "300"})
		ch.PublishMsg("", qa, false, amqp.Publishing{Body: []byte("a2")})
		ch.PublishMsg("", qb, false, amqp.Publishing{Body: []byte("b1"), Expiration: "60000"})
		e.Wait(600 * time.Millisecond)
		ch.Declare(qa, qopt{Passive: true})
		ch.Declare(qb, qopt{Passive: true})
	}},

	confCase{"ttl-queue-expires-reset-by-get", func(t *testing.T, e *env) {
		c, ch, q := one(e, qopt{Args: amqp.Table{"x-expires": int32(1500)}})
		ch.Publish(q, "m1", "m2")
		e.Wait(800 * time.Millisecond)
		ch.Get(q, true)
		e.Wait(800 * time.Millisecond)
		ch.Declare(q, qopt{Passive: true})
		e.Wait(1800 * time.Millisecond)
		c.Ch("ch2").Declare(q, qopt{Passive: true})
	}},

	confCase{"dlx-x-death-counts-cycle", func(t *testing.T, e *env) {
		// q dead-letters rejects to dlq, dlq expires back to q: x-death
		// keeps one entry per (queue, reason), most recent first.
		c := e.Conn("c1")
		ch := c.Ch("ch1")
		q, dlq := e.Q("q"), e.Q("dlq")
		ch.Declare(q, qopt{Args: amqp.Table{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": dlq}})
		ch.Declare(dlq, qopt{Args: amqp.Table{"x-message-ttl": int32(200), "x-dead-letter-exchange": "",
			"x-dead-letter-routing-key": q}})
		ch.Publish(q, "m1")
		e.Step("first cycle")
		ch.Get(q, false)
		ch.Reject(1, false)
		e.Wait(400 * time.Millisecond)
		ch.Get(q, false)
		ch.Nack(2, false, false)
		e.Wait(400 * time.Millisecond)
		ch.Get(q, true)
	}},

	confCase{"declare-invalid-arguments", func(t *testing.T, e *env) {
		c := e.Conn("c1")
		for i, args := range []amqp.Table{
			{"x-max-length": "ten"},
			{"x-message-ttl": int32(-1)},
			{"x-expires": "soon"},
			{"x-overflow": "drop-tail"},
			{"x-dead-letter-routing-key": "k"},
			{"x-dead-letter-exchange": int32(5)},
			{"x-delivery-limit": int32(3)},
			{"x-queue-mode": "eager"},
			{"x-single-active-consumer": "yes"},
			{"x-max-priority": int32(300)},
			{"x-max-length-bytes": int32(-5)},
		} {
			e.Step(fmt.Sprint("args ", i))
			c.Ch(fmt.Sprint("ch", i)).Declare(e.Q(fmt.Sprint("q", i)), qopt{Args: args})
		}
		e.Step("auto_delete")
		ch := c.Ch("chq")
		q := e.Q("q")
		ch.Declare(q)
		ch.Declare(q, qopt{AutoDelete: true})
	}},

	confCase{"publish-immediate-closes-connection", func(t *testing.T, e *env) {
		c, ch, q := one(e)
		c.Ch("ch2")
		ch.PublishMsg("", q, false, amqp.Publishing{Body: []byte("m1")})
		err := ch.ch.PublishWithContext(context.Background(), "", q, false, true, amqp.Publishing{Body: []byte("m2")})
		ch.logErr("publish immediate", err)
		e.Step("after")
		ch3 := e.Conn("c2").Ch("ch3")
		ch3.Declare(q, qopt{Passive: true})
	}},

	confCase{"maxlen-zero-missing-dlx", func(t *testing.T, e *env) {
		// max-length 0: only a message a consumer takes at once survives;
		// dead-lettering to a missing exchange drops silently.
		_, ch, q := one(e, qopt{Args: amqp.Table{"x-max-length": int32(0), "x-dead-letter-exchange": e.X("nosuch")}})
		ch.Publish(q, "m1")
		e.Step("with a consumer")
		ch.Declare(q, qopt{Passive: true})
		ch.Qos(1, 0, false)
		ch.Consume(q, "A")
		ch.Publish(q, "m2", "m3")
		e.Step("nack requeue")
		ch.Declare(q, qopt{Passive: true})
		ch.Nack(1, false, true)
		e.Step("counts")
		ch.Declare(q, qopt{Passive: true})
	}},

	confCase{"queue-message-priority", func(t *testing.T, e *env) {
		_, ch, q := one(e, qopt{Args: amqp.Table{"x-max-priority": int32(5)}})
		for i, p := range []uint8{1, 5, 3, 0, 9, 5, 1} {
			ch.PublishMsg("", q, false, amqp.Publishing{Body: []byte(fmt.Sprint("m", i+1, "p", p)), Priority: p})
		}
		e.Step("consume")
		ch.Qos(2, 0, false)
		ch.Consume(q, "A")
		e.Step("nack requeue the first")
		ch.Nack(1, false, true)
		e.Step("ack all")
		ch.Ack(0, true)
	}},

	confCase{"dispatch-requeue-goes-to-rotation-head", func(t *testing.T, e *env) {
		c, ch1, q := one(e)
		ch2 := c.Ch("ch2")
		ch1.Consume(q, "A")
		ch2.Consume(q, "B")
		ch1.Publish(q, "m1", "m2", "m3", "m4", "m5")
		e.Step("B rejects m2")
		ch2.Reject(1, true)
		e.Step("A nacks m1 and m3")
		ch1.Nack(2, true, true)
	}},

	confCase{"exchange-delete-and-auto-delete", func(t *testing.T, e *env) {
		c, ch, q := one(e)
		x, ax := e.X("x"), e.X("ax")
		ch.DeclareX(x, "direct", nil)
		ch.Bind(q, "k", x, nil)
		ch.logErr("delete exchange x if-unused", ch.ch.ExchangeDelete(x, true, false))
		e.Step("unbind, delete")
		ch2 := c.Ch("ch2")
		ch2.logErr("unbind", ch2.ch.QueueUnbind(q, "k", x, nil))
		ch2.logErr("unbind again", ch2.ch.QueueUnbind(q, "k", x, nil))
		ch2.logErr("delete exchange x if-unused", ch2.ch.ExchangeDelete(x, true, false))
		ch2.logErr("delete missing exchange", ch2.ch.ExchangeDelete(x, false, false))
		e.Step("auto-delete exchange")
		ch2.logErr("declare auto-delete", ch2.ch.ExchangeDeclare(ax, "fanout", false, true, false, false, nil))
		ch2.Bind(q, "", ax, nil)
		ch2.logErr("unbind", ch2.ch.QueueUnbind(q, "", ax, nil))
		ch2.logErr("passive", ch2.ch.ExchangeDeclarePassive(ax, "fanout", false, true, false, false, nil))
	}},

	confCase{"publish-headers-and-topic-patterns", func(t *testing.T, e *env) {
		c := e.Conn("c1")
		ch := c.Ch("ch1")
		hx, tx := e.X("hx"), e.X("tx")
		ch.DeclareX(hx, "headers", nil)
		ch.DeclareX(tx, "topic", nil)
		qs := map[string]string{}
		for _, n := range []string{"all", "any", "hash", "mid", "star"} {
			qs[n] = e.Q(n)
			ch.Declare(qs[n])
		}
		ch.Bind(qs["all"], "", hx, amqp.Table{"x-match": "all", "a": "1", "b": "2"})
		ch.Bind(qs["any"], "", hx, amqp.Table{"x-match": "any", "a": "1", "b": "2"})
		ch.Bind(qs["hash"], "#", tx, nil)
		ch.Bind(qs["mid"], "a.#.c", tx, nil)
		ch.Bind(qs["star"], "*.*", tx, nil)
		for i, h := range []amqp.Table{{"a": "1", "b": "2"}, {"a": "1"}, {"b": "3"}, {"a": "1", "b": "2", "c": "3"}} {
			ch.PublishMsg(hx, "", false, amqp.Publishing{Body: []byte(fmt.Sprint("h", i)), Headers: h})
		}
		for _, key := range []string{"a.c", "a.b.c", "a.b.b.c", "x.y", "", "a..c"} {
			ch.PublishMsg(tx, key, false, amqp.Publishing{Body: []byte("t:" + key)})
		}
		e.Step("counts")
		for _, n := range []string{"all", "any", "hash", "mid", "star"} {
			ch.Consume(qs[n], n)
		}
	}},
)
