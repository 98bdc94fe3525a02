package sim_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// describePushes renders a drained outbox as "ch:method body" lines.
func describePushes(ps []sim.Push) []string {
	var out []string
	for _, p := range ps {
		s := fmt.Sprintf("%d:%v", p.Channel, p.Method)
		if p.Body != nil {
			s += " " + string(p.Body)
		}
		if p.Err != nil {
			s += fmt.Sprintf(" %d", p.Err.Code)
		}
		out = append(out, s)
	}
	return out
}

// TestCloseAtDeliveryChannel: the close follows the Nth delivery at once,
// even when one dispatch (a consume against a deep queue) would have
// pushed more, and the deliveries are requeued.
func TestCloseAtDeliveryChannel(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{})
	e.publish("q", "m1", "m2", "m3", "m4", "m5")
	soft := protocol.Errorf(protocol.PreconditionFailed, protocol.Method{}, "injected")
	if err := e.b.CloseAtDelivery(sim.DeliveryFault{N: 3, Action: sim.FaultCloseChannel, Err: soft}); err != nil {
		t.Fatal(err)
	}
	e.consume(e.ch, "q", "A", sim.ConsumeOptions{})
	got := describePushes(e.conn.Drain(nil))
	want := []string{"1:basic.deliver m1", "1:basic.deliver m2", "1:basic.deliver m3", "1:channel.close 406"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("pushes (-want +got):\n%s", diff)
	}
	if !errors.Is(e.ch.Err(), sim.ErrClosed) {
		t.Errorf("channel not closed: %v", e.ch.Err())
	}
	st, _ := e.b.QueueStats("/", "q")
	if st.Ready != 5 || st.Unacked != 0 || st.Consumers != 0 {
		t.Errorf("stats %+v, want 5 ready, no consumer", st)
	}
	if n := e.b.ArmedFaults(); n != 0 {
		t.Errorf("%d faults still armed", n)
	}
	if n := e.b.Deliveries(); n != 3 {
		t.Errorf("Deliveries = %d, want 3", n)
	}
}

// TestCloseAtDeliveryMatches: only deliveries of the named queue and
// consumer count; a second consumer on another channel of the connection
// keeps consuming after the first's channel closed.
func TestCloseAtDeliveryMatches(t *testing.T) {
	e := newEnv(t)
	e.declare("a", sim.QueueOptions{})
	e.declare("b", sim.QueueOptions{})
	ch2 := e.channel(e.conn)
	e.consume(e.ch, "a", "A", sim.ConsumeOptions{})
	e.consume(ch2, "b", "B", sim.ConsumeOptions{})
	soft := protocol.Errorf(protocol.PreconditionFailed, protocol.Method{}, "injected")
	if err := e.b.CloseAtDelivery(sim.DeliveryFault{N: 2, Queue: "a", ConsumerTag: "A", Action: sim.FaultCloseChannel, Err: soft}); err != nil {
		t.Fatal(err)
	}
	e.publish("b", "b1")
	e.publish("a", "a1")
	e.publish("b", "b2")
	e.publish("a", "a2", "a3")
	e.publish("b", "b3")
	got := describePushes(e.conn.Drain(nil))
	want := []string{"2:basic.deliver b1", "1:basic.deliver a1", "2:basic.deliver b2", "1:basic.deliver a2",
		"1:channel.close 406", "2:basic.deliver b3"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("pushes (-want +got):\n%s", diff)
	}
	st, _ := e.b.QueueStats("/", "a")
	if st.Ready != 3 || st.Consumers != 0 {
		t.Errorf("queue a %+v, want a1 and a2 requeued beside a3", st)
	}
}

// TestCloseAtDeliveryConnection: a get-ok's fault closes the connection
// right after it; every connection with FaultCloseEveryConnection.
func TestCloseAtDeliveryConnection(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{})
	e.publish("q", "m1", "m2")
	other := e.b.Connect("other")
	och := e.channel(other)
	och.Qos(1, 0, false)
	e.consume(och, "q", "B", sim.ConsumeOptions{}) // takes m1
	if err := e.b.CloseAtDelivery(sim.DeliveryFault{N: 1, Queue: "q", ConsumerTag: "", Action: sim.FaultCloseEveryConnection,
		Err: sim.Forced("bye")}); err != nil {
		t.Fatal(err)
	}
	_, ok, err := e.ch.Get("q", false)
	if !ok || err != nil {
		t.Fatalf("get: %v %v", ok, err)
	}
	if got, want := describePushes(e.conn.Drain(nil)), []string{"1:basic.get-ok m2", "0:connection.close 320"}; !cmp.Equal(got, want) {
		t.Errorf("app pushes %v, want %v", got, want)
	}
	if got, want := describePushes(other.Drain(nil)), []string{"1:basic.deliver m1", "0:connection.close 320"}; !cmp.Equal(got, want) {
		t.Errorf("other pushes %v, want %v", got, want)
	}
	if n := len(e.b.Connections()); n != 0 {
		t.Errorf("%d connections left", n)
	}
	st, _ := e.b.QueueStats("/", "q")
	if st.Ready != 2 {
		t.Errorf("stats %+v, want both requeued", st)
	}
}

// TestCloseAtDeliveryConsumerTimeout: the consumer timeout's own close.
func TestCloseAtDeliveryConsumerTimeout(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{})
	e.consume(e.ch, "q", "A", sim.ConsumeOptions{})
	if err := e.b.CloseAtDelivery(sim.DeliveryFault{N: 1, Action: sim.FaultConsumerTimeout}); err != nil {
		t.Fatal(err)
	}
	e.publish("q", "m1")
	ps := e.conn.Drain(nil)
	if len(ps) != 2 || ps[1].Method != protocol.ChannelClose || ps[1].Err.Code != protocol.PreconditionFailed {
		t.Fatalf("pushes %v", describePushes(ps))
	}
	if want := "PRECONDITION_FAILED - delivery acknowledgement on channel 1 timed out. Timeout value used: 1800000 ms. This timeout value can be configured, see consumers doc guide to learn more"; ps[1].Err.Text != want {
		t.Errorf("close text %q", ps[1].Err.Error())
	}
}

func TestCloseAtDeliveryBadInput(t *testing.T) {
	b := sim.New(sim.Config{})
	for _, f := range []sim.DeliveryFault{
		{N: 0, Action: sim.FaultCloseChannel, Err: sim.Forced("x")},
		{N: 1, Action: 0, Err: sim.Forced("x")},
		{N: 1, Action: 99, Err: sim.Forced("x")},
		{N: 1, Action: sim.FaultCloseConnection},
		{N: 1, FromStart: true, Queue: "q", Action: sim.FaultCloseConnection, Err: sim.Forced("x")},
	} {
		if err := b.CloseAtDelivery(f); err == nil {
			t.Errorf("%+v accepted", f)
		}
	}
	if b.ArmedFaults() != 0 {
		t.Error("a refused fault is armed")
	}
}

// TestCloseAtDeliveryFromStart counts the broker's deliveries in all, and
// refuses a delivery already pushed.
func TestCloseAtDeliveryFromStart(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{})
	e.publish("q", "m1", "m2", "m3")
	e.ch.Get("q", true)
	f := sim.DeliveryFault{N: 1, FromStart: true, Action: sim.FaultCloseConnection, Err: sim.Forced("x")}
	if err := e.b.CloseAtDelivery(f); !errors.Is(err, sim.ErrDeliveryPassed) {
		t.Fatalf("got %v, want ErrDeliveryPassed", err)
	}
	f.N = 3
	if err := e.b.CloseAtDelivery(f); err != nil {
		t.Fatal(err)
	}
	e.consume(e.ch, "q", "A", sim.ConsumeOptions{})
	got := describePushes(e.conn.Drain(nil))
	if want := []string{"1:basic.get-ok m1", "1:basic.deliver m2", "1:basic.deliver m3", "0:connection.close 320"}; !cmp.Equal(got, want) {
		t.Errorf("pushes %v, want %v", got, want)
	}
}
