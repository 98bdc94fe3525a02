package sim

import (
	"errors"
	"testing"

	"github.com/amqpsim/amqpsim/protocol"
)

func TestFaultInjection(t *testing.T) {
	b := New(Config{})
	c, err := b.Dial(ConnectOptions{Name: "app"})
	if err != nil {
		t.Fatal(err)
	}
	ch1, _ := c.OpenChannel(1)
	ch2, _ := c.OpenChannel(2)
	if got := b.Connections(); len(got) != 1 || got[0] != c {
		t.Fatalf("Connections = %v", got)
	}
	if got := c.Channels(); len(got) != 2 || got[0] != ch1 || got[1] != ch2 {
		t.Fatalf("Channels = %v", got)
	}

	soft := protocol.Errorf(protocol.PreconditionFailed, protocol.Method{}, "injected")
	if !ch1.CloseWithError(soft) || ch1.CloseWithError(soft) {
		t.Fatal("CloseWithError should close an open channel once")
	}
	pushes := c.Drain(nil)
	if len(pushes) != 1 || pushes[0].Method != protocol.ChannelClose || pushes[0].Channel != 1 || pushes[0].Err != soft {
		t.Fatalf("pushes = %#v", pushes)
	}
	if !errors.Is(ch1.Err(), ErrClosed) || ch2.Err() != nil {
		t.Fatal("only channel 1 should be closed")
	}

	hard := protocol.Errorf(protocol.ChannelError, protocol.ChannelOpen, "second 'channel.open' seen")
	if !c.CloseWithError(hard) || c.CloseWithError(hard) {
		t.Fatal("CloseWithError should close an open connection once")
	}
	pushes = c.Drain(nil)
	if len(pushes) != 1 || pushes[0].Method != protocol.ConnectionClose || pushes[0].Err != hard {
		t.Fatalf("pushes = %#v", pushes)
	}
	var perr *protocol.Error
	if !errors.As(c.Err(), &perr) || perr != hard || ch2.Err() == nil {
		t.Fatalf("connection err = %v", c.Err())
	}
	if len(b.Connections()) != 0 || len(c.Channels()) != 0 {
		t.Fatal("closed connection still listed")
	}
	if ch2.CloseWithError(soft) || c.CloseWithError(nil) {
		t.Fatal("CloseWithError on closed things should do nothing")
	}
}
