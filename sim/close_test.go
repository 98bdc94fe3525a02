package sim_test

import (
	"testing"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// A soft error is pushed as channel.close after the requeue; the trace shows it.
func TestSoftErrorPushesChannelClose(t *testing.T) {
	b := sim.New(sim.Config{})
	conn, _ := b.Dial(sim.ConnectOptions{})
	ch, _ := conn.Channel()
	err := ch.Ack(5, false)
	want := []sim.Push{{Method: protocol.ChannelClose, Channel: 1, Err: asError(err)}}
	diff(t, "pushes", want, conn.Drain(nil))
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
