package sim

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/amqpsim/amqpsim/protocol"
)

// TestPermissionChecks replays, method by method, what RabbitMQ 3.10.8
// answered a user with configure "^cfg", write "^w" and read "^r" in a
// vhost where guest had made queues cfgq, wq, rq, other and fanout
// exchanges cfgx, wx, rx, otherx (measured with amqp091-go; "" is
// success). Each call runs on a fresh channel. Pinned to 3.10, the
// release measured: from 4.0 the texts name the permission and 4.3 checks
// a passive declare (TestAccessRefusalNamesPermission40 and
// TestPassiveDeclareNeedsPermission43).
func TestPermissionChecks(t *testing.T) {
	b := New(Config{Version: V3_10})
	b.AddVhost("v")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(b.SetPermissions("v", "guest", FullPermissions))
	must(b.AddUser(User{Name: "u", Password: "p"}))
	must(b.SetPermissions("v", "u", Permissions{Configure: "^cfg", Write: "^w", Read: "^r"}))
	g, err := b.Dial(ConnectOptions{Vhost: "v"})
	must(err)
	gch, _ := g.Channel()
	for _, q := range []string{"cfgq", "wq", "rq", "other"} {
		_, err := gch.QueueDeclare(q, QueueOptions{})
		must(err)
	}
	for _, x := range []string{"cfgx", "wx", "rx", "otherx"} {
		must(gch.ExchangeDeclare(x, "fanout", ExchangeOptions{}))
	}
	c, err := b.Dial(ConnectOptions{User: "u", Password: "p", Vhost: "v"})
	must(err)
	refused := func(kind, name string) string {
		return "ACCESS_REFUSED - access to " + kind + " '" + name + "' in vhost 'v' refused for user 'u'"
	}
	for _, tc := range []struct {
		name string
		call func(ch *Channel) error
		want string
	}{
		{"queue.declare cfgq2", func(ch *Channel) error { _, e := ch.QueueDeclare("cfgq2", QueueOptions{}); return e }, ""},
		{"queue.declare other2", func(ch *Channel) error { _, e := ch.QueueDeclare("other2", QueueOptions{}); return e }, refused("queue", "other2")},
		{"queue.declare passive other", func(ch *Channel) error { _, e := ch.QueueDeclare("other", QueueOptions{Passive: true}); return e }, ""},
		{"queue.declare cfgq3 dlx otherx", func(ch *Channel) error {
			_, e := ch.QueueDeclare("cfgq3", QueueOptions{Args: Table{"x-dead-letter-exchange": "otherx"}})
			return e
		}, refused("queue", "cfgq3")},
		{"exchange.declare otherx2", func(ch *Channel) error { return ch.ExchangeDeclare("otherx2", "fanout", ExchangeOptions{}) }, refused("exchange", "otherx2")},
		{"exchange.declare passive otherx", func(ch *Channel) error { return ch.ExchangeDeclare("otherx", "fanout", ExchangeOptions{Passive: true}) }, ""},
		{"exchange.declare amq.direct", func(ch *Channel) error {
			return ch.ExchangeDeclare("amq.direct", "direct", ExchangeOptions{Durable: true})
		}, refused("exchange", "amq.direct")},
		{"exchange.declare cfgx", func(ch *Channel) error { return ch.ExchangeDeclare("cfgx", "fanout", ExchangeOptions{}) }, ""},
		{"exchange.declare cfgxae ae otherx", func(ch *Channel) error {
			return ch.ExchangeDeclare("cfgxae", "fanout", ExchangeOptions{Args: Table{"alternate-exchange": "otherx"}})
		}, refused("exchange", "cfgxae")},
		{"queue.bind wq<-rx", func(ch *Channel) error { return ch.QueueBind("wq", "k", "rx", nil) }, ""},
		{"queue.bind other<-rx", func(ch *Channel) error { return ch.QueueBind("other", "k", "rx", nil) }, refused("queue", "other")},
		{"queue.bind wq<-otherx", func(ch *Channel) error { return ch.QueueBind("wq", "k", "otherx", nil) }, refused("exchange", "otherx")},
		{"queue.bind other<-otherx", func(ch *Channel) error { return ch.QueueBind("other", "k", "otherx", nil) }, refused("queue", "other")},
		{"queue.bind wmissing<-rx", func(ch *Channel) error { return ch.QueueBind("wmissing", "k", "rx", nil) }, "NOT_FOUND - no queue 'wmissing' in vhost 'v'"},
		{"queue.bind wq<-rmissing", func(ch *Channel) error { return ch.QueueBind("wq", "k", "rmissing", nil) }, "NOT_FOUND - no exchange 'rmissing' in vhost 'v'"},
		{"queue.bind wq<-amq.direct", func(ch *Channel) error { return ch.QueueBind("wq", "k", "amq.direct", nil) }, refused("exchange", "amq.direct")},
		{"queue.bind wq<-''", func(ch *Channel) error { return ch.QueueBind("wq", "k", "", nil) }, "ACCESS_REFUSED - operation not permitted on the default exchange"},
		{"queue.unbind other<-otherx", func(ch *Channel) error { return ch.QueueUnbind("other", "k", "otherx", nil) }, refused("queue", "other")},
		{"queue.unbind wq<-rx", func(ch *Channel) error { return ch.QueueUnbind("wq", "k", "rx", nil) }, ""},
		{"exchange.bind wx<-rx", func(ch *Channel) error { return ch.ExchangeBind("wx", "k", "rx", nil) }, ""},
		{"exchange.bind otherx<-otherx", func(ch *Channel) error { return ch.ExchangeBind("otherx", "k", "otherx", nil) }, refused("exchange", "otherx")},
		{"exchange.bind wx<-otherx", func(ch *Channel) error { return ch.ExchangeBind("wx", "k", "otherx", nil) }, refused("exchange", "otherx")},
		{"exchange.unbind otherx<-otherx", func(ch *Channel) error { return ch.ExchangeUnbind("otherx", "k", "otherx", nil) }, refused("exchange", "otherx")},
		{"queue.purge other", func(ch *Channel) error { _, e := ch.QueuePurge("other"); return e }, refused("queue", "other")},
		{"queue.purge rq", func(ch *Channel) error { _, e := ch.QueuePurge("rq"); return e }, ""},
		{"queue.purge wq", func(ch *Channel) error { _, e := ch.QueuePurge("wq"); return e }, refused("queue", "wq")},
		{"queue.purge missing", func(ch *Channel) error { _, e := ch.QueuePurge("missing"); return e }, refused("queue", "missing")},
		{"basic.get other", func(ch *Channel) error { _, _, e := ch.Get("other", false); return e }, refused("queue", "other")},
		{"basic.get rq", func(ch *Channel) error { _, _, e := ch.Get("rq", false); return e }, ""},
		{"basic.get rmissing", func(ch *Channel) error { _, _, e := ch.Get("rmissing", false); return e }, "NOT_FOUND - no queue 'rmissing' in vhost 'v'"},
		{"basic.consume other", func(ch *Channel) error { _, e := ch.Consume("other", ConsumeOptions{}); return e }, refused("queue", "other")},
		{"basic.consume rq", func(ch *Channel) error { _, e := ch.Consume("rq", ConsumeOptions{}); return e }, ""},
		{"basic.publish otherx", func(ch *Channel) error { return ch.Publish("otherx", "k", PublishOptions{}, Message{}) }, refused("exchange", "otherx")},
		{"basic.publish ''", func(ch *Channel) error { return ch.Publish("", "other", PublishOptions{}, Message{}) }, refused("exchange", "amq.default")},
		{"basic.publish wx", func(ch *Channel) error { return ch.Publish("wx", "k", PublishOptions{}, Message{}) }, ""},
		{"basic.publish wmissing", func(ch *Channel) error { return ch.Publish("wmissing", "k", PublishOptions{}, Message{}) }, "NOT_FOUND - no exchange 'wmissing' in vhost 'v'"},
		{"queue.delete other", func(ch *Channel) error { _, e := ch.QueueDelete("other", QueueDeleteOptions{}); return e }, refused("queue", "other")},
		{"queue.delete cfgq", func(ch *Channel) error { _, e := ch.QueueDelete("cfgq", QueueDeleteOptions{}); return e }, ""},
		{"queue.delete cfgmissing", func(ch *Channel) error { _, e := ch.QueueDelete("cfgmissing", QueueDeleteOptions{}); return e }, ""},
		{"queue.delete missing", func(ch *Channel) error { _, e := ch.QueueDelete("missing", QueueDeleteOptions{}); return e }, refused("queue", "missing")},
		{"exchange.delete otherx", func(ch *Channel) error { return ch.ExchangeDelete("otherx", ExchangeDeleteOptions{}) }, refused("exchange", "otherx")},
		{"exchange.delete cfgx", func(ch *Channel) error { return ch.ExchangeDelete("cfgx", ExchangeDeleteOptions{}) }, ""},
		{"exchange.delete amq.direct", func(ch *Channel) error { return ch.ExchangeDelete("amq.direct", ExchangeDeleteOptions{}) }, "ACCESS_REFUSED - deletion of system exchange 'amq.direct' in vhost 'v' not allowed"},
		{"exchange.delete cfgmissing", func(ch *Channel) error { return ch.ExchangeDelete("cfgmissing", ExchangeDeleteOptions{}) }, ""},
	} {
		ch, err := c.Channel()
		must(err)
		err = tc.call(ch)
		var perr *protocol.Error
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v, RabbitMQ succeeds", tc.name, err)
		case tc.want != "" && (!errors.As(err, &perr) || perr.Text != tc.want):
			t.Errorf("%s: %v\n  RabbitMQ: %s", tc.name, err, tc.want)
		case perr != nil && perr.Hard:
			t.Errorf("%s: a hard error; RabbitMQ closes the channel only", tc.name)
		}
	}
}

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

// TestTopicPermissions pins the topic authorisation texts measured on
// 3.10.8 (write "^a", read "^b" on topic exchange tx), on 3.10: from 4.0
// the texts name the permission ("write access to topic ...").
func TestTopicPermissions(t *testing.T) {
	b := New(Config{Version: V3_10})
	c := b.Connect("c")
	ch, _ := c.Channel()
	ch.ExchangeDeclare("tx", "topic", ExchangeOptions{})
	ch.QueueDeclare("pq", QueueOptions{})
	if err := b.SetTopicPermissions(TopicPermissions{User: "guest", Vhost: "/", Exchange: "tx", Write: "^a", Read: "^b"}); err != nil {
		t.Fatal(err)
	}
	denied := "ACCESS_REFUSED - access to topic 'x.1' in exchange 'tx' in vhost '/' refused for user 'guest'"
	for _, tc := range []struct {
		name string
		call func(ch *Channel) error
		want string
	}{
		{"publish a.1", func(ch *Channel) error { return ch.Publish("tx", "a.1", PublishOptions{}, Message{}) }, ""},
		{"publish x.1", func(ch *Channel) error { return ch.Publish("tx", "x.1", PublishOptions{}, Message{}) }, denied},
		{"bind b.1", func(ch *Channel) error { return ch.QueueBind("pq", "b.1", "tx", nil) }, ""},
		{"bind x.1", func(ch *Channel) error { return ch.QueueBind("pq", "x.1", "tx", nil) }, denied},
		{"unbind x.1", func(ch *Channel) error { return ch.QueueUnbind("pq", "x.1", "tx", nil) }, denied},
		{"exchange.bind x.1", func(ch *Channel) error { return ch.ExchangeBind("amq.fanout", "x.1", "tx", nil) }, denied},
		{"exchange.bind from amq.topic", func(ch *Channel) error { return ch.ExchangeBind("tx", "x.1", "amq.topic", nil) }, ""},
		{"publish amq.topic x.1", func(ch *Channel) error { return ch.Publish("amq.topic", "x.1", PublishOptions{}, Message{}) }, ""},
	} {
		ch, _ := c.Channel()
		err := tc.call(ch)
		var perr *protocol.Error
		if tc.want == "" && err != nil || tc.want != "" && (!errors.As(err, &perr) || perr.Text != tc.want) {
			t.Errorf("%s: %v, RabbitMQ: %q", tc.name, err, tc.want)
		}
	}
}

// TestUserTagsFixedAtLogin: a connection keeps the tags its user had when
// it logged in. Measured on 3.10.8 (4.0.5 and 4.3.6 alike) with
// set_user_tags: impersonator added while a connection is open does not
// let it publish with another user-id, on an old channel or a new one; a
// connection opened after may; removing the tag then does not stop that
// connection, and a connection opened after the removal is refused.
func TestUserTagsFixedAtLogin(t *testing.T) {
	b := New(Config{})
	if err := b.AddUser(User{Name: "imp", Password: "pw"}); err != nil {
		t.Fatal(err)
	}
	if err := b.SetPermissions("/", "imp", FullPermissions); err != nil {
		t.Fatal(err)
	}
	dial := func() *Connection {
		c, err := b.Dial(ConnectOptions{User: "imp", Password: "pw"})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	impersonate := func(ch *Channel) bool {
		return ch.Publish("", "q", PublishOptions{}, Message{Properties: Properties{UserID: "someone"}}) == nil
	}
	c1 := dial()
	old, _ := c1.Channel()
	if err := b.SetUserTags("imp", TagImpersonator); err != nil {
		t.Fatal(err)
	}
	if impersonate(old) {
		t.Error("tag added: the open connection's old channel impersonates")
	}
	if ch, _ := c1.Channel(); impersonate(ch) {
		t.Error("tag added: the open connection's new channel impersonates")
	}
	c2 := dial()
	old2, _ := c2.Channel()
	if !impersonate(old2) {
		t.Error("tag added: a new connection may not impersonate")
	}
	if err := b.SetUserTags("imp"); err != nil {
		t.Fatal(err)
	}
	if !impersonate(old2) {
		t.Error("tag removed: the open connection's old channel no longer impersonates")
	}
	if ch, _ := c2.Channel(); !impersonate(ch) {
		t.Error("tag removed: the open connection's new channel no longer impersonates")
	}
	if ch, _ := dial().Channel(); impersonate(ch) {
		t.Error("tag removed: a new connection impersonates")
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

// TestUserIDProperty pins check_user_id_header (measured on 3.10.8 for
// guest): a user-id that is not the connection's user is 406, unless the
// user is an impersonator.
func TestUserIDProperty(t *testing.T) {
	b := New(Config{})
	if err := b.PutUser(User{Name: "imp", Password: "p", Tags: []string{TagImpersonator}}); err != nil {
		t.Fatal(err)
	}
	if err := b.SetPermissions("/", "imp", FullPermissions); err != nil {
		t.Fatal(err)
	}
	c := b.Connect("c")
	ch, _ := c.Channel()
	if err := ch.Publish("", "q", PublishOptions{}, Message{Properties: Properties{UserID: "guest"}}); err != nil {
		t.Fatal(err)
	}
	err := ch.Publish("", "q", PublishOptions{}, Message{Properties: Properties{UserID: "someone"}})
	var perr *protocol.Error
	if !errors.As(err, &perr) || perr.Text != "PRECONDITION_FAILED - user_id property set to 'someone' but authenticated user was 'guest'" {
		t.Fatalf("publish with another user-id: %v", err)
	}
	ic, _ := b.Dial(ConnectOptions{User: "imp", Password: "p"})
	ich, _ := ic.Channel()
	if err := ich.Publish("", "q", PublishOptions{}, Message{Properties: Properties{UserID: "someone"}}); err != nil {
		t.Fatalf("an impersonator: %v", err)
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
	}
}
