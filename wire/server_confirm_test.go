package wire

import (
	"bytes"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"

	"github.com/amqpsim/amqpsim/sim"
)

// Publishes that arrive in one read are confirmed together when the
// server's reader runs out of bytes, as RabbitMQ's channel confirms what
// is ready when its mailbox runs empty: five publishes in one write get
// one basic.ack with multiple; one publish alone gets an ack without.
func TestServerCoalescesConfirmsOfOneRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewServer(sim.New(sim.Config{}))
		defer s.Close()
		c, client := openHeartbeat(t, s, 0)
		defer client.Close()
		c.send(1, &ChannelOpen{})
		c.expect()
		c.send(1, &QueueDeclare{Queue: "q"})
		c.expect()
		c.send(1, &ConfirmSelect{})
		c.expect()
		publishes := func(n int) []byte {
			var buf bytes.Buffer
			fw := NewFrameWriter(&buf)
			for range n {
				if err := fw.WriteContent(1, &BasicPublish{RoutingKey: "q"}, nil, []byte("m")); err != nil {
					t.Fatal(err)
				}
			}
			return buf.Bytes()
		}
		client.Write(publishes(5))
		if got := c.expect(); !cmp.Equal(got, &BasicAck{DeliveryTag: 5, Multiple: true}) {
			t.Errorf("after five publishes in one write: %#v", got)
		}
		client.Write(publishes(1))
		if got := c.expect(); !cmp.Equal(got, &BasicAck{DeliveryTag: 6}) {
			t.Errorf("after one publish: %#v", got)
		}
		c.send(1, &BasicQos{PrefetchCount: 1})
		if got := c.expect(); !cmp.Equal(got, &BasicQosOk{}) {
			t.Errorf("more confirms than publishes: %#v", got)
		}
	})
}
