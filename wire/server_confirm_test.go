package wire

import (
	"bytes"
	"fmt"
	"net"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"

	"github.com/amqpsim/amqpsim/internal/bubble"
	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// Publishes to a classic queue that arrive in one read are confirmed
// together when the server's reader runs out of bytes, as RabbitMQ's
// channel confirms what is ready when its mailbox runs empty: five
// publishes in one write get one basic.ack with multiple; one publish
// alone gets an ack without.
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

// TestServerConfirmOrderByQueueType: publisher confirms go out in the
// order RabbitMQ 3.10.8 sends them (measured with raw frames, each run of
// publishes in one write; 4.0.5 and 4.3.6 alike), by what took each
// message: U no queue (confirmed by the channel at once, alone), C a
// transient classic queue (when the read is applied), D a persistent
// message in a durable classic queue and Q a quorum queue and S a stream
// (after those, as after consensus or the disk write). See
// sim.confirmStage for what RabbitMQ sent for each run; where its grouping
// depended on when the queues' replies came (CQCQC: "ack 1", "ack 3",
// "ack 5", then "ack 2" and "ack 4", or "ack 4 multiple"), amqpsim takes
// the replies together.
func TestServerConfirmOrderByQueueType(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewServer(sim.New(sim.Config{}))
		defer s.Close()
		c, client := openHeartbeat(t, s, 0)
		defer client.Close()
		c.send(1, &ChannelOpen{})
		c.expect()
		for _, q := range []QueueDeclare{
			{Queue: "cq"},
			{Queue: "dq", Durable: true},
			{Queue: "qq", Durable: true, Arguments: protocol.Table{"x-queue-type": "quorum"}},
			{Queue: "sq", Durable: true, Arguments: protocol.Table{"x-queue-type": "stream"}},
		} {
			c.send(1, &q)
			if _, ok := c.expect().(*QueueDeclareOk); !ok {
				t.Fatalf("declare %s failed", q.Queue)
			}
		}
		ack := func(tag uint64, multiple bool) Method { return &BasicAck{DeliveryTag: tag, Multiple: multiple} }
		for i, tc := range []struct {
			plan string
			want []Method
		}{
			{"UUUUU", []Method{ack(1, false), ack(2, false), ack(3, false), ack(4, false), ack(5, false)}},
			{"CCCCC", []Method{ack(5, true)}},
			{"CCU", []Method{ack(3, false), ack(2, true)}},
			{"QQQQQ", []Method{ack(5, true)}},
			{"QUQUU", []Method{ack(2, false), ack(4, false), ack(5, false), ack(3, true)}},
			{"SUSUU", []Method{ack(2, false), ack(4, false), ack(5, false), ack(3, true)}},
			{"DUDUU", []Method{ack(2, false), ack(4, false), ack(5, false), ack(3, true)}},
			{"CDCD", []Method{ack(1, true), ack(3, false), ack(4, true)}},
			{"CQCQC", []Method{ack(1, true), ack(3, false), ack(5, false), ack(4, true)}},
		} {
			ch := uint16(2 + i)
			c.send(ch, &ChannelOpen{})
			c.expect()
			c.send(ch, &ConfirmSelect{})
			c.expect()
			var buf bytes.Buffer
			fw := NewFrameWriter(&buf)
			for _, to := range tc.plan {
				key := map[rune]string{'U': "nowhere", 'C': "cq", 'D': "dq", 'Q': "qq", 'S': "sq"}[to]
				props := &protocol.Properties{}
				if to == 'D' {
					props.DeliveryMode = 2
				}
				if err := fw.WriteContent(ch, &BasicPublish{RoutingKey: key}, props, []byte("m")); err != nil {
					t.Fatal(err)
				}
			}
			client.Write(buf.Bytes())
			var got []Method
			for range tc.want {
				got = append(got, c.expect())
			}
			c.send(ch, &BasicQos{})
			got = append(got, c.expect())
			if diff := cmp.Diff(append(tc.want, &BasicQosOk{}), got); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tc.plan, diff)
			}
		}
	})
}

// What a queue sends in reaction to a frame reaches the client after the
// channel's replies to the frames read with it: acking tag 1 twice in one
// write (prefetch 1, two messages ready) gets channel.close for the second
// ack before the basic.deliver the first one released, as RabbitMQ 3.10.8
// sends them (measured: 3 runs of 3 with a raw client's one write, 9 of
// 10 with amqp091-go's d.Ack twice, which then closes the connection with
// 504 for the delivery on a closing channel).
func TestServerQueuePushesFollowChannelReplies(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, client := doubleAck(t, nil)
		var buf bytes.Buffer
		fw := NewFrameWriter(&buf)
		fw.WriteMethod(1, &BasicAck{DeliveryTag: 1})
		fw.WriteMethod(1, &BasicAck{DeliveryTag: 1})
		client.Write(buf.Bytes())
		var got []string
		for range 2 {
			switch m := c.expect().(type) {
			case *ChannelClose:
				got = append(got, "close "+m.ReplyText)
			case *BasicDeliver:
				got = append(got, "deliver")
			default:
				got = append(got, fmt.Sprintf("%T", m))
			}
		}
		want := []string{"close PRECONDITION_FAILED - unknown delivery tag 1", "deliver"}
		if !cmp.Equal(got, want) {
			t.Errorf("got %q, want %q", got, want)
		}
	})
}

// doubleAck opens a consumer with prefetch 1 on a queue of the given
// arguments holding m1 and m2, takes the delivery of m1, and returns the
// client with the server about to get two acks of tag 1.
func doubleAck(t *testing.T, args protocol.Table) (*rawClient, net.Conn) {
	t.Helper()
	b := sim.New(sim.Config{})
	s := NewServer(b)
	t.Cleanup(func() { s.Close() })
	c, client := openHeartbeat(t, s, 0)
	t.Cleanup(func() { client.Close() })
	c.send(1, &ChannelOpen{})
	c.expect()
	c.send(1, &QueueDeclare{Queue: "q", Durable: args != nil, Arguments: args})
	c.expect()
	b.Publish("/", "", "q", sim.Message{Body: []byte("m1")})
	b.Publish("/", "", "q", sim.Message{Body: []byte("m2")})
	c.send(1, &BasicQos{PrefetchCount: 1})
	c.expect()
	c.send(1, &BasicConsume{Queue: "q", ConsumerTag: "c"})
	if _, ok := c.expect().(*BasicConsumeOk); !ok {
		t.Fatal("no consume-ok")
	}
	if d, ok := c.expect().(*BasicDeliver); !ok || d.DeliveryTag != 1 {
		t.Fatalf("first delivery: %#v", d)
	}
	return c, client
}

// describe names a method for the double-ack tests.
func describe(m Method) string {
	switch m := m.(type) {
	case *ChannelClose:
		return "close " + m.ReplyText
	case *BasicDeliver:
		return fmt.Sprintf("deliver #%d", m.DeliveryTag)
	}
	return fmt.Sprintf("%T", m)
}

// A quorum queue's delivery released by the first of two acks of tag 1 in
// one write is not sent after the channel.close the second one caused:
// RabbitMQ's quorum queue hands it to the channel only after consensus,
// when a client has answered the close with close-ok and the channel is
// gone. Measured on 3.10.8: channel.close alone in 15 runs of 16 (raw
// one write, raw two writes, amqp091-go's d.Ack twice), the message ready
// again (see sim.Channel.dropLateDeliveries).
func TestServerQuorumDeliveryAfterChannelClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, client := doubleAck(t, protocol.Table{"x-queue-type": "quorum"})
		var buf bytes.Buffer
		fw := NewFrameWriter(&buf)
		fw.WriteMethod(1, &BasicAck{DeliveryTag: 1})
		fw.WriteMethod(1, &BasicAck{DeliveryTag: 1})
		client.Write(buf.Bytes())
		if got := describe(c.expect()); got != "close PRECONDITION_FAILED - unknown delivery tag 1" {
			t.Fatalf("got %s, want channel.close", got)
		}
		c.send(1, &ChannelCloseOk{})
		c.send(2, &ChannelOpen{})
		if got := describe(c.expect()); got != "*wire.ChannelOpenOk" {
			t.Errorf("after channel.close: %s, want nothing before channel.open-ok", got)
		}
		c.send(2, &QueueDeclare{Queue: "q", Passive: true})
		if ok, _ := c.expect().(*QueueDeclareOk); ok == nil || ok.MessageCount != 1 {
			t.Errorf("declare-ok %#v, want m2 ready", ok)
		}
	})
}

// A second ack of tag 1 that comes after the server has sent what the
// first released (the client's frames in two reads, the server idle in
// between) closes the channel after the delivery, for a classic queue and
// a quorum queue alike, as RabbitMQ 3.10.8 sends them when the second ack
// comes 1 ms or 50 ms after the first (measured, 3 runs of 3 for each).
func TestServerSecondAckAfterTheDelivery(t *testing.T) {
	for _, tc := range []struct {
		name string
		args protocol.Table
	}{{"classic", nil}, {"quorum", protocol.Table{"x-queue-type": "quorum"}}} {
		t.Run(tc.name, bubble.Subtest(func(t *testing.T) {
			c, _ := doubleAck(t, tc.args)
			c.send(1, &BasicAck{DeliveryTag: 1})
			got := []string{describe(c.expect())}
			c.send(1, &BasicAck{DeliveryTag: 1})
			got = append(got, describe(c.expect()))
			want := []string{"deliver #2", "close PRECONDITION_FAILED - unknown delivery tag 1"}
			if !cmp.Equal(got, want) {
				t.Errorf("got %q, want %q", got, want)
			}
		}))
	}
}
