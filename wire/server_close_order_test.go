package wire

import (
	"fmt"
	"testing"
	"testing/synctest"

	"github.com/amqpsim/amqpsim/sim"
)

// Nothing reaches a channel after its channel.close-ok: what the broker
// pushed to it before the close goes out before the close-ok (RabbitMQ's
// channel process writes what it was given, then answers the close), and
// nothing after. amqp091-go closes the whole connection with 504 on a
// method for a channel it has closed; watermill-amqp's suite hung on it.
//
// The pushes wait in the broker's outbox while the client reads nothing
// and the server's writer is stuck on the full socket; the client then
// closes the channel, and reads.
func TestServerSendsNothingOnAChannelAfterItsCloseOk(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, b := newRawServer(t)
		c := dialRaw(t, s)
		c.ready()
		openChannel(c, 1)
		c.send(1, &QueueDeclare{Queue: "q"})
		c.expect()
		c.send(1, &BasicConsume{Queue: "q", ConsumerTag: "A", NoAck: true})
		c.expect()
		body := make([]byte, 4096)
		for i := range 200 { // more than the socket's buffer holds
			if err := b.Publish("/", "", "q", sim.Message{Body: append([]byte(fmt.Sprint(i)), body...)}); err != nil {
				t.Fatal(err)
			}
		}
		synctest.Wait() // the writer is stuck; the rest waits in the outbox
		c.send(1, &ChannelClose{ReplyCode: 200, ReplyText: "bye"})
		synctest.Wait()
		// After the close-ok, open channel 2: its open-ok comes after
		// anything the server still sends on channel 1.
		closed := false
		for {
			f, err := c.fr.ReadFrame()
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case f.Type == FrameHeartbeat:
			case f.Channel == 1 && closed:
				t.Fatalf("a frame on channel 1 after its close-ok: type %d", f.Type)
			case f.Channel == 1 && f.Type == FrameMethod:
				if _, ok := mustDecode(t, f.Payload).(*ChannelCloseOk); ok {
					closed = true
					c.send(2, &ChannelOpen{})
				}
			case f.Channel == 2:
				return
			}
		}
	})
}

func mustDecode(t *testing.T, p []byte) Method {
	t.Helper()
	m, err := DecodeMethod(p)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// A requeue and the channel's close in one read: the queue's redelivery,
// which in RabbitMQ reaches the channel process after the close it already
// received, never reaches the client; the message is back in the queue
// (watermill-amqp nacks, then closes its channel, and amqp091-go closed the
// whole connection with 504 on the delivery after close-ok). Measured with
// a frame-logging proxy on 4.3.6: none of watermill's channel closes got a
// frame after close-ok.
func TestServerDropsARedeliveryToAChannelClosedInTheSameRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, b := newRawServer(t)
		c := dialRaw(t, s)
		c.ready()
		openChannel(c, 1)
		c.send(1, &BasicQos{PrefetchCount: 1})
		c.expect()
		c.send(1, &QueueDeclare{Queue: "q"})
		c.expect()
		c.send(1, &BasicConsume{Queue: "q", ConsumerTag: "A"})
		c.expect()
		if err := b.Publish("/", "", "q", sim.Message{Body: []byte("m1")}); err != nil {
			t.Fatal(err)
		}
		if d, ok := c.expect().(*BasicDeliver); !ok || d.DeliveryTag != 1 {
			t.Fatalf("got %#v, want the delivery of tag 1", d)
		}
		buf, err := AppendMethodFrame(nil, 1, &BasicNack{DeliveryTag: 1, Requeue: true})
		if err != nil {
			t.Fatal(err)
		}
		if buf, err = AppendMethodFrame(buf, 1, &ChannelClose{ReplyCode: 200}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.conn.Write(buf); err != nil {
			t.Fatal(err)
		}
		if m := c.expect(); !isCloseOk(m) {
			t.Fatalf("got %#v, want channel.close-ok", m)
		}
		c.send(2, &ChannelOpen{})
		if m := c.expect(); !isOpenOk(m) {
			t.Fatalf("got %#v after channel 1's close-ok, want channel 2's open-ok", m)
		}
		st, err := b.QueueStats("/", "q")
		if err != nil {
			t.Fatal(err)
		}
		if st.Ready != 1 || st.Unacked != 0 {
			t.Fatalf("q: %+v, want the message back, ready", st)
		}
	})
}

func isCloseOk(m Method) bool { _, ok := m.(*ChannelCloseOk); return ok }
func isOpenOk(m Method) bool  { _, ok := m.(*ChannelOpenOk); return ok }
