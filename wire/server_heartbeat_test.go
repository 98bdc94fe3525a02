package wire

import (
	"net"
	"testing"
	"testing/synctest"
	"time"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// TestServerHeartbeats: with a 10 s heartbeat negotiated, an idle server
// sends a heartbeat every 5 s (virtual time), and keeps a client that
// heartbeats alive.
func TestServerHeartbeats(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewServer(sim.New(sim.Config{}))
		defer s.Close()
		client, server := Pipe()
		defer client.Close()
		s.ServeConn(server)
		c := &rawClient{t: t, conn: client, fr: NewFrameReader(client), fw: NewFrameWriter(client)}
		c.fw.WriteProtocolHeader()
		c.expect()
		c.send(0, &ConnectionStartOk{ClientProperties: protocol.Table{}, Mechanism: "PLAIN", Response: "\x00guest\x00guest"})
		c.expect()
		c.send(0, &ConnectionTuneOk{ChannelMax: 2047, FrameMax: 131072, Heartbeat: 10})
		c.send(0, &ConnectionOpen{VirtualHost: "/"})
		c.expect()

		done, stopped := make(chan struct{}), make(chan struct{})
		go func() { // the client heartbeats every 5 s
			defer close(stopped)
			beat := AppendFrame(nil, Frame{Type: FrameHeartbeat})
			for {
				select {
				case <-done:
					return
				case <-time.After(5 * time.Second):
					client.Write(beat)
				}
			}
		}()
		start := time.Now()
		var beats []time.Duration
		for time.Since(start) < time.Minute {
			f, err := c.fr.ReadFrame()
			if err != nil {
				t.Fatalf("after %v: %v", time.Since(start), err)
			}
			if f.Type == FrameHeartbeat {
				beats = append(beats, time.Since(start))
			}
		}
		close(done)
		select {
		case <-stopped:
		case <-time.After(waitTimeout):
			t.Fatal("the client's heartbeat goroutine did not stop")
		}
		if len(beats) != 12 || beats[0] != 5*time.Second {
			t.Errorf("server heartbeats at %v, want every 5 s", beats)
		}
		c.send(0, &ConnectionClose{})
		if _, ok := c.expect().(*ConnectionCloseOk); !ok {
			t.Error("no close-ok")
		}
	})
}

// TestServerCancelNotifyCapability: a client that does not announce
// consumer_cancel_notify is not sent basic.cancel when its queue goes.
func TestServerCancelNotifyCapability(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, announce := range []bool{true, false} {
			s, _ := newRawServer(t)
			c := dialRaw(t, s)
			caps := protocol.Table{}
			if announce {
				caps["consumer_cancel_notify"] = true
			}
			c.open("guest", "guest", "/", caps)
			openChannel(c, 1)
			c.send(1, &QueueDeclare{Queue: "q"})
			c.expect()
			c.send(1, &BasicConsume{Queue: "q", ConsumerTag: "c1"})
			c.expect()
			c.send(1, &QueueDelete{Queue: "q"})
			if _, ok := c.expect().(*QueueDeleteOk); !ok {
				t.Fatal("no delete-ok")
			}
			// The reply comes first, then what the call pushed.
			c.send(1, &BasicQos{PrefetchCount: 1})
			got := c.expect()
			if cancel, ok := got.(*BasicCancel); ok != announce || ok && cancel.ConsumerTag != "c1" {
				t.Errorf("announce=%t: got %#v", announce, got)
			}
			if !announce {
				continue
			}
			if _, ok := c.expect().(*BasicQosOk); !ok {
				t.Error("no qos-ok")
			}
		}
	})
}

// openHeartbeat opens a raw connection with heartbeat seconds negotiated.
func openHeartbeat(t *testing.T, s *Server, heartbeat uint16) (*rawClient, net.Conn) {
	client, server := Pipe()
	s.ServeConn(server)
	c := &rawClient{t: t, conn: client, fr: NewFrameReader(client), fw: NewFrameWriter(client)}
	c.fw.WriteProtocolHeader()
	c.expect()
	c.send(0, &ConnectionStartOk{ClientProperties: protocol.Table{}, Mechanism: "PLAIN", Response: "\x00guest\x00guest"})
	c.expect()
	c.send(0, &ConnectionTuneOk{ChannelMax: 2047, FrameMax: 131072, Heartbeat: heartbeat})
	c.send(0, &ConnectionOpen{VirtualHost: "/"})
	c.expect()
	return c, client
}

// readUntilClosed reads frames until the server drops the connection and
// returns how long that took and whether a close frame came first.
func readUntilClosed(c *rawClient) (time.Duration, bool) {
	c.t.Helper()
	start := time.Now()
	for range maxFrames {
		f, err := c.fr.ReadFrame()
		if err != nil {
			return time.Since(start), false
		}
		if f.Type == FrameMethod {
			if m, _ := DecodeMethod(f.Payload); m != nil {
				if _, ok := m.(*ConnectionClose); ok {
					return time.Since(start), true
				}
			}
		}
	}
	c.t.Fatalf("%d frames in %v, and the connection still open", maxFrames, time.Since(start))
	return 0, false
}

// A silent client is dropped, without a close frame, on the receiver's
// second silent look: 6 s after connection.open with a 2 s heartbeat, as
// RabbitMQ 3.10.8 does (measured).
func TestServerHeartbeatDropsSilentClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewServer(sim.New(sim.Config{}))
		defer s.Close()
		c, client := openHeartbeat(t, s, 2)
		defer client.Close()
		took, closeFrame := readUntilClosed(c)
		if took != 6*time.Second || closeFrame {
			t.Errorf("dropped after %v (close frame %t), want 6s without one", took, closeFrame)
		}
	})
}

// A client that sends anything at least once a heartbeat interval stays:
// here one byte of a frame every 2 s, never a whole frame in time.
func TestServerHeartbeatCountsBytes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewServer(sim.New(sim.Config{}))
		defer s.Close()
		c, client := openHeartbeat(t, s, 2)
		defer client.Close()
		frame := AppendFrame(nil, Frame{Type: FrameHeartbeat})
		dropped := make(chan time.Duration, 1)
		go func() {
			took, _ := readUntilClosed(c)
			dropped <- took
		}()
		for i := 0; i < 30; i++ { // a minute, byte by byte
			time.Sleep(2 * time.Second)
			client.Write(frame[i%len(frame) : i%len(frame)+1])
		}
		select {
		case took := <-dropped:
			t.Fatalf("dropped after %v although bytes kept coming", took)
		default:
		}
		client.Close()
		recv(t, dropped)
	})
}

// After a frame error RabbitMQ 3.10.8 sends connection.close and drops the
// socket 3 s later, close-ok or not (measured: an oversized frame whose
// payload never comes, a bad frame-end octet).
func TestServerFrameErrorDropsAfterThreeSeconds(t *testing.T) {
	for _, tc := range []struct {
		name  string
		bytes []byte
	}{
		{"oversized frame, no payload", []byte{1, 0, 1, 0, 3, 0x0d, 0x40}},
		{"bad frame end", []byte{8, 0, 0, 0, 0, 0, 0, 0xCD}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := NewServer(sim.New(sim.Config{}))
				defer s.Close()
				c, client := openHeartbeat(t, s, 0)
				defer client.Close()
				client.Write(tc.bytes)
				start := time.Now()
				if _, closeFrame := readUntilClosed(c); !closeFrame {
					t.Fatal("no connection.close")
				}
				c.expectEOF()
				if took := time.Since(start); took != 3*time.Second {
					t.Errorf("socket dropped after %v, want 3s", took)
				}
			})
		})
	}
}
