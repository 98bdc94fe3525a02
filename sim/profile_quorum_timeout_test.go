package sim_test

import (
	"strings"
	"testing"
	"time"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// RabbitMQ 4.3's quorum queue times its deliveries out itself
// (queue.Rules.QuorumConsumerTimeout); what the channel then does is the
// broker's part, pinned here and by scenarios/library/
// quorum-consumer-timeout*.txt, recorded on 4.3.6.

// timeoutText43 is the channel's 406 when no consumer on it can be
// cancelled: RabbitMQ 4.3.6 passes -1 as the timeout.
func timeoutText43(channel int) string {
	return timeoutText(channel, -time.Millisecond)
}

// The consumer is told with basic.cancel at the delivery's timeout, on a
// channel that stays open; it stays registered, the channel still takes
// the old tag once, and the queue's and the channel's counts part: the
// queue counts the message ready, the channel still holds the tag.
func TestQuorumTimeoutCancels43(t *testing.T) {
	e := newEnvConfig(t, sim.Config{ConsumerTimeout: 5 * time.Second})
	e.declare("q", quorumQueue)
	e.qos(e.ch, 1, false)
	c := e.consume(e.ch, "q", "A", sim.ConsumeOptions{})
	e.publish("q", "m1", "m2")
	d, _ := c.Next()
	if due, _ := e.b.NextTimer(); !due.Equal(sim.Epoch().Add(5 * time.Second)) {
		t.Errorf("next timer at %v, want the delivery's timeout (no channel tick)", due)
	}
	e.b.Advance(5*time.Second - time.Millisecond)
	diff(t, "cancels before", []sim.Cancellation(nil), e.ch.Cancels())
	e.b.Advance(time.Millisecond)
	diff(t, "cancels", []sim.Cancellation{{ConsumerTag: "A"}}, e.ch.Cancels())
	// The trace says why, and how many deliveries the queue took back,
	// for check.Lint (the frame cannot).
	tr := e.b.Trace()
	if last := tr[len(tr)-1]; last.Kind != sim.EventPush || last.Reason != sim.ReasonConsumerTimeout || last.Count != 1 ||
		!strings.HasSuffix(last.String(), "-> basic.cancel ctag=A count=1 reason=consumer timeout") {
		t.Errorf("the cancel's trace event is %v, want the consumer timeout's, count 1", last)
	}
	if e.ch.Err() != nil || c.Cancelled() {
		t.Fatalf("channel %v, consumer cancelled %t: want both kept", e.ch.Err(), c.Cancelled())
	}
	st, _ := e.b.QueueStats("/", "q")
	// Two 2-byte bodies and 2 bytes of property flags each
	// (Rules.QuorumCountsProperties).
	diff(t, "queue", sim.QueueStats{Vhost: "/", Name: "q", Ready: 2, Consumers: 1, Bytes: 8, TimedOut: 1}, st)
	cs := e.ch.Stats()
	if cs.Unacked != 1 || !cs.Consumers[0].TimedOut {
		t.Errorf("channel stats %+v, want the tag held and the consumer timed out", cs)
	}
	e.must(e.ch.Ack(d.DeliveryTag, false))
	again, ok := c.Next()
	if !ok || string(again.Body) != "m1" || !again.Redelivered || again.DeliveryTag != 2 {
		t.Fatalf("after the ack: %+v %t, want m1 again, tag 2", again, ok)
	}
	wantErr(t, e.ch.Ack(d.DeliveryTag, false), 406, "PRECONDITION_FAILED - unknown delivery tag 1", protocol.BasicAck)
}

// Where the channel has no consumer to cancel it closes with 406, the
// timeout "-1 ms": for a basic.get and for a consumer the client
// cancelled (quorum-consumer-timeout-holders.txt, recorded on 4.3.6), and
// for a client that did not announce consumer_cancel_notify, which
// amqp091-go always announces (read in RS@v4.3.6
// rabbit_channel:handle_queue_actions/2).
func TestQuorumTimeoutClosesWithoutCancelNotify43(t *testing.T) {
	e := newEnvConfig(t, sim.Config{ConsumerTimeout: time.Second})
	e.declare("q", quorumQueue)
	conn, err := e.b.Dial(sim.ConnectOptions{NoCancelNotify: true})
	e.must(err)
	silent := e.channel(conn)
	e.publish("q", "s1")
	e.consume(silent, "q", "S", sim.ConsumeOptions{})
	e.b.Advance(time.Second)
	wantErr(t, silent.Err(), 406, timeoutText43(int(silent.ID())), protocol.Method{})
	if e.ch.Err() != nil || conn.Err() != nil {
		t.Errorf("more closed than the channel: %v %v", e.ch.Err(), conn.Err())
	}
	if st, _ := e.b.QueueStats("/", "q"); st.Ready != 1 || st.Unacked != 0 || st.TimedOut != 0 || st.Consumers != 0 {
		t.Errorf("stats %+v, want the message back", st)
	}
}
