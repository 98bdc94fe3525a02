package wire

import (
	"io"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

func newProfileServer(t *testing.T, v sim.Version) *Server {
	t.Helper()
	s := NewServer(sim.New(sim.Config{Version: v}))
	s.Logf = t.Logf
	t.Cleanup(func() { s.Close() })
	return s
}

// connection.start reports the simulated release as the real broker
// does: version, platform, copyright and mechanisms as a raw socket read
// them from 3.10.8, 4.0.5 and 4.3.6 (sim.Profile; RabbitMQ's
// rabbit_reader:server_properties/1 and auth_mechanisms/1); amqpsim names
// itself in information only. A broker without a Version reports
// sim.DefaultVersion's.
func TestServerPropertiesReportProfile(t *testing.T) {
	type props struct {
		v                                        sim.Version
		version, platform, copyright, mechanisms string
	}
	measured := []props{
		{sim.V3_10, "3.10.8", "Erlang/OTP 25.2.3", "Copyright (c) 2007-2022 VMware, Inc. or its affiliates.", "PLAIN AMQPLAIN"},
		{sim.V4_0, "4.0.5", "Erlang/OTP 27.3.4.1", "Copyright (c) 2007-2024 Broadcom Inc and/or its subsidiaries", "PLAIN ANONYMOUS AMQPLAIN"},
		{sim.V4_3, "4.3.6", "Erlang/OTP 29.1.2", "Copyright (c) 2007-2026 Broadcom Inc and/or its subsidiaries", "PLAIN AMQPLAIN ANONYMOUS"},
	}
	for _, p := range measured {
		if p.v == sim.DefaultVersion {
			p.v = sim.Version{}
			measured = append(measured, p)
			break
		}
	}
	for _, tc := range measured {
		synctest.Test(t, func(t *testing.T) {
			c := dialRaw(t, newProfileServer(t, tc.v))
			c.fw.WriteProtocolHeader()
			start := c.expect().(*ConnectionStart)
			for k, want := range map[string]string{"product": "RabbitMQ", "version": tc.version, "platform": tc.platform, "copyright": tc.copyright} {
				if got := start.ServerProperties[k]; got != want {
					t.Errorf("%v: %s = %v, want %q", tc.v, k, got, want)
				}
			}
			if start.Mechanisms != tc.mechanisms {
				t.Errorf("%v: mechanisms %q, want %q", tc.v, start.Mechanisms, tc.mechanisms)
			}
			if info, _ := start.ServerProperties["information"].(string); !strings.Contains(info, "RabbitMQ "+tc.version) {
				t.Errorf("%v: information = %q", tc.v, info)
			}
		})
	}
}

// The wire answers a protocol header as the simulated release does
// (sim.Profile.ProtocolHeader, measured on 3.10.8, 4.0.5 and 4.3.6 with a
// raw socket): 0-9's header starts 0-9-1 everywhere; 0-8's gets the 0-9-1
// header from 3.10 (which would speak 0-8; amqpsim does not) and AMQP
// 1.0's SASL header from 4.0, as does anything that is no AMQP header.
func TestServerProtocolHeaderPerProfile(t *testing.T) {
	const (
		h091 = "AMQP\x00\x00\x09\x01"
		sasl = "AMQP\x03\x01\x00\x00"
	)
	for _, tc := range []struct {
		v            sim.Version
		header, want string // want "" is connection.start
	}{
		{sim.V3_10, "AMQP\x01\x01\x00\x09", ""},
		{sim.V4_3, "AMQP\x01\x01\x00\x09", ""},
		{sim.V3_10, "AMQP\x01\x01\x08\x00", h091},
		{sim.V4_0, "AMQP\x01\x01\x08\x00", sasl},
		{sim.V4_3, "AMQP\x01\x01\x08\x00", sasl},
		{sim.V4_0, "AMQP\x00\x00\x09\x02", h091},
		{sim.V4_0, "GET / HTTP/1.1\r\n\r\n", sasl},
		{sim.V4_0, "AMQP\x03\x01\x00\x00", h091},
		{sim.V3_10, "AMQP\x03\x01\x00\x00", h091},
	} {
		synctest.Test(t, func(t *testing.T) {
			c := dialRaw(t, newProfileServer(t, tc.v))
			c.conn.Write([]byte(tc.header))
			if tc.want == "" {
				start, ok := c.expect().(*ConnectionStart)
				if !ok || start.VersionMajor != 0 || start.VersionMinor != 9 {
					t.Errorf("%v: %q answered with %#v, want connection.start 0-9", tc.v, tc.header, start)
				}
				return
			}
			got, _ := io.ReadAll(c.conn)
			if string(got) != tc.want {
				t.Errorf("%v: %q answered with %q, want %q and the socket closed", tc.v, tc.header, got, tc.want)
			}
		})
	}
}

// From 4.0 the ANONYMOUS mechanism logs in as guest whatever its response
// (measured on 4.0.5: rabbitmqctl lists the connection as guest's).
func TestServerAnonymousLogin40(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newProfileServer(t, sim.V4_0)
		c := dialRaw(t, s)
		c.fw.WriteProtocolHeader()
		c.expect()
		c.send(0, &ConnectionStartOk{ClientProperties: protocol.Table{}, Mechanism: "ANONYMOUS", Response: "whatever", Locale: "en_US"})
		tune, ok := c.expect().(*ConnectionTune)
		if !ok {
			t.Fatal("4.0: ANONYMOUS refused")
		}
		c.send(0, &ConnectionTuneOk{ChannelMax: tune.ChannelMax, FrameMax: tune.FrameMax})
		c.send(0, &ConnectionOpen{VirtualHost: "/"})
		if _, ok := c.expect().(*ConnectionOpenOk); !ok {
			t.Fatal("4.0: no open-ok")
		}
		if conns := s.Broker.Connections(); len(conns) != 1 || conns[0].Info().User != "guest" || conns[0].Info().AuthMechanism != "ANONYMOUS" {
			t.Errorf("4.0: connections %+v, want one of guest's by ANONYMOUS", conns)
		}
	})
}

// A start-ok that names a mechanism the release does not offer (3.10's
// ANONYMOUS, anyone's FOO) or carries a malformed PLAIN response is
// answered with nothing, and the socket dropped 3 s later (measured on
// 3.10.8, 4.0.5 and 4.3.6: rabbit_reader's silent close of a failed
// handshake), even from a client with authentication_failure_close.
func TestServerBadMechanismDropsLater(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, tc := range []struct {
			v                   sim.Version
			mechanism, response string
		}{{sim.V3_10, "ANONYMOUS", ""}, {sim.V4_0, "FOO", "\x00guest\x00guest"}, {sim.V4_3, "PLAIN", "garbage"}} {
			c := dialRaw(t, newProfileServer(t, tc.v))
			c.fw.WriteProtocolHeader()
			c.expect()
			c.send(0, &ConnectionStartOk{ClientProperties: protocol.Table{"capabilities": protocol.Table{"authentication_failure_close": true}},
				Mechanism: tc.mechanism, Response: tc.response})
			if took, closeFrame := readUntilClosed(c); took != 3*time.Second || closeFrame {
				t.Errorf("%v: %s %q dropped after %v (close frame %t), want 3s without one", tc.v, tc.mechanism, tc.response, took, closeFrame)
			}
		}
	})
}

// Before connection.tune-ok the largest frame is 4096 bytes until 4.1 and
// 8192 from 4.1 (RS@v4.1.8 rabbit_reader:start_connection/5,
// initial_frame_max; release-notes/4.1.0.md): a connection.start-ok of
// about 6000 bytes is refused on 4.0 and answered with connection.tune
// on 4.1.
func TestFrameMinSizeBeforeTune41(t *testing.T) {
	big := protocol.Table{"product": strings.Repeat("x", 6000)}
	for _, tc := range []struct {
		v        sim.Version
		accepted bool
	}{{sim.V4_0, false}, {sim.V4_1, true}} {
		synctest.Test(t, func(t *testing.T) {
			c := dialRaw(t, newProfileServer(t, tc.v))
			c.fw.SetFrameMax(1 << 20)
			c.fw.WriteProtocolHeader()
			c.expect()
			c.send(0, &ConnectionStartOk{ClientProperties: big, Mechanism: "PLAIN", Response: "\x00guest\x00guest"})
			_, tuned := c.next().(*ConnectionTune)
			if tuned != tc.accepted {
				t.Errorf("%v: a 6000-byte start-ok answered with tune = %t, want %t", tc.v, tuned, tc.accepted)
			}
		})
	}
}

// From 4.0 max_message_size defaults to 16 MiB (release-notes/4.0.1.md;
// RS@v4.0.9 rabbit_channel:check_msg_size/2): a body of 16 MiB + 1 closes
// the channel with 406; on 3.13 the limit is 128 MiB and it is taken.
func TestMaxMessageSize40(t *testing.T) {
	const size = 16777217
	for _, tc := range []struct {
		v       sim.Version
		refused bool
	}{{sim.V3_13, false}, {sim.V4_0, true}} {
		synctest.Test(t, func(t *testing.T) {
			s := newProfileServer(t, tc.v)
			c := dialRaw(t, s)
			c.ready()
			openChannel(c, 1)
			c.send(1, &QueueDeclare{Queue: "big", Durable: true})
			c.expect()
			c.send(1, &BasicPublish{RoutingKey: "big"})
			c.raw(FrameHeader, 1, header(60, size))
			chunk := make([]byte, 131072-FrameOverhead)
			for sent := 0; sent < size; sent += len(chunk) {
				c.raw(FrameBody, 1, chunk[:min(len(chunk), size-sent)])
			}
			c.send(1, &QueueDeclare{Queue: "big", Passive: true})
			m := c.expect()
			if tc.refused {
				want := "PRECONDITION_FAILED - message size 16777217 is larger than configured max size 16777216"
				if cl, ok := m.(*ChannelClose); !ok || cl.ReplyCode != 406 || cl.ReplyText != want {
					t.Fatalf("%v: got %#v, want channel.close 406 %q", tc.v, m, want)
				}
				return
			}
			if ok, _ := m.(*QueueDeclareOk); ok == nil || ok.MessageCount != 1 {
				t.Fatalf("%v: got %#v, want declare-ok with the message", tc.v, m)
			}
		})
	}
}

// The limit is the broker's (sim.Config.MaxMessageSize), and the server
// keeps none of a body over it: the broker refuses the publish by the size
// the header announced, with the text it gives in process.
func TestMaxMessageSizeConfiguredNotBuffered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewServer(sim.New(sim.Config{MaxMessageSize: 100}))
		t.Cleanup(func() { s.Close() })
		c := dialRaw(t, s)
		c.ready()
		openChannel(c, 1)
		c.send(1, &BasicPublish{RoutingKey: "q"})
		c.raw(FrameHeader, 1, header(60, 1000))
		c.raw(FrameBody, 1, make([]byte, 1000))
		m := c.expect()
		want := "PRECONDITION_FAILED - message size 1000 is larger than configured max size 100"
		if cl, ok := m.(*ChannelClose); !ok || cl.ReplyCode != 406 || cl.ReplyText != want {
			t.Fatalf("got %#v, want channel.close 406 %q", m, want)
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		for sc := range s.conns {
			for _, cs := range sc.chans {
				if cap(cs.body) > 0 {
					t.Errorf("channel %d kept %d bytes of the refused body", cs.id, cap(cs.body))
				}
			}
		}
	})
}
