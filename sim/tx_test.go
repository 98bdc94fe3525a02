package sim_test

import (
	"fmt"
	"testing"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// The tx tests follow RabbitMQ 3.10.8, measured with amqp091-go:
// publishes and acks are held until tx.commit; rollback discards the
// publishes and makes the acked deliveries unacked again; the errors for
// commit without select and for mixing tx and confirm modes.

// Publishes are held until commit; a mandatory one that reaches no queue
// comes back at commit, and commit-ok follows the return.
func TestTxPublishHeldUntilCommit(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{})
	e.must(e.ch.Tx())
	e.must(e.ch.Publish("", "q", sim.PublishOptions{}, sim.Message{Body: []byte("m1")}))
	e.must(e.ch.Publish("", "nosuchq", sim.PublishOptions{Mandatory: true}, sim.Message{Body: []byte("lost")}))
	diff(t, "ready before commit", []string{}, e.ready("q"))
	if r := e.ch.Returns(); len(r) != 0 {
		t.Fatalf("returned before commit: %v", r)
	}
	e.must(e.ch.TxCommit())
	diff(t, "ready after commit", []string{"m1"}, e.ready("q"))
	if r := e.ch.Returns(); len(r) != 1 || string(r[0].Body) != "lost" {
		t.Errorf("returns after commit: %v", r)
	}
}

// A publish is routed when it arrives: a queue bound after it, before the
// commit, does not get it.
func TestTxPublishRoutedWhenPublished(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{})
	e.must(e.ch.Tx())
	e.must(e.ch.Publish("amq.fanout", "", sim.PublishOptions{}, sim.Message{Body: []byte("m1")}))
	e.must(e.ch.QueueBind("q", "", "amq.fanout", nil))
	e.must(e.ch.TxCommit())
	diff(t, "ready", []string{}, e.ready("q"))
}

// An ack in a transaction takes effect at commit: it frees no prefetch
// window before; after a rollback the delivery is unacked again and can be
// acked again.
func TestTxAckHeldUntilCommitAndRolledBack(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{})
	e.publish("q", "m1", "m2")
	e.qos(e.ch, 1, false)
	c := e.consume(e.ch, "q", "c", sim.ConsumeOptions{})
	e.must(e.ch.Tx())
	diff(t, "first", []string{"m1"}, bodies(c.Deliveries()))
	e.must(e.ch.Ack(1, false))
	diff(t, "after ack in tx", []string{}, bodies(c.Deliveries()))
	e.must(e.ch.TxRollback())
	diff(t, "after rollback", []string{}, bodies(c.Deliveries()))
	if st, _ := e.b.QueueStats("/", "q"); st.Unacked != 1 || st.Ready != 1 {
		t.Fatalf("stats after rollback: %+v", st)
	}
	e.must(e.ch.Ack(1, false)) // unacked again
	e.must(e.ch.TxCommit())
	diff(t, "after commit", []string{"m2"}, bodies(c.Deliveries()))
}

// An unknown tag fails at the ack, not at the commit.
func TestTxAckUnknownTagFailsAtOnce(t *testing.T) {
	e := newEnv(t)
	e.must(e.ch.Tx())
	wantErr(t, e.ch.Ack(99, false), 406, "PRECONDITION_FAILED - unknown delivery tag 99", protocol.BasicAck)
}

// Closing the channel loses its held publishes; the messages its held
// settlements named go back to their queue.
func TestTxChannelCloseDiscardsHeldWork(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{})
	e.publish("q", "m1")
	ch := e.channel(e.conn)
	ch.Consume("q", sim.ConsumeOptions{Tag: "c"})
	e.must(ch.Tx())
	e.must(ch.Nack(1, false, true))
	e.must(ch.Publish("", "q", sim.PublishOptions{}, sim.Message{Body: []byte("m3")}))
	diff(t, "ready while held", []string{}, e.ready("q"))
	e.must(ch.Close())
	diff(t, "ready after close", []string{"m1"}, e.ready("q"))
}

// Nack and reject are held too, and applied at commit: requeue puts the
// message back, no requeue dead-letters it.
func TestTxNackAppliedAtCommit(t *testing.T) {
	e := newEnv(t)
	e.declare("dlq", sim.QueueOptions{})
	e.declare("q", sim.QueueOptions{Args: sim.Table{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": "dlq"}})
	e.publish("q", "m1", "m2")
	e.must(e.ch.Tx())
	for range 2 {
		if _, ok, err := e.ch.Get("q", false); !ok || err != nil {
			t.Fatalf("get: %t %v", ok, err)
		}
	}
	e.must(e.ch.Reject(1, false))
	e.must(e.ch.Nack(2, false, true))
	diff(t, "held", []string{}, e.ready("q"))
	e.must(e.ch.TxCommit())
	diff(t, "requeued", []string{"m2"}, e.ready("q"))
	diff(t, "dead-lettered", []string{"m1"}, e.ready("dlq"))
}

// tx.commit settles a held settlement from its highest tag down
// (rabbit_channel's commit: lists:reverse(lists:sort(Acked))), so a
// multiple nack without requeue of m1..m3 dead-letters m3 first: the
// dead-letter queue shows the order. Outside a transaction the same nack
// dead-letters in tag order.
func TestTxCommitSettlesFromTheHighestTag(t *testing.T) {
	for _, tx := range []bool{true, false} {
		e := newEnv(t)
		e.declare("dlq", sim.QueueOptions{})
		e.declare("q", sim.QueueOptions{Args: sim.Table{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": "dlq"}})
		e.publish("q", "m1", "m2", "m3")
		if tx {
			e.must(e.ch.Tx())
		}
		for range 3 {
			if _, ok, err := e.ch.Get("q", false); !ok || err != nil {
				t.Fatalf("get: %t %v", ok, err)
			}
		}
		e.must(e.ch.Nack(3, true, false))
		want := []string{"m1", "m2", "m3"}
		if tx {
			e.must(e.ch.TxCommit())
			want = []string{"m3", "m2", "m1"}
		}
		diff(t, fmt.Sprintf("dead-lettered (tx %v)", tx), want, e.ready("dlq"))
	}
}

// RabbitMQ's errors: commit or rollback without tx.select, and switching
// between tx and confirm modes; tx.select twice is fine.
func TestTxErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(ch *sim.Channel) error
		text string
		m    protocol.Method
	}{
		{"commit without select", func(ch *sim.Channel) error { return ch.TxCommit() }, "PRECONDITION_FAILED - channel is not transactional", protocol.TxCommit},
		{"rollback without select", func(ch *sim.Channel) error { return ch.TxRollback() }, "PRECONDITION_FAILED - channel is not transactional", protocol.TxRollback},
		{"confirm then tx", func(ch *sim.Channel) error { ch.Confirm(); return ch.Tx() }, "PRECONDITION_FAILED - cannot switch from confirm to tx mode", protocol.TxSelect},
		{"tx then confirm", func(ch *sim.Channel) error { ch.Tx(); return ch.Confirm() }, "PRECONDITION_FAILED - cannot switch from tx to confirm mode", protocol.ConfirmSelect},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			wantErr(t, tc.run(e.ch), 406, tc.text, tc.m)
		})
	}
	e := newEnv(t)
	e.must(e.ch.Tx())
	e.must(e.ch.Tx())
}
