package sim

import (
	"errors"
	"slices"
	"testing"

	"github.com/amqpsim/amqpsim/definitions"
)

// The permission conversations measured on RabbitMQ are scenarios: the
// library's permissions-*.txt and users-*.txt, and, where a recording
// cannot hold them, scenarios/testdata/measured/permission-cache.txt
// (hibernation's timing), topic-permission-patterns.txt and
// permission-patterns-match-bytes.txt (names and patterns the
// recorder's prefix would change). This file keeps the API's.

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
