package wire

import (
	"testing"
	"testing/synctest"

	"github.com/amqpsim/amqpsim/sim"
)

// A no-ack consumer whose client stops reading does not empty the queue
// into buffers: the server's writer stops at the pipe's buffer, the broker
// at its unsent bound, and the rest stays queued, also after the client
// goes (RabbitMQ 3.10.8 kept 19,450 of 20,000 10 KB messages).
func TestServerSlowReaderKeepsMessagesQueued(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := sim.New(sim.Config{})
		s := NewServer(b)
		defer s.Close()
		c, client := openHeartbeat(t, s, 0)
		c.send(1, &ChannelOpen{})
		c.expect()
		c.send(1, &QueueDeclare{Queue: "q"})
		c.expect()
		c.send(1, &BasicConsume{Queue: "q", ConsumerTag: "c", NoAck: true})
		c.expect()
		const n, size = 2000, 10 << 10
		for range n {
			b.Publish("/", "", "q", sim.Message{Body: make([]byte, size)})
		}
		synctest.Wait() // the server has written what it can; the client reads nothing
		st, _ := b.QueueStats("/", "q")
		sent := n - st.Ready
		if max := sim.DefaultMaxUnsent + ServerWriteBuffer/size + 1; sent > max {
			t.Errorf("%d of %d delivered to a client that reads nothing, want at most %d", sent, n, max)
		}
		client.Close()
		synctest.Wait()
		if after, _ := b.QueueStats("/", "q"); after.Ready != st.Ready {
			t.Errorf("ready %d after the client went, %d before", after.Ready, st.Ready)
		}
	})
}
