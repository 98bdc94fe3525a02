package sim

import (
	"bytes"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/amqpsim/amqpsim/protocol"
)

// guestHash is the password_hash RabbitMQ 3.10.8 exported for guest/guest
// (rabbitmqctl export_definitions on the local broker).
const guestHash = "1s00h6Nz9olUa+BVEXVsxKyuyoMJqaUF7IDs4GcIcXwS8rRG"

func TestHashPasswordMatchesRabbitMQ(t *testing.T) {
	salt := [4]byte{0xd6, 0xcd, 0x34, 0x87}
	got, err := HashPassword(HashSHA256, "guest", salt)
	if err != nil {
		t.Fatal(err)
	}
	if got != guestHash {
		t.Fatalf("HashPassword = %s, RabbitMQ stored %s", got, guestHash)
	}
}

func TestImportedHashLogsIn(t *testing.T) {
	b := New(Config{})
	if err := b.AddUser(User{Name: "u", PasswordHash: guestHash, Tags: []string{"monitoring"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Authenticate("u", "guest", netip.Addr{}); err != nil {
		t.Fatalf("the imported hash does not log in: %v", err)
	}
	if _, err := b.Authenticate("u", "wrong", netip.Addr{}); err == nil {
		t.Fatal("a wrong password logged in")
	}
	u, _ := b.User("u")
	if u.PasswordHash != guestHash || u.HashingAlgorithm != HashSHA256 || !u.HasTag(TagMonitoring) {
		t.Fatalf("User = %+v", u)
	}
}

func TestAuthenticate(t *testing.T) {
	b := New(Config{})
	if err := b.AddUser(User{Name: "app", Password: "secret"}); err != nil {
		t.Fatal(err)
	}
	if err := b.AddUser(User{Name: "app", Password: "x"}); err == nil {
		t.Fatal("AddUser of an existing user succeeded")
	}
	remote := netip.MustParseAddr("192.0.2.2")
	for _, tc := range []struct {
		user, pass string
		local      netip.Addr
		reason     string // "" for success
	}{
		{"guest", "guest", netip.Addr{}, ""},
		{"guest", "guest", netip.MustParseAddr("127.0.0.1"), ""},
		{"guest", "guest", netip.MustParseAddr("::1"), ""},
		{"guest", "guest", netip.MustParseAddr("::ffff:127.0.0.1"), ""},
		{"guest", "guest", remote, "user 'guest' can only connect via localhost"},
		{"guest", "bad", remote, "user 'guest' - invalid credentials"},
		{"app", "secret", remote, ""},
		{"app", "bad", netip.Addr{}, "user 'app' - invalid credentials"},
		{"nobody", "x", netip.Addr{}, "user 'nobody' - invalid credentials"},
	} {
		_, err := b.Authenticate(tc.user, tc.pass, tc.local)
		var le *LoginError
		switch {
		case tc.reason == "" && err != nil:
			t.Errorf("%s/%s from %v: %v", tc.user, tc.pass, tc.local, err)
		case tc.reason != "" && (!errors.As(err, &le) || le.Reason != tc.reason):
			t.Errorf("%s/%s from %v: err %v, want reason %q", tc.user, tc.pass, tc.local, err, tc.reason)
		}
	}
	if got := LoginRefusal("PLAIN"); got.Code != 403 || got.Text != "ACCESS_REFUSED - Login was refused using authentication mechanism PLAIN. For details see the broker logfile." {
		t.Fatalf("Refusal = %+v", got)
	}
}

// TestDialVhostAccess pins the connection.open texts measured on RabbitMQ
// 3.10.8 (a user without permissions; a missing vhost).
func TestDialVhostAccess(t *testing.T) {
	b := New(Config{})
	b.AddVhost("v")
	if err := b.AddUser(User{Name: "u", Password: "p"}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		vhost, want string
	}{
		{"v", "NOT_ALLOWED - access to vhost 'v' refused for user 'u'"},
		{"/", "NOT_ALLOWED - access to vhost '/' refused for user 'u'"},
		{"missing", "NOT_ALLOWED - vhost missing not found"},
	} {
		_, err := b.Dial(ConnectOptions{User: "u", Password: "p", Vhost: tc.vhost})
		var perr *protocol.Error
		if !errors.As(err, &perr) || perr.Code != 530 || perr.Text != tc.want {
			t.Errorf("Dial to %q: %v, want %s", tc.vhost, err, tc.want)
		}
	}
	if err := b.SetPermissions("v", "u", Permissions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Dial(ConnectOptions{User: "u", Password: "p", Vhost: "v"}); err != nil {
		t.Fatalf("empty permissions still grant vhost access in RabbitMQ: %v", err)
	}
	if err := b.SetPermissions("v", "u", Permissions{Configure: "("}); err == nil || !strings.Contains(err.Error(), "invalid regular expression '('") {
		t.Fatalf("SetPermissions with an invalid expression: %v", err)
	}
	if p, _ := b.UserPermissions("v", "u"); p != (Permissions{}) {
		t.Fatalf("a failed SetPermissions changed them: %+v", p)
	}
	if err := b.SetPermissions("v", "nobody", FullPermissions); !errors.Is(err, ErrNoUser) {
		t.Fatalf("SetPermissions for a missing user: %v", err)
	}
}

func TestDefaultUserConfig(t *testing.T) {
	b := New(Config{DefaultUser: "admin", DefaultPass: "pw", DefaultVhost: "app"})
	if _, err := b.Authenticate("guest", "guest", netip.Addr{}); err == nil {
		t.Fatal("guest exists although DefaultUser is admin")
	}
	u, err := b.Authenticate("admin", "pw", netip.MustParseAddr("192.0.2.2"))
	if err != nil || !u.HasTag(TagAdministrator) {
		t.Fatalf("admin: %+v, %v", u, err)
	}
	if got := b.Vhosts(); len(got) != 1 || got[0] != "app" {
		t.Fatalf("Vhosts = %v", got)
	}
	c := b.Connect("c") // default user, default vhost
	if c.vhost.name != "app" {
		t.Fatalf("Connect opened vhost %q", c.vhost.name)
	}
	if got := b.Permissions(); len(got) != 1 || got[0] != (UserPermissions{User: "admin", Vhost: "app", Permissions: FullPermissions}) {
		t.Fatalf("Permissions = %+v", got)
	}
	if _, err := Open(Config{DefaultPermissions: &Permissions{Read: "["}}); err == nil {
		t.Fatal("Open accepted an invalid DefaultPermissions")
	}
	if cfg := b.Config(); cfg.DefaultUser != "admin" || cfg.DefaultPass != "pw" || cfg.ConsumerTimeout != DefaultConsumerTimeout {
		t.Fatalf("Config = %+v, want the default user and the defaults filled in", cfg)
	}
	if cfg := New(Config{}).Config(); cfg.DefaultUser != "guest" || cfg.DefaultPass != "guest" || cfg.DefaultVhost != "/" {
		t.Fatalf("Config of a zero Config: user %q/%q vhost %q, want guest/guest in /", cfg.DefaultUser, cfg.DefaultPass, cfg.DefaultVhost)
	}
}

// TestDeleteUserAndVhostCloseConnections pins the 320 texts measured on
// RabbitMQ 3.10.8 (rabbitmqctl delete_user, delete_vhost).
func TestDeleteUserAndVhostCloseConnections(t *testing.T) {
	b := New(Config{})
	b.AddVhost("v")
	for _, u := range []string{"a", "b"} {
		if err := b.AddUser(User{Name: u, Password: u}); err != nil {
			t.Fatal(err)
		}
		if err := b.SetPermissions("v", u, FullPermissions); err != nil {
			t.Fatal(err)
		}
	}
	ca, _ := b.Dial(ConnectOptions{User: "a", Password: "a", Vhost: "v"})
	cb, _ := b.Dial(ConnectOptions{User: "b", Password: "b", Vhost: "v"})
	home := b.Connect("home")
	if err := b.DeleteUser("a"); err != nil {
		t.Fatal(err)
	}
	if err := ca.Err(); err == nil || !strings.Contains(err.Error(), "CONNECTION_FORCED - user 'a' is deleted") {
		t.Fatalf("a's connection: %v", err)
	}
	if cb.Err() != nil {
		t.Fatal("b's connection closed")
	}
	if _, ok := b.UserPermissions("v", "a"); ok {
		t.Fatal("a's permissions survived")
	}
	if err := b.DeleteVhost("v"); err != nil {
		t.Fatal(err)
	}
	if err := cb.Err(); err == nil || !strings.Contains(err.Error(), "CONNECTION_FORCED - vhost 'v' is deleted") {
		t.Fatalf("b's connection: %v", err)
	}
	if home.Err() != nil {
		t.Fatal("a connection to / closed")
	}
	if err := b.DeleteVhost("v"); !errors.Is(err, ErrNoVhost) {
		t.Fatalf("second DeleteVhost: %v", err)
	}
}

// TestBlankPasswordNeverLogsIn: a user may be given a blank password, or
// a stored hash of one, but it never logs in with it, over the wire or
// the management API (rabbit_auth_backend_internal:
// user_login_authentication/2; measured on 3.10.8 with add_user and an empty password, and
// PUT /api/users, recorded in mgmt's blank-password scenario).
func TestBlankPasswordNeverLogsIn(t *testing.T) {
	b := New(Config{})
	hash, err := HashPassword(HashSHA256, "", [4]byte{1, 2, 3, 4})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []User{{Name: "blank-hash", PasswordHash: hash}, {Name: "none"}} {
		if err := b.AddUser(u); err != nil {
			t.Fatal(err)
		}
		_, err := b.Authenticate(u.Name, "", netip.Addr{})
		var le *LoginError
		if !errors.As(err, &le) || !strings.Contains(le.Reason, "blank password") {
			t.Errorf("%s with a blank password: %v, want a refusal naming the blank password", u.Name, err)
		}
	}
}

// TestSaltsFromConfig: Config.Salts is where a password's salt comes
// from; without it, the seed decides, so that two brokers of one seed
// hash a password alike and brokers of two seeds do not.
func TestSaltsFromConfig(t *testing.T) {
	hashOf := func(cfg Config) string {
		t.Helper()
		b := New(cfg)
		if err := b.AddUser(User{Name: "u", Password: "secret"}); err != nil {
			t.Fatal(err)
		}
		u, _ := b.User("u")
		return u.PasswordHash
	}
	want, err := HashPassword(HashSHA256, "secret", [4]byte{1, 2, 3, 4})
	if err != nil {
		t.Fatal(err)
	}
	// The default user is made first: its salt is the reader's first 4 bytes.
	if got := hashOf(Config{Salts: bytes.NewReader([]byte{9, 9, 9, 9, 1, 2, 3, 4})}); got != want {
		t.Errorf("with Salts: %s, want %s", got, want)
	}
	one, again, two := hashOf(Config{Seed: 1}), hashOf(Config{Seed: 1}), hashOf(Config{Seed: 2})
	if one != again {
		t.Error("one seed, two hashes")
	}
	if one == two {
		t.Error("two seeds, one hash")
	}
	if _, err := Open(Config{Salts: bytes.NewReader(nil)}); err == nil {
		t.Error("the default user made without a salt")
	}
}
