package amqptest_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/amqpsim/amqpsim/amqptest"
	"github.com/amqpsim/amqpsim/sim"
)

// TestWaitOutsideBubble runs amqp091-go outside a synctest bubble, in real
// time, with no sleeps: each step waits for the broker state it needs,
// woken by the broker's own changes.
func TestWaitOutsideBubble(t *testing.T) {
	srv := amqptest.NewServer(t)
	conn, err := amqp.DialConfig(srv.URL()+"?heartbeat=0", amqp.Config{Dial: srv.Dial, Properties: amqp.Table{"connection_name": "worker"}})
	if err != nil {
		t.Fatal(err)
	}
	defer closeConn(t, conn)
	ch := channel(t, conn)
	declare(t, ch, "jobs")
	if err := ch.Qos(3, 0, false); err != nil {
		t.Fatal(err)
	}
	go func() {
		// The code under test, in the background: a consumer that holds
		// what it gets.
		ds, err := ch.Consume("jobs", "", false, false, false, false, nil)
		if err != nil {
			return
		}
		for range ds {
		}
	}()
	srv.WaitConsumers(t, "jobs", 1)
	for range 5 {
		if err := srv.Broker().Publish("/", "", "jobs", sim.Message{Body: []byte("job")}); err != nil {
			t.Fatal(err)
		}
	}
	srv.WaitUnacked(t, "jobs", 3)
	if st := stats(t, srv, "jobs"); st.Ready != 2 {
		t.Errorf("ready = %d, want 2 beside 3 unacked", st.Ready)
	}
	// An ack of an unknown tag closes the channel with 406; wait for the
	// broker to have closed it.
	if err := ch.Ack(99, false); err != nil {
		t.Fatal(err)
	}
	srv.WaitClosed(t, "worker", 1)
	srv.WaitQueue(t, "jobs", func(s sim.QueueStats) bool { return s.Unacked == 0 && s.Ready == 5 })
	conn.Close()
	srv.WaitClosed(t, "worker")
	srv.WaitConnections(t, 0)
}

// TestWaitFailureSaysWhat: a wait that times out fails the test with what
// it waited for and the last state seen.
func TestWaitFailureSaysWhat(t *testing.T) {
	srv := amqptest.NewServer(t, amqptest.WithWaitTimeout(1))
	ft := &fakeT{TB: t}
	func() {
		defer func() { recover() }() // fakeT.Fatalf stops the wait with a panic
		srv.WaitConsumers(ft, "missing", 1)
	}()
	want := `amqptest: waited 1ns for queue "missing" to satisfy the condition; it does not exist`
	if ft.msg != want {
		t.Errorf("failure:\n got %q\nwant %q", ft.msg, want)
	}
}

// fakeT records a Fatalf instead of failing.
type fakeT struct {
	testing.TB
	msg string
}

func (f *fakeT) Helper() {}

func (f *fakeT) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	panic("fatal")
}

// TestWaitFlushedOutsideBubble: once WaitFlushed returns, every delivery
// the broker pushed has left the server and been read by amqp091-go: a
// stall right after it holds nothing back, so all of them reach the
// consumer. Without the barrier the stall would catch deliveries still in
// the server's writer or in the transport.
func TestWaitFlushedOutsideBubble(t *testing.T) {
	srv := amqptest.NewServer(t, amqptest.WithHeartbeat(-1))
	conn, err := amqp.DialConfig(srv.URL()+"?heartbeat=0", amqp.Config{Dial: srv.Dial, Properties: amqp.Table{"connection_name": "c"}})
	if err != nil {
		t.Fatal(err)
	}
	defer closeConn(t, conn)
	ch := channel(t, conn)
	declare(t, ch, "q")
	ds, err := ch.Consume("q", "", true, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	const n = 3 * sim.DefaultMaxUnsent // past the flow bound: the barrier must see what the bound held back
	for i := range n {
		if err := srv.Broker().Publish("/", "", "q", sim.Message{Body: []byte(fmt.Sprint(i))}); err != nil {
			t.Fatal(err)
		}
	}
	srv.WaitFlushed(t)
	release, err := srv.StallConnection("c")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	for i := range n {
		select {
		case d := <-ds:
			if string(d.Body) != fmt.Sprint(i) {
				t.Fatalf("delivery %d: %q", i, d.Body)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("only %d of %d deliveries arrived: the barrier returned before they were read", i, n)
		}
	}
}

// TestWaitAppliedOutsideBubble: once WaitApplied returns, every publish
// amqp091-go wrote without confirms has been routed, so the broker's
// counts are final at once, and Advance cannot overtake them. Without the
// barrier the look would catch publishes still in the transport or the
// server's reader.
func TestWaitAppliedOutsideBubble(t *testing.T) {
	for _, tls := range []bool{false, true} {
		opts := []amqptest.Option{amqptest.WithHeartbeat(-1)}
		if tls {
			opts = append(opts, amqptest.WithTLS()) // the bytes in the transport are ciphertext
		}
		srv := amqptest.NewServer(t, opts...)
		conn, err := amqp.DialConfig(srv.URL()+"?heartbeat=0", amqp.Config{Dial: srv.Dial, TLSClientConfig: srv.TLSConfig()})
		if err != nil {
			t.Fatal(err)
		}
		defer closeConn(t, conn)
		ch := channel(t, conn)
		declare(t, ch, "q")
		const n = 2000
		for i := range n {
			if err := ch.Publish("", "q", false, false, amqp.Publishing{Body: []byte(fmt.Sprint(i))}); err != nil {
				t.Fatal(err)
			}
		}
		srv.WaitApplied(t)
		if st, _ := srv.Broker().QueueStats("/", "q"); st.Ready != n {
			t.Fatalf("TLS %v: ready %d after WaitApplied, want %d: the barrier returned before the publishes were applied", tls, st.Ready, n)
		}
	}
}

// TestWaitAppliedSaysWhatHolds: a barrier that cannot complete names the
// connection whose frames wait and what holds them; WithTCP it says it
// cannot see.
func TestWaitAppliedSaysWhatHolds(t *testing.T) {
	srv := amqptest.NewServer(t, amqptest.WithHeartbeat(-1))
	conn, err := amqp.DialConfig(srv.URL()+"?heartbeat=0", amqp.Config{Dial: srv.Dial, Properties: amqp.Table{"connection_name": "pub"}})
	if err != nil {
		t.Fatal(err)
	}
	defer closeConn(t, conn)
	ch := channel(t, conn)
	declare(t, ch, "q")
	expired, cancel := context.WithCancel(context.Background())
	cancel()

	release, err := srv.StallConnection("pub")
	if err != nil {
		t.Fatal(err)
	}
	publish(t, ch, "q", "held")
	want := `context canceled; frames not yet applied on connection "pub", stalled (StallConnection): the server reads nothing until release`
	if err := srv.Applied(expired); err == nil || err.Error() != want {
		t.Errorf("stalled:\n got %v\nwant %s", err, want)
	}
	ft := &fakeT{TB: t}
	func() {
		defer func() { recover() }()
		amqptest.NewServer(t, amqptest.WithBroker(srv.Broker()), amqptest.WithWaitTimeout(1)).WaitApplied(ft)
	}()
	if ft.msg != "" {
		t.Errorf("a server with no clients waited: %s", ft.msg)
	}
	release()
	srv.WaitApplied(t)
	if st, _ := srv.Broker().QueueStats("/", "q"); st.Ready != 1 {
		t.Errorf("ready %d after the release", st.Ready)
	}

	srv.Broker().SetAlarm(sim.AlarmMemory, true)
	publish(t, ch, "q", "blocked")
	srv.Wait(t, "the publisher to be blocked", func(b *sim.Broker) bool {
		cs := b.Connections()
		return len(cs) == 1 && cs[0].Blocked()
	})
	want = `context canceled; frames not yet applied on connection "pub", blocked by an alarm (its publishes wait until the alarm clears)`
	if err := srv.Applied(expired); err == nil || err.Error() != want {
		t.Errorf("alarm:\n got %v\nwant %s", err, want)
	}
	srv.Broker().SetAlarm(sim.AlarmMemory, false)
	srv.WaitApplied(t)
	if st, _ := srv.Broker().QueueStats("/", "q"); st.Ready != 2 {
		t.Errorf("ready %d after the alarm cleared", st.Ready)
	}

	tcp := amqptest.NewServer(t, amqptest.WithTCP())
	if err := tcp.Applied(context.Background()); err == nil || !strings.Contains(err.Error(), "in-memory transport") {
		t.Errorf("WithTCP: %v", err)
	}
}

// TestWaitCounts: the waiting form of CheckCounts waits out the client's
// asynchronous acks, and fails with a diff and, on a quorum queue whose
// cancelled consumer still holds a message, why the consumer count stays
// up; WaitConsumers says the same.
func TestWaitCounts(t *testing.T) {
	srv := amqptest.NewServer(t, amqptest.WithHeartbeat(-1))
	conn, err := amqp.DialConfig(srv.URL()+"?heartbeat=0", amqp.Config{Dial: srv.Dial})
	if err != nil {
		t.Fatal(err)
	}
	defer closeConn(t, conn)
	ch := channel(t, conn)
	declareQuorum(t, ch, "jobs")
	publish(t, ch, "jobs", "a", "b")
	if err := ch.Qos(1, 0, false); err != nil {
		t.Fatal(err)
	}
	ds, err := ch.Consume("jobs", "w", false, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := recvWithin(t, ds)
	d.Ack(false) // returns once written
	srv.WaitCounts(t, "jobs", amqptest.QueueCounts{Ready: 0, Unacked: 1, Consumers: 1})
	recvWithin(t, ds)
	if err := ch.Cancel("w", false); err != nil {
		t.Fatal(err)
	}

	short := amqptest.NewServer(t, amqptest.WithBroker(srv.Broker()), amqptest.WithWaitTimeout(1))
	ft := &fakeT{TB: t}
	func() {
		defer func() { recover() }()
		short.WaitConsumers(ft, "jobs", 0)
	}()
	why := `(0 registered consumer(s): the quorum queue also counts, as RabbitMQ does, each cancelled consumer until it has settled the messages it holds, and each unsettled basic.get; 1 unacked: ack, nack or reject them, or close their channels, for the count to fall)`
	if want := `amqptest: waited 1ns for queue "jobs" to satisfy the condition; last seen ready=0 unacked=1 consumers=1 ` + why; ft.msg != want {
		t.Errorf("WaitConsumers:\n got %q\nwant %q", ft.msg, want)
	}
	ft = &fakeT{TB: t}
	func() {
		defer func() { recover() }()
		short.WaitCounts(ft, "jobs", amqptest.QueueCounts{})
	}()
	if !strings.HasPrefix(ft.msg, `amqptest: waited 1ns for queue "jobs" to have these counts (-want +got):`) ||
		!strings.Contains(ft.msg, "Unacked") || !strings.HasSuffix(ft.msg, "}\n"+why) {
		t.Errorf("WaitCounts: %q", ft.msg)
	}

	ch.Ack(2, false)
	srv.WaitConsumers(t, "jobs", 0)
}

// TestWaitConnectionsNamesThem: the failure of WaitConnections names the
// connections it counts, in-process ones said to be.
func TestWaitConnectionsNamesThem(t *testing.T) {
	srv := amqptest.NewServer(t, amqptest.WithWaitTimeout(1))
	srv.Broker().Connect("setup")
	ft := &fakeT{TB: t}
	func() {
		defer func() { recover() }()
		srv.WaitConnections(ft, 0)
	}()
	want := `amqptest: waited 1ns for 0 open connection(s); there are 1: "setup" (in process: sim.Broker.Connect or Dial)`
	if ft.msg != want {
		t.Errorf("failure:\n got %q\nwant %q", ft.msg, want)
	}
}

// recvWithin receives from c within the wait of the package's tests,
// which outside a bubble is real time: it bounds a broker that never
// delivers.
func recvWithin[T any](t *testing.T, c <-chan T) T {
	t.Helper()
	select {
	case v, ok := <-c:
		if !ok {
			t.Fatalf("%T closed", c)
		}
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("waited 10s on %T", c)
	}
	panic("unreachable")
}
