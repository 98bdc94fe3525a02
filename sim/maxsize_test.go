package sim_test

import (
	"errors"
	"testing"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// An in-process publish of a body over max_message_size closes the channel
// with RabbitMQ's 406, as over the wire (rabbit_channel:check_msg_size/2);
// nothing reaches the queue, and a body at the limit goes through.
func TestMaxMessageSizeInProcess(t *testing.T) {
	e := newEnvConfig(t, sim.Config{MaxMessageSize: 10})
	e.declare("q", sim.QueueOptions{})
	if err := e.ch.Publish("", "q", sim.PublishOptions{}, sim.Message{Body: make([]byte, 10)}); err != nil {
		t.Fatalf("10 bytes: %v", err)
	}
	err := e.ch.Publish("", "q", sim.PublishOptions{}, sim.Message{Body: make([]byte, 11)})
	var perr *protocol.Error
	if !errors.As(err, &perr) || perr.Code != protocol.PreconditionFailed || perr.Hard || perr.Method != protocol.BasicPublish ||
		perr.Text != "PRECONDITION_FAILED - message size 11 is larger than configured max size 10" {
		t.Fatalf("11 bytes: got %v, want the channel's 406", err)
	}
	if e.ch.Err() == nil {
		t.Error("the channel is still open")
	}
	if st, _ := e.b.QueueStats("/", "q"); st.Ready != 1 {
		t.Errorf("ready = %d, want the 10-byte message alone", st.Ready)
	}
	ps := e.conn.Drain(nil)
	if len(ps) != 1 || ps[0].Method != protocol.ChannelClose || ps[0].Err.Code != protocol.PreconditionFailed {
		t.Errorf("pushes %v, want the channel.close", describePushes(ps))
	}
	if err := e.b.Publish("/", "", "q", sim.Message{Body: make([]byte, 11)}); !errors.As(err, &perr) || perr.Code != protocol.PreconditionFailed {
		t.Errorf("Broker.Publish of 11 bytes: got %v, want 406", err)
	}
}

// The limit is the release's default (16 MiB from 4.0, 128 MiB before)
// unless configured, and never above RabbitMQ's 512 MiB cap.
func TestMaxMessageSizeDefaults(t *testing.T) {
	for _, tc := range []struct {
		cfg  sim.Config
		want uint64
	}{
		{sim.Config{Version: sim.V3_13}, 134217728},
		{sim.Config{Version: sim.V4_0}, 16777216},
		{sim.Config{}, 16777216},
		{sim.Config{MaxMessageSize: 1 << 40}, sim.MaxMessageSizeCap},
	} {
		if got := sim.New(tc.cfg).MaxMessageSize(); got != tc.want {
			t.Errorf("%+v: MaxMessageSize() = %d, want %d", tc.cfg, got, tc.want)
		}
	}
	e := newEnvConfig(t, sim.Config{Version: sim.V4_0})
	e.declare("q", sim.QueueOptions{})
	if err := e.ch.Publish("", "q", sim.PublishOptions{}, sim.Message{Body: make([]byte, 16777217)}); err == nil {
		t.Error("4.0 took a 16777217-byte body")
	}
}

// immediate=true has its own clause in rabbit_channel, before the size is
// looked at; a shell that kept no body refuses by the size it was told,
// and may not use PublishTooLarge for a body within the limit.
func TestMaxMessageSizeOrderAndTooLarge(t *testing.T) {
	e := newEnvConfig(t, sim.Config{MaxMessageSize: 10})
	err := e.ch.Publish("", "q", sim.PublishOptions{Immediate: true}, sim.Message{Body: make([]byte, 11)})
	var perr *protocol.Error
	if !errors.As(err, &perr) || perr.Code != protocol.NotImplemented {
		t.Fatalf("immediate and too large: got %v, want 540", err)
	}
	ch := e.channel(e.b.Connect("other"))
	if err := ch.PublishTooLarge("", "q", sim.PublishOptions{}, 10); err == nil || errors.As(err, &perr) {
		t.Errorf("PublishTooLarge within the limit: got %v, want a Go error", err)
	}
	if ch.Err() != nil {
		t.Fatal("a refused PublishTooLarge closed the channel")
	}
	err = ch.PublishTooLarge("", "q", sim.PublishOptions{}, 1<<30)
	if !errors.As(err, &perr) || perr.Text != "PRECONDITION_FAILED - message size 1073741824 is larger than configured max size 10" {
		t.Errorf("PublishTooLarge: got %v", err)
	}
}
