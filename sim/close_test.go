package sim_test

import (
	"testing"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// channel.close requeues every unacked delivery to its original position, marked redelivered.
func TestChannelCloseRequeuesUnackedToOriginalPositions(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{})
	ch := e.channel(e.conn)
	e.qos(ch, 2, false)
	e.consume(ch, "q", "c", sim.ConsumeOptions{})
	e.publish("q", msgs(4)...)
	ch.Get("q", false) // m3 by get
	e.must(ch.Ack(2, false))
	e.must(ch.Close())
	diff(t, "ready", []string{"m1", "m3", "m4"}, e.ready("q"))
	c := e.consume(e.ch, "q", "c", sim.ConsumeOptions{})
	diff(t, "redelivered", []dv{{1, "m1", true}, {2, "m3", true}, {3, "m4", true}}, brief(c.Deliveries()))
	diff(t, "stats", sim.QueueStats{Vhost: "/", Name: "q", Unacked: 3, Consumers: 1}, e.stats("q"))
}

// connection.close closes every channel, requeueing all their unacked deliveries.
func TestConnectionCloseRequeuesAllChannels(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{})
	conn := e.b.Connect("worker")
	ch1, ch2 := e.channel(conn), e.channel(conn)
	e.consume(ch1, "q", "a", sim.ConsumeOptions{})
	e.consume(ch2, "q", "b", sim.ConsumeOptions{})
	e.publish("q", msgs(4)...)
	e.must(conn.Close())
	diff(t, "ready", msgs(4), e.ready("q"))
	diff(t, "stats", sim.QueueStats{Vhost: "/", Name: "q", Ready: 4, Bytes: 8}, e.stats("q"))
	wantClosed(t, ch1.Err(), nil)
	wantClosed(t, conn.Close(), nil)
}

// Every soft error requeues all the channel's unacked deliveries before the channel closes.
func TestSoftErrorRequeuesUnackedBeforeClose(t *testing.T) {
	tests := []struct {
		name string
		code int
		op   func(ch *sim.Channel) error
	}{
		{"unknown delivery tag", 406, func(ch *sim.Channel) error { return ch.Ack(99, false) }},
		{"consume missing queue", 404, func(ch *sim.Channel) error { _, err := ch.Consume("missing", sim.ConsumeOptions{}); return err }},
		{"publish to missing exchange", 404, func(ch *sim.Channel) error { return ch.Publish("nope", "k", sim.PublishOptions{}, sim.Message{}) }},
		{"inequivalent declare", 406, func(ch *sim.Channel) error {
			_, err := ch.QueueDeclare("q", sim.QueueOptions{Durable: true})
			return err
		}},
		{"exclusive consume", 403, func(ch *sim.Channel) error {
			_, err := ch.Consume("q", sim.ConsumeOptions{Exclusive: true})
			return err
		}},
		{"delete if-empty", 406, func(ch *sim.Channel) error {
			_, err := ch.QueueDelete("q", sim.QueueDeleteOptions{IfEmpty: true})
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.declare("q", sim.QueueOptions{})
			e.qos(e.ch, 2, false)
			c := e.consume(e.ch, "q", "c", sim.ConsumeOptions{})
			e.publish("q", msgs(4)...)
			e.ch.Get("q", false) // m3; m4 stays ready
			diff(t, "before", []string{"m1", "m2"}, bodies(c.Deliveries()))
			err := tt.op(e.ch)
			if perr := asError(err); perr == nil || perr.Code != tt.code || perr.Hard {
				t.Fatalf("err = %v, want a soft %d", err, tt.code)
			}
			diff(t, "ready", msgs(4), e.ready("q"))
			diff(t, "stats", sim.QueueStats{Vhost: "/", Name: "q", Ready: 4, Bytes: 8}, e.stats("q"))
			wantClosed(t, e.ch.Err(), asError(err))
			if e.conn.Err() != nil {
				t.Errorf("connection closed: %v", e.conn.Err())
			}
			if !c.Cancelled() {
				t.Error("consumer survived its channel")
			}
		})
	}
}

// A soft error is pushed as channel.close after the requeue; the trace shows it.
func TestSoftErrorPushesChannelClose(t *testing.T) {
	b := sim.New(sim.Config{})
	conn, _ := b.Dial(sim.ConnectOptions{})
	ch, _ := conn.Channel()
	err := ch.Ack(5, false)
	want := []sim.Push{{Method: protocol.ChannelClose, Channel: 1, Err: asError(err)}}
	diff(t, "pushes", want, conn.Drain(nil))
}

// Hard errors close the whole connection: every channel closes, requeueing its deliveries, and exclusive queues go.
func TestHardErrorClosesWholeConnection(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{})
	ch2 := e.channel(e.conn)
	if _, err := ch2.QueueDeclare("mine", sim.QueueOptions{Exclusive: true}); err != nil {
		t.Fatal(err)
	}
	e.consume(ch2, "q", "c", sim.ConsumeOptions{})
	e.publish("q", "m1", "m2")
	err := e.ch.Flow(false)
	wantErr(t, err, 540, "NOT_IMPLEMENTED - active=false", protocol.Method{Class: 20, ID: 20})
	cause := asError(err)
	wantClosed(t, e.conn.Err(), cause)
	wantClosed(t, ch2.Err(), cause)
	diff(t, "requeued", []string{"m1", "m2"}, e.ready("q"))
	if e.exists("mine") {
		t.Error("exclusive queue survived its connection")
	}
}

// Calls on a closed channel or connection return an error wrapping sim.ErrClosed whose chain holds the *sim.Error that closed it.
func TestCallsAfterCloseWrapErrClosedAndCause(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{})
	soft := e.channel(e.conn)
	softErr := asError(soft.Ack(1, false))
	clean := e.channel(e.conn)
	e.must(clean.Close())

	calls := map[string]func(ch *sim.Channel) error{
		"ack":     func(ch *sim.Channel) error { return ch.Ack(1, false) },
		"qos":     func(ch *sim.Channel) error { return ch.Qos(1, 0, false) },
		"publish": func(ch *sim.Channel) error { return ch.Publish("", "q", sim.PublishOptions{}, sim.Message{}) },
		"consume": func(ch *sim.Channel) error { _, err := ch.Consume("q", sim.ConsumeOptions{}); return err },
		"get":     func(ch *sim.Channel) error { _, _, err := ch.Get("q", false); return err },
		"close":   func(ch *sim.Channel) error { return ch.Close() },
		"declare": func(ch *sim.Channel) error { _, err := ch.QueueDeclare("q", sim.QueueOptions{}); return err },
	}
	for name, call := range calls {
		t.Run("soft/"+name, func(t *testing.T) { wantClosed(t, call(soft), softErr) })
		t.Run("clean/"+name, func(t *testing.T) { wantClosed(t, call(clean), nil) })
	}

	hardErr := asError(e.ch.Qos(0, 1, false))
	for name, call := range calls {
		t.Run("hard/"+name, func(t *testing.T) { wantClosed(t, call(e.ch), hardErr) })
	}
	_, err := e.conn.Channel()
	wantClosed(t, err, hardErr)
	wantClosed(t, e.conn.Close(), hardErr)
}

// rabbitmqctl close_connection closes with 320 CONNECTION_FORCED, requeueing deliveries.
func TestBrokerCloseConnectionForced(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{})
	e.consume(e.ch, "q", "c", sim.ConsumeOptions{})
	e.publish("q", "m1")
	e.conn.CloseWithError(sim.Forced("bye"))
	err := e.ch.Ack(1, false)
	wantClosed(t, err, asError(err))
	wantErr(t, err, 320, "CONNECTION_FORCED - bye", protocol.Method{})
	diff(t, "ready", []string{"m1"}, e.ready("q"))
}

// Closing the channel of an auto-delete queue's last consumer deletes the queue; its unacked messages go with it.
func TestChannelCloseDeletesAutoDeleteQueueWithUnacked(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{AutoDelete: true})
	ch := e.channel(e.conn)
	e.consume(ch, "q", "c", sim.ConsumeOptions{})
	e.publish("q", "m1")
	e.must(ch.Close())
	if e.exists("q") {
		t.Error("auto-delete queue survived")
	}
}
