package sim_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// TestAckOnWaitingChannelAppliedWhenItResumes: an in-process ack on a
// channel that waits in a call is queued, not refused: the delivery stays
// unacked until the call ends, and is acked then, after the call's own
// reply, as RabbitMQ's channel process takes its mailbox in order.
func TestAckOnWaitingChannelAppliedWhenItResumes(t *testing.T) {
	c := newCluster(t)
	_, ch1 := c.channel("on1", 1)
	c.quorum(ch1, "qq")
	on3, ch3 := c.channel("on3", 3)
	_, err := ch3.Consume("qq", sim.ConsumeOptions{Tag: "A"})
	c.must(err)
	c.must(ch1.Publish("", "qq", sim.PublishOptions{}, persistent("m1")))
	checkPushes(t, on3, "basic.deliver A #1 m1")
	_, err = ch1.QueueDeclare("cq1", sim.QueueOptions{Durable: true})
	c.must(err)

	// Cut off, node 3 waits for cq1's home to answer a passive declare.
	c.must(c.b.Partition([]int{3}))
	if _, err := ch3.QueueDeclare("cq1", sim.QueueOptions{Passive: true}); !errors.Is(err, sim.ErrQueued) {
		t.Fatalf("passive declare across the cut: %v, want ErrQueued", err)
	}
	if err := ch3.Ack(1, false); !errors.Is(err, sim.ErrQueued) {
		t.Fatalf("ack on the waiting channel: %v, want ErrQueued", err)
	}
	if st := stats(t, c.b, "qq"); st.Unacked != 1 {
		t.Errorf("before the heal: unacked %d, want 1 (the ack waits)", st.Unacked)
	}
	c.b.Heal()
	checkPushes(t, on3, "queue.declare-ok")
	if st := stats(t, c.b, "qq"); st.Unacked != 0 || st.Ready != 0 {
		t.Errorf("after the heal: ready %d unacked %d, want 0 and 0 (the queued ack applied)", st.Ready, st.Unacked)
	}
}

func stats(t *testing.T, b *sim.Broker, q string) sim.QueueStats {
	t.Helper()
	st, err := b.QueueStats("/", q)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestQueuedCloseOnChannelTheTimeoutCloses: a channel.close queued behind
// a call that ends with the channel's close is answered with close-ok, as
// RabbitMQ's closing channel answers channel.close; the methods queued
// with it are dropped.
func TestQueuedCloseOnChannelTheTimeoutCloses(t *testing.T) {
	c, on1, ch1 := classicHomeDown(t, true)
	if _, err := ch1.QueueDeclare("cq", sim.QueueOptions{Passive: true}); !errors.Is(err, sim.ErrQueued) {
		t.Fatalf("passive declare of a queue whose home crashed: %v, want ErrQueued", err)
	}
	if err := ch1.Qos(3, 0, false); !errors.Is(err, sim.ErrQueued) {
		t.Fatalf("qos on the waiting channel: %v, want ErrQueued", err)
	}
	if err := ch1.Close(); !errors.Is(err, sim.ErrQueued) {
		t.Fatalf("close on the waiting channel: %v, want ErrQueued", err)
	}
	c.must(c.b.Advance(sim.QueueOperationTimeout))
	// In process the channel closes at once (no AwaitCloseOk): the
	// queued close meets a closed channel and is dropped with the qos.
	checkPushes(t, on1, "channel.close 404 NOT_FOUND - failed to perform operation on queue 'cq' in vhost '/' due to timeout")
}

// TestQueuedCloseAnsweredWhileClosing is the same with the shell's
// AwaitCloseOk: the channel the timeout closed waits for the client's
// close-ok, and answers the client's queued channel.close with close-ok.
func TestQueuedCloseAnsweredWhileClosing(t *testing.T) {
	c := newCluster(t)
	_, ch2 := c.channel("on2", 2)
	_, err := ch2.QueueDeclare("cq", sim.QueueOptions{Durable: true})
	c.must(err)
	c.must(c.b.KillNode(2))
	on1, err := c.b.Dial(sim.ConnectOptions{Name: "on1", Node: 1, Shell: sim.ShellOptions{AwaitCloseOk: true}})
	c.must(err)
	ch1, err := on1.Channel()
	c.must(err)
	if _, err := ch1.QueueDeclare("cq", sim.QueueOptions{Passive: true}); !errors.Is(err, sim.ErrQueued) {
		t.Fatalf("passive declare of a queue whose home crashed: %v, want ErrQueued", err)
	}
	if err := ch1.Close(); !errors.Is(err, sim.ErrQueued) {
		t.Fatalf("close on the waiting channel: %v, want ErrQueued", err)
	}
	c.must(c.b.Advance(sim.QueueOperationTimeout))
	checkPushes(t, on1, "channel.close 404 NOT_FOUND - failed to perform operation on queue 'cq' in vhost '/' due to timeout", "channel.close-ok")
	if !ch1.Closing() {
		t.Error("the channel does not wait for the client's close-ok")
	}
	c.must(ch1.CloseOk())
}

// TestRepliesInTheOutbox: a connection that takes replies from the outbox
// (a shell's) gets each one in order with the rest: basic.consume-ok
// before the deliveries the consume caused, and no reply to a method
// sent with nowait.
func TestRepliesInTheOutbox(t *testing.T) {
	b := sim.New(sim.Config{})
	conn, err := b.Dial(sim.ConnectOptions{Name: "shell", Shell: sim.ShellOptions{Replies: true}})
	if err != nil {
		t.Fatal(err)
	}
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDeclare("q", sim.QueueOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDeclare("q2", sim.QueueOptions{}, sim.NoWait); err != nil {
		t.Fatal(err)
	}
	if err := b.Publish("/", "", "q", sim.Message{Body: []byte("m1")}); err != nil {
		t.Fatal(err)
	}
	if err := ch.Qos(1, 0, false); err != nil {
		t.Fatal(err)
	}
	if _, err := ch.Consume("q", sim.ConsumeOptions{Tag: "A"}); err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueuePurge("q2"); err != nil {
		t.Fatal(err)
	}
	got := conn.Drain(nil)
	want := []string{"queue.declare-ok", "basic.qos-ok", "basic.consume-ok", "basic.deliver", "queue.purge-ok"}
	if diff := cmp.Diff(want, methods(got)); diff != "" {
		t.Fatalf("pushes (-want +got):\n%s", diff)
	}
	if got[0].Queue != "q" || got[0].MessageCount != 0 || got[0].Consumers != 0 {
		t.Errorf("declare-ok %+v, want q with 0 and 0", got[0])
	}
	if got[2].ConsumerTag != "A" {
		t.Errorf("consume-ok of %q, want A", got[2].ConsumerTag)
	}
	for _, e := range b.Trace() {
		if e.Kind == sim.EventPush && e.Method != protocol.BasicDeliver {
			t.Errorf("the trace shows the reply %v, which its call's event stands for", e.Method)
		}
	}
}

// TestHoldWhenBlocked: a connection that holds its calls while an alarm
// blocks it, as RabbitMQ stops reading a blocked client: a publish with an
// empty body goes through and blocks it, the next one waits with every
// later call (an ack, the close), and the alarm's clear applies them in
// order (alarm-disk-and-memory.txt, alarm-memory-blocks-publisher.txt).
func TestHoldWhenBlocked(t *testing.T) {
	b := sim.New(sim.Config{})
	pub, err := b.Dial(sim.ConnectOptions{Name: "pub", Shell: sim.ShellOptions{HoldWhenBlocked: true}})
	if err != nil {
		t.Fatal(err)
	}
	ch, err := pub.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDeclare("work", sim.QueueOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := ch.Get("work", false); ok || err != nil {
		t.Fatalf("get: %v %v", ok, err)
	}
	b.SetAlarm(sim.AlarmMemory, true)
	if err := ch.Publish("", "work", sim.PublishOptions{}, sim.Message{}); err != nil {
		t.Fatalf("an empty publish: %v, want it applied", err)
	}
	body := []byte("m1")
	if err := ch.Publish("", "work", sim.PublishOptions{}, sim.Message{Body: body}); !errors.Is(err, sim.ErrQueued) {
		t.Fatalf("a publish on the blocked connection: %v, want ErrQueued", err)
	}
	body[0] = 'x' // the publisher's buffer is its own again
	if err := ch.Close(); !errors.Is(err, sim.ErrQueued) {
		t.Fatalf("a close on the blocked connection: %v, want ErrQueued", err)
	}
	if err := pub.Close(); !errors.Is(err, sim.ErrQueued) {
		t.Fatalf("connection.close on the blocked connection: %v, want ErrQueued", err)
	}
	if st := stats(t, b, "work"); st.Ready != 1 {
		t.Errorf("while blocked: ready %d, want 1 (the empty body)", st.Ready)
	}
	b.SetAlarm(sim.AlarmMemory, false)
	msgs, err := b.QueueMessages("/", "work")
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2 || string(msgs[1].Body) != "m1" {
		t.Errorf("after the clear: %d messages, want the empty one and m1", len(msgs))
	}
	if pub.Err() == nil || ch.Err() == nil {
		t.Error("the held closes were not applied")
	}
	var kinds []string
	for _, e := range b.Trace() {
		if e.Conn == "pub" && (e.Kind == sim.EventBlocked || e.Kind == sim.EventUnblocked || e.Kind == sim.EventCall && e.Method == protocol.BasicPublish) {
			kinds = append(kinds, e.Kind.String()+" "+string(e.Body))
		}
	}
	want := []string{"connection.blocked ", "call ", "connection.unblocked ", "call m1"}
	if diff := cmp.Diff(want, kinds); diff != "" {
		t.Errorf("the publisher's trace (-want +got):\n%s", diff)
	}
}
