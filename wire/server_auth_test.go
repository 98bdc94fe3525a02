package wire

import (
	"net"
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
