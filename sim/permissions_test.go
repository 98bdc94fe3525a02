package sim

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/amqpsim/amqpsim/definitions"
)

// TestPermissionCache pins RabbitMQ 3.10.8's per-channel cache of
// successful checks: right after clear_permissions the same channel may
// still redeclare its queue (measured, when the channel had not
// hibernated), a new channel may not; a channel idle for a second
// (hibernation) has forgotten its checks (permissions-channel-cache.txt
// idles 15 s on the broker).
func TestPermissionCache(t *testing.T) {
	b := New(Config{})
	if err := b.AddUser(User{Name: "u", Password: "p"}); err != nil {
		t.Fatal(err)
	}
	if err := b.SetPermissions("/", "u", FullPermissions); err != nil {
		t.Fatal(err)
	}
	c, _ := b.Dial(ConnectOptions{User: "u", Password: "p"})
	ch, _ := c.Channel()
	if _, err := ch.QueueDeclare("pq", QueueOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := b.ClearPermissions("/", "u"); err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDeclare("pq", QueueOptions{}); err != nil {
		t.Fatalf("same channel after clear: %v", err)
	}
	ch2, _ := c.Channel()
	if _, err := ch2.QueueDeclare("pq", QueueOptions{}); err == nil {
		t.Fatal("new channel after clear: declared")
	}
	b.Advance(999 * time.Millisecond)
	if _, err := ch.QueueDeclare("pq", QueueOptions{}); err != nil {
		t.Fatalf("same channel after 999ms idle: %v", err)
	}
	b.Advance(time.Second)
	if _, err := ch.QueueDeclare("pq", QueueOptions{}); err == nil {
		t.Fatal("same channel after 1s idle: still cached")
	}
	// The cache holds 12 checks: after 12 others, pq's is forgotten.
	ch3, _ := c.Channel()
	if err := b.SetPermissions("/", "u", FullPermissions); err != nil {
		t.Fatal(err)
	}
	ch3.QueueDeclare("pq", QueueOptions{})
	for i := range 12 {
		if _, err := ch3.QueueDeclare(string(rune('a'+i)), QueueOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	b.ClearPermissions("/", "u")
	if _, err := ch3.QueueDeclare("pq", QueueOptions{}); err == nil {
		t.Fatal("a check 13 checks old is still cached")
	}
}

// TestSetUserTags: SetUserTags with no tags leaves none, and a missing
// user is ErrNoUser. (Which tags a connection acts on, those of its login:
// users-tags-fixed-at-login.txt.)
func TestSetUserTags(t *testing.T) {
	b := New(Config{})
	if err := b.AddUser(User{Name: "imp", Password: "pw", Tags: []string{TagImpersonator}}); err != nil {
		t.Fatal(err)
	}
	if err := b.SetUserTags("imp"); err != nil {
		t.Fatal(err)
	}
	if u, _ := b.User("imp"); len(u.Tags) != 0 {
		t.Errorf("tags after SetUserTags with none: %v", u.Tags)
	}
	if err := b.SetUserTags("nobody", TagImpersonator); !errors.Is(err, ErrNoUser) {
		t.Errorf("SetUserTags of a missing user: %v", err)
	}
}

// TestTopicPermissionPatterns pins how a topic permission's expression is
// read, measured on 3.10.8 (4.0.5 and 4.3.6 alike) with rabbitmqctl
// set_topic_permissions on a topic exchange and users p310-u and p310.v:
// "" is ^$ (the empty key only); {username} and {vhost} are expanded,
// as text, so the "." of p310.v matches any character; {client_id} is not
// expanded and matches itself.
func TestTopicPermissionPatterns(t *testing.T) {
	for _, tc := range []struct {
		user, write, read string
		keys              map[string][2]bool // key: publish allowed, bind allowed
	}{
		{"p310-u", "", "", map[string][2]bool{"": {true, true}, "a": {}, "p310-u": {}, "{username}": {}}},
		{"p310-u", "^{username}$", "{vhost}", map[string][2]bool{"": {}, "p310-u": {true, false}, "p310-uX": {},
			"/": {false, true}, "{username}": {}, "{vhost}": {}}},
		{"p310-u", `^{username}\.x`, "^{client_id}$", map[string][2]bool{"p310-u.x": {true, false}, "p310-u": {},
			"{client_id}": {false, true}}},
		{"p310.v", "^{username}$", "^{username}$", map[string][2]bool{"p310.v": {true, true}, "p310xv": {true, true}, "p310": {}}},
	} {
		b := New(Config{})
		if err := b.AddUser(User{Name: tc.user, Password: "pw"}); err != nil {
			t.Fatal(err)
		}
		if err := b.SetPermissions("/", tc.user, FullPermissions); err != nil {
			t.Fatal(err)
		}
		c, err := b.Dial(ConnectOptions{User: tc.user, Password: "pw"})
		if err != nil {
			t.Fatal(err)
		}
		setup, _ := c.Channel()
		setup.ExchangeDeclare("p310-x", "topic", ExchangeOptions{})
		setup.QueueDeclare("p310-q", QueueOptions{})
		if err := b.SetTopicPermissions(TopicPermissions{User: tc.user, Vhost: "/", Exchange: "p310-x", Write: tc.write, Read: tc.read}); err != nil {
			t.Fatal(err)
		}
		for key, want := range tc.keys {
			ch, _ := c.Channel()
			pub := ch.Publish("p310-x", key, PublishOptions{}, Message{}) == nil
			ch, _ = c.Channel()
			bind := ch.QueueBind("p310-q", key, "p310-x", nil) == nil
			if got := [2]bool{pub, bind}; got != want {
				t.Errorf("user %s, write %q, read %q, key %q: publish, bind allowed = %v, RabbitMQ: %v", tc.user, tc.write, tc.read, key, got, want)
			}
		}
	}
}

// BenchmarkPublishChecked publishes on a channel as a user with
// restricted permissions: the write check is answered from the channel's
// cache, without allocating.
func BenchmarkPublishChecked(b *testing.B) {
	br := New(Config{NoTrace: true})
	br.AddUser(User{Name: "u", Password: "p"})
	br.SetPermissions("/", "u", Permissions{Configure: "^q", Write: "^(x|amq\\.default)$", Read: "^q"})
	c, _ := br.Dial(ConnectOptions{User: "u", Password: "p"})
	ch, _ := c.Channel()
	ch.QueueDeclare("q", QueueOptions{})
	m := Message{Body: []byte("m")}
	b.ReportAllocs()
	for b.Loop() {
		if err := ch.Publish("", "nowhere", PublishOptions{}, m); err != nil {
			b.Fatal(err)
		}
	}
}

// TestClearTopicPermissions: clearing names one exchange, or with ""
// every exchange of the user, as rabbitmqctl clear_topic_permissions with
// and without its exchange argument (checked on RabbitMQ 3.10.8 with
// list_topic_permissions); AllTopicPermissions lists what is left, by
// vhost, user and exchange.
func TestClearTopicPermissions(t *testing.T) {
	b := New(Config{Version: V4_0}) // 4.3 sets them only on an exchange that exists
	b.AddVhost("v")
	if err := b.SetPermissions("v", "guest", FullPermissions); err != nil {
		t.Fatal(err)
	}
	set := []TopicPermissions{
		{User: "guest", Vhost: "/", Exchange: "x1", Write: "^a", Read: "^b"},
		{User: "guest", Vhost: "/", Exchange: "x2", Write: "^c", Read: "^d"},
		{User: "guest", Vhost: "v", Exchange: "x1", Write: "^e", Read: "^f"},
	}
	for _, tp := range set {
		if err := b.SetTopicPermissions(tp); err != nil {
			t.Fatal(err)
		}
	}
	if got := b.AllTopicPermissions(); !slices.Equal(got, set) {
		t.Fatalf("after set: %v, want %v", got, set)
	}
	if err := b.ClearTopicPermissions("/", "guest", "x1"); err != nil {
		t.Fatal(err)
	}
	if got, want := b.AllTopicPermissions(), []TopicPermissions{set[1], set[2]}; !slices.Equal(got, want) {
		t.Fatalf("after clearing x1 in /: %v, want %v", got, want)
	}
	if err := b.ClearTopicPermissions("/", "guest", ""); err != nil {
		t.Fatal(err)
	}
	if got, want := b.AllTopicPermissions(), []TopicPermissions{set[2]}; !slices.Equal(got, want) {
		t.Fatalf("after clearing all in /: %v, want %v", got, want)
	}
	if err := b.ClearTopicPermissions("/", "nobody", ""); !errors.Is(err, ErrNoUser) {
		t.Errorf("clear for a missing user: %v, want ErrNoUser", err)
	}
	if err := b.SetTopicPermissions(TopicPermissions{User: "guest", Vhost: "nowhere", Exchange: "x"}); !errors.Is(err, ErrNoVhost) {
		t.Errorf("set in a missing vhost: %v, want ErrNoVhost", err)
	}
}

// TestPermissionPatternsMatchBytes: permission and topic permission
// patterns match as RabbitMQ's Erlang re does (see pattern), measured on
// 3.10.8: configure ^.{1,3}$ lets 'é' (two bytes) and 'ab' through and
// refuses 'ééé' (six bytes); ^x[é]y$ refuses 'xéy' ([é] is one of two
// bytes); a topic write ^a\.b$ lets the key "a.b\n" through ($ before a
// final newline); a topic write "" is ^$, letting the empty key through.
func TestPermissionPatternsMatchBytes(t *testing.T) {
	b := New(Config{})
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(b.AddUser(User{Name: "u", Password: "p"}))
	must(b.SetPermissions("/", "u", Permissions{Configure: `^.{1,3}$|^x[é]y$`, Write: ".*", Read: ".*"}))
	must(b.SetTopicPermissions(TopicPermissions{User: "u", Vhost: "/", Exchange: "amq.topic", Write: `^a\.b$`, Read: ".*"}))
	g, err := b.Dial(ConnectOptions{})
	must(err)
	gch, err := g.Channel()
	must(err)
	must(gch.ExchangeDeclare("t", "topic", ExchangeOptions{}))
	must(b.SetTopicPermissions(TopicPermissions{User: "u", Vhost: "/", Exchange: "t", Write: "", Read: ".*"}))

	try := func(f func(ch *Channel) error) error {
		t.Helper()
		c, err := b.Dial(ConnectOptions{User: "u", Password: "p"})
		must(err)
		defer c.Close()
		ch, err := c.Channel()
		must(err)
		return f(ch)
	}
	for name, allowed := range map[string]bool{"é": true, "ab": true, "ééé": false, "xéy": false} {
		err := try(func(ch *Channel) error { _, err := ch.QueueDeclare(name, QueueOptions{AutoDelete: true}); return err })
		if allowed != (err == nil) {
			t.Errorf("declare %q: %v, allowed %t", name, err, allowed)
		}
	}
	for _, c := range []struct {
		exchange, key string
		allowed       bool
	}{{"amq.topic", "a.b", true}, {"amq.topic", "a.b\n", true}, {"amq.topic", "a.b\n\n", false}, {"t", "", true}, {"t", "\n", true}, {"t", "a", false}} {
		err := try(func(ch *Channel) error {
			return ch.Publish(c.exchange, c.key, PublishOptions{}, Message{Body: []byte("m")})
		})
		if c.allowed != (err == nil) {
			t.Errorf("publish to %s with key %q: %v, allowed %t", c.exchange, c.key, err, c.allowed)
		}
	}
}

// TestTopicPermissionsNeedTheExchangeFrom43: rabbitmqctl
// set_topic_permissions on an exchange that does not exist fails on 4.3.6
// ("Exchange X does not exist", exit status 69) and succeeds on 3.10.8
// and 4.0.5 (measured on the three); an exchange that exists, the default
// one included, takes them on every release.
func TestTopicPermissionsNeedTheExchangeFrom43(t *testing.T) {
	for _, tc := range []struct {
		v       Version
		refused bool
	}{{V3_10, false}, {V4_0, false}, {V4_3, true}} {
		b := New(Config{Version: tc.v})
		err := b.SetTopicPermissions(TopicPermissions{User: "guest", Vhost: "/", Exchange: "missing", Write: "^a", Read: "^a"})
		if (err != nil) != tc.refused {
			t.Errorf("%v: a missing exchange: err %v, want refused %v", tc.v, err, tc.refused)
		}
		for _, x := range []string{"", "amq.topic"} {
			if err := b.SetTopicPermissions(TopicPermissions{User: "guest", Vhost: "/", Exchange: x, Write: "^a", Read: "^a"}); err != nil {
				t.Errorf("%v: exchange %q: %v", tc.v, x, err)
			}
		}
		// A definitions import sets them the same way, after the file's
		// exchanges (rabbitmqctl import_definitions on the three: 4.3.6
		// answers {no_such_exchange,<<"missing">>}).
		missing := &definitions.File{TopicPermissions: []definitions.TopicPermission{{User: "guest", Vhost: "/", Exchange: "missing", Write: "^a", Read: "^a"}}}
		if err := b.ImportDefinitions(missing); (err != nil) != tc.refused {
			t.Errorf("%v: an import for a missing exchange: err %v, want refused %v", tc.v, err, tc.refused)
		}
		withIt := &definitions.File{Exchanges: []definitions.Exchange{{Name: "tx-new", Vhost: "/", Type: "topic"}},
			Vhosts:           []definitions.Vhost{{Name: "fresh"}},
			TopicPermissions: []definitions.TopicPermission{{User: "guest", Vhost: "/", Exchange: "tx-new"}, {User: "guest", Vhost: "fresh", Exchange: "amq.topic"}}}
		if err := b.ImportDefinitions(withIt); err != nil {
			t.Errorf("%v: an import for its own exchange and a new vhost's amq.topic: %v", tc.v, err)
		}
	}
}
