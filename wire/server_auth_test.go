package wire

import (
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/amqpsim/amqpsim/internal/bubble"
	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// remoteConn is a server end whose own address is not loopback, as a
// connection to the host's external address has.
type remoteConn struct{ net.Conn }

func (remoteConn) LocalAddr() net.Addr {
	return &net.TCPAddr{IP: net.ParseIP("192.0.2.2"), Port: 5672}
}

func dialRemote(t *testing.T, s *Server) *rawClient {
	t.Helper()
	client, server := Pipe()
	if err := s.ServeConn(remoteConn{server}); err != nil {
		t.Fatal(err)
	}
	_ = client.SetDeadline(time.Now().Add(10 * time.Second))
	t.Cleanup(func() { client.Close() })
	return &rawClient{t: t, conn: client, fr: NewFrameReader(client), fw: NewFrameWriter(client)}
}

// TestServerGuestOnlyFromLoopback: the wire passes the socket's own
// address to the broker, which refuses guest elsewhere (loopback_users)
// with the same 403 as a bad password, and lets other users in.
func TestServerGuestOnlyFromLoopback(t *testing.T) {
	t.Run("guest from a remote address", bubble.Subtest(func(t *testing.T) {
		s, _ := newRawServer(t)
		c := dialRemote(t, s)
		c.fw.WriteProtocolHeader()
		c.expect()
		c.send(0, &ConnectionStartOk{ClientProperties: protocol.Table{"capabilities": protocol.Table{"authentication_failure_close": true}},
			Mechanism: "PLAIN", Response: "\x00guest\x00guest"})
		want := cclose(403, "ACCESS_REFUSED - Login was refused using authentication mechanism PLAIN. For details see the broker logfile.", protocol.Method{})
		if diff := cmp.Diff(want, c.next()); diff != "" {
			t.Fatalf("(-want +got):\n%s", diff)
		}
	}))
	t.Run("another user from a remote address", bubble.Subtest(func(t *testing.T) {
		s, b := newRawServer(t)
		if err := b.AddUser(sim.User{Name: "app", Password: "pw"}); err != nil {
			t.Fatal(err)
		}
		c := dialRemote(t, s)
		got := c.open("app", "pw", "/", nil)
		want := cclose(530, "NOT_ALLOWED - access to vhost '/' refused for user 'app'", protocol.ConnectionOpen)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("without permissions (-want +got):\n%s", diff)
		}
		if err := b.SetPermissions("/", "app", sim.FullPermissions); err != nil {
			t.Fatal(err)
		}
		c = dialRemote(t, s)
		if got := c.open("app", "pw", "/", nil); !cmp.Equal(got, &ConnectionOpenOk{}) {
			t.Fatalf("with permissions: %#v", got)
		}
	}))
}

// loginAttempt sends start-ok with the mechanism and response (announcing
// authentication_failure_close when authClose), then does what the
// client does after the refusal (answer, at once or later), and returns
// the methods the server sent and how long after start-ok it dropped the
// socket.
func loginAttempt(t *testing.T, mechanism, response string, authClose bool, answer func(c *rawClient, got Method)) ([]Method, time.Duration) {
	t.Helper()
	s, _ := newRawServer(t)
	c := dialRaw(t, s)
	c.fw.WriteProtocolHeader()
	c.expect()
	caps := protocol.Table{}
	if authClose {
		caps["authentication_failure_close"] = true
	}
	c.send(0, &ConnectionStartOk{ClientProperties: protocol.Table{"capabilities": caps}, Mechanism: mechanism, Response: response})
	start := time.Now()
	if answer != nil {
		answer(c, nil)
	}
	var got []Method
	for {
		if len(got) == maxFrames {
			t.Fatalf("%d methods without the end of the connection", maxFrames)
		}
		m := c.next()
		if m == nil {
			return got, time.Since(start)
		}
		got = append(got, m)
		if answer != nil {
			answer(c, m)
		}
	}
}

// after answers, d after start-ok, with m (on a goroutine of the bubble).
func after(d time.Duration, m Method) func(c *rawClient, got Method) {
	return func(c *rawClient, got Method) {
		if got == nil {
			go func() {
				time.Sleep(d)
				_ = c.fw.WriteMethod(0, m)
			}()
		}
	}
}

// onClose answers the server's connection.close with close-ok at once.
func onClose(c *rawClient, got Method) {
	if _, ok := got.(*ConnectionClose); ok {
		_ = c.fw.WriteMethod(0, &ConnectionCloseOk{})
	}
}

// TestServerRefusedLoginAwaitsCloseOk: after a refused login the server is
// closing: the client's connection.close-ok drops the socket at once, its
// connection.close is answered with close-ok, anything else waits out the
// 3 s; with or without the authentication_failure_close capability (which
// only decides whether the 403 connection.close is sent). Measured on
// RabbitMQ 3.10.8 (4.0.5 and 4.3.6 alike) with a raw-frame client.
func TestServerRefusedLoginAwaitsCloseOk(t *testing.T) {
	refusal := cclose(403, "ACCESS_REFUSED - Login was refused using authentication mechanism PLAIN. For details see the broker logfile.", protocol.Method{})
	for _, tc := range []struct {
		name      string
		authClose bool
		answer    func(c *rawClient, got Method)
		want      []Method
		took      time.Duration
	}{
		{"close-ok at once", true, onClose, []Method{refusal}, 0},
		{"close-ok after 1s", true, after(time.Second, &ConnectionCloseOk{}), []Method{refusal}, time.Second},
		{"silence", true, nil, []Method{refusal}, 3 * time.Second},
		{"another method after 1s", true, after(time.Second, &ConnectionTuneOk{}), []Method{refusal}, 3 * time.Second},
		{"connection.close after 1s", true, after(time.Second, &ConnectionClose{ReplyCode: 200}), []Method{refusal, &ConnectionCloseOk{}}, 3 * time.Second},
		{"no capability, close-ok after 1s", false, after(time.Second, &ConnectionCloseOk{}), nil, time.Second},
		{"no capability, connection.close after 1s", false, after(time.Second, &ConnectionClose{ReplyCode: 200}), []Method{&ConnectionCloseOk{}}, 3 * time.Second},
		{"no capability, silence", false, nil, nil, 3 * time.Second},
	} {
		t.Run(tc.name, bubble.Subtest(func(t *testing.T) {
			got, took := loginAttempt(t, "PLAIN", "\x00guest\x00wrong", tc.authClose, tc.answer)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("frames (-want +got):\n%s", diff)
			}
			if took != tc.took {
				t.Errorf("dropped %v after start-ok, want %v", took, tc.took)
			}
		}))
	}
}

// TestServerHandshakeErrorIsSilent: a mechanism the server does not offer
// (it offers PLAIN and AMQPLAIN, case-sensitively) and a response its
// mechanism cannot parse (AMQPLAIN without PASSWORD too) get no
// connection.close, even with the authentication_failure_close
// capability, and the socket is dropped 3 s after start-ok whatever the
// client sends meanwhile (here a close-ok after 1 s). Measured on RabbitMQ
// 3.10.8 (4.0.5 and 4.3.6 alike).
func TestServerHandshakeErrorIsSilent(t *testing.T) {
	amqplain, _ := AppendTable(nil, protocol.Table{"LOGIN": "guest"})
	for _, tc := range []struct{ mechanism, response string }{
		{"EXTERNAL", ""},
		{"plain", "\x00guest\x00guest"},
		{"RABBIT-CR-DEMO", "guest"},
		{"PLAIN", "\x00guest"},
		{"PLAIN", "guest:guest"},
		{"PLAIN", "\x00guest\x00guest\x00x"},
		{"AMQPLAIN", "xx"},
		{"AMQPLAIN", string(amqplain[4:])},
	} {
		t.Run(tc.mechanism+" "+strconv.Quote(tc.response), bubble.Subtest(func(t *testing.T) {
			got, took := loginAttempt(t, tc.mechanism, tc.response, true, after(time.Second, &ConnectionCloseOk{}))
			if len(got) > 0 {
				t.Errorf("server sent %#v, want nothing", got)
			}
			if took != 3*time.Second {
				t.Errorf("dropped %v after start-ok, want 3s", took)
			}
		}))
	}
}
