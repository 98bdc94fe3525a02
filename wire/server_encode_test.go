package wire

import (
	"strings"
	"testing"
	"testing/synctest"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// TestUnencodableFrameClosesTheConnection: a frame the writer cannot
// encode (here a basic.get-ok or basic.deliver naming an exchange of 300
// bytes, which the management API and a definitions import let exist,
// and dead-lettering or routing puts on a message) closes the connection
// with 541 INTERNAL_ERROR, never disappears: RabbitMQ 3.10.8 answered a
// basic.get of such a message with connection.close 541 "INTERNAL_ERROR"
// (class 0, method 0; its log: method_field_shortstr_overflow) and the
// message went back to the queue (measured). Nothing the channel sends
// after the frame reaches the client.
func TestUnencodableFrameClosesTheConnection(t *testing.T) {
	long := "x" + strings.Repeat("l", 299)
	for _, consume := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			s, b := newRawServer(t)
			setup, err := b.Connect("setup").Channel()
			if err != nil {
				t.Fatal(err)
			}
			if err := setup.ExchangeDeclare(long, "fanout", sim.ExchangeOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := setup.QueueDeclare("q", sim.QueueOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := setup.QueueBind("q", "", long, nil); err != nil {
				t.Fatal(err)
			}
			for _, body := range []string{"m1", "m2"} {
				if err := b.Publish("/", long, "", sim.Message{Body: []byte(body)}); err != nil {
					t.Fatal(err)
				}
			}
			c := dialRaw(t, s)
			c.ready()
			openChannel(c, 1)
			if consume {
				c.send(1, &BasicConsume{Queue: "q", ConsumerTag: "c"})
			} else {
				c.send(1, &BasicGet{Queue: "q"})
			}
			c.expectClose(cclose(541, "INTERNAL_ERROR", protocol.Method{}))
			synctest.Wait()
			st, err := b.QueueStats("/", "q")
			if err != nil {
				t.Fatal(err)
			}
			if st.Ready != 2 || st.Unacked != 0 {
				t.Errorf("consume=%t: after the close the queue has %d ready, %d unacked; want both messages back", consume, st.Ready, st.Unacked)
			}
		})
	}
}
