package wire

import (
	"bytes"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// silent reports whether the server has sent c nothing it has not read,
// once every goroutine of the bubble is blocked.
func (c *rawClient) silent() bool {
	synctest.Wait()
	return c.conn.(*pipeConn).Buffered() == 0 && c.fr.r.Buffered() == 0
}

// A tune-ok may not ask for a frame_max under FRAME_MIN_SIZE: 4096 until
// 4.1, 8192 from 4.1 (sim.Profile.FrameMinSize). Measured with a raw
// socket, twice each: 3.10.8 and 4.0.5 open a connection whose tune-ok
// asks for 4096 or 8191; 4.3.6 drops it 3 s later without a frame, and
// opens one that asks for 8192.
func TestTuneOkFrameMaxMinimum(t *testing.T) {
	for _, tc := range []struct {
		v        sim.Version
		frameMax uint32
		opened   bool
	}{
		{sim.V3_10, 4096, true}, {sim.V4_0, 4096, true}, {sim.V4_0, 8191, true},
		{sim.V4_3, 4096, false}, {sim.V4_3, 8191, false}, {sim.V4_3, 8192, true},
	} {
		synctest.Test(t, func(t *testing.T) {
			c := dialRaw(t, newProfileServer(t, tc.v))
			c.fw.WriteProtocolHeader()
			c.expect()
			c.send(0, &ConnectionStartOk{ClientProperties: protocol.Table{}, Mechanism: "PLAIN", Response: "\x00guest\x00guest"})
			tune := c.expect().(*ConnectionTune)
			c.send(0, &ConnectionTuneOk{ChannelMax: tune.ChannelMax, FrameMax: tc.frameMax})
			c.fw.SetFrameMax(tc.frameMax)
			c.send(0, &ConnectionOpen{VirtualHost: "/"})
			if tc.opened {
				if _, ok := c.expect().(*ConnectionOpenOk); !ok {
					t.Fatalf("%v: tune-ok frame_max %d: no connection.open-ok", tc.v, tc.frameMax)
				}
				return
			}
			if took, closeFrame := readUntilClosed(c); took != 3*time.Second || closeFrame {
				t.Errorf("%v: tune-ok frame_max %d: dropped after %v (close frame %t), want 3s without one", tc.v, tc.frameMax, took, closeFrame)
			}
		})
	}
}

// A body frame longer than what its content header left to come: 4.3.6
// closes the connection at once with 501 "content body frame exceeds
// remaining content size"; 3.10.8 and 4.0.5 say nothing and wait for the
// rest of a body that can never complete, so that the next method frame
// closes the connection with 505 (measured with a raw socket, twice each;
// sim.Profile.StrictContentSize). amqpsim kept waiting on every release.
func TestContentLongerThanDeclared(t *testing.T) {
	publish := protocol.Method{Class: 60, ID: 40}
	for _, v := range []sim.Version{sim.V3_10, sim.V4_0, sim.V4_3} {
		synctest.Test(t, func(t *testing.T) {
			c := dialRaw(t, newProfileServer(t, v))
			c.ready()
			openChannel(c, 1)
			c.send(1, &BasicPublish{RoutingKey: "nowhere"})
			c.raw(FrameHeader, 1, header(60, 10))
			c.raw(FrameBody, 1, []byte(strings.Repeat("x", 20)))
			if v == sim.V4_3 {
				c.expectClose(cclose(501, "FRAME_ERROR - content body frame exceeds remaining content size", publish))
				return
			}
			if !c.silent() {
				t.Fatalf("%v: the server answered a body frame longer than declared", v)
			}
			c.send(1, &BasicQos{PrefetchCount: 1})
			c.expectClose(cclose(505, "UNEXPECTED_FRAME - expected content body, got non content body frame instead", publish))
		})
	}
}

// A content header announcing more than 512 MiB (?MAX_MSG_SIZE): 4.3.6
// closes the connection with 501 at the header; 3.10.8 and 4.0.5 wait for
// the body, saying nothing within 3 s (measured with a raw socket, twice
// each).
func TestContentHeaderOverMaxMessageSize(t *testing.T) {
	for _, v := range []sim.Version{sim.V3_10, sim.V4_0, sim.V4_3} {
		synctest.Test(t, func(t *testing.T) {
			c := dialRaw(t, newProfileServer(t, v))
			c.ready()
			openChannel(c, 1)
			c.send(1, &BasicPublish{RoutingKey: "nowhere"})
			c.raw(FrameHeader, 1, header(60, 600<<20))
			if v == sim.V4_3 {
				c.expectClose(cclose(501, "FRAME_ERROR - content body size 629145600 exceeds maximum allowed size 536870912", protocol.Method{Class: 60, ID: 40}))
				return
			}
			if !c.silent() {
				t.Fatalf("%v: the server answered a content header of 600 MiB", v)
			}
		})
	}
}

// A channel keeps nothing of a message that came in several body frames
// once the broker has it: 40 idle channels that each published one 8 MiB
// message kept 320 MiB alive, and with it the memory alarm
// (amqptest's TestIdleChannelsLetTheMemoryAlarmClear).
func TestChannelKeepsNoBodyAfterContent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newProfileServer(t, sim.V4_3)
		c := dialRaw(t, s)
		c.ready()
		openChannel(c, 1)
		c.send(1, &BasicPublish{RoutingKey: "nowhere"})
		const size = 1 << 20
		c.raw(FrameHeader, 1, header(60, size))
		chunk := make([]byte, 64<<10)
		for sent := 0; sent < size; sent += len(chunk) {
			c.raw(FrameBody, 1, chunk)
		}
		synctest.Wait()
		s.mu.Lock()
		defer s.mu.Unlock()
		for sc := range s.conns {
			for id, cs := range sc.chans {
				if cs.body != nil {
					t.Errorf("channel %d keeps %d bytes (capacity %d) of its last message", id, len(cs.body), cap(cs.body))
				}
			}
		}
	})
}

// A message whose headers nest 15,000 tables deep goes through: 3.10.8,
// 4.0.5 and 4.3.6 take it and give it back as it came (measured with a
// raw socket, twice each: basic.get returned the 105,018-byte content
// header unchanged; 4.x took 4 to 6 s over it). amqpsim refused anything
// deeper than 64 levels with 502.
func TestServerReturnsDeepTables(t *testing.T) {
	const levels = 15000
	inner := protocol.Table{}
	for range levels - 1 {
		inner = protocol.Table{"a": inner}
	}
	h, err := AppendHeader(nil, &Header{BodySize: 1, Properties: protocol.Properties{Headers: protocol.Table{"h": inner}}})
	if err != nil {
		t.Fatal(err)
	}
	synctest.Test(t, func(t *testing.T) {
		c := dialRaw(t, newProfileServer(t, sim.V4_3))
		c.ready()
		openChannel(c, 1)
		c.send(1, &QueueDeclare{Queue: "deep"})
		c.expect()
		c.send(1, &BasicPublish{RoutingKey: "deep"})
		c.raw(FrameHeader, 1, h)
		c.raw(FrameBody, 1, []byte("x"))
		c.send(1, &BasicGet{Queue: "deep", NoAck: true})
		if m, ok := c.expect().(*BasicGetOk); !ok {
			t.Fatalf("basic.get: %#v", m)
		}
		f, err := c.fr.ReadFrame()
		if err != nil || f.Type != FrameHeader {
			t.Fatalf("content header: %v, %+v", err, f.Type)
		}
		if !bytes.Equal(f.Payload, h) {
			t.Errorf("the content header came back as %d bytes, sent %d", len(f.Payload), len(h))
		}
	})
}
