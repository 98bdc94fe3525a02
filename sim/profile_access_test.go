package sim_test

import (
	"testing"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// The permission, declare and handshake rules of sim/profile.go that the
// library recorded, or a raw socket measured, on 4.0.5 and 4.3.6.

// limitedUser connects user "app", who may configure "^cfg", write to
// "^w" and read from "^r", on a broker of release v where guest has made
// queues cfgq, wq, rq and other and fanout exchanges wx, rx and otherx.
func limitedUser(t *testing.T, v sim.Version) (*sim.Broker, *sim.Connection) {
	t.Helper()
	e := newEnvOn(t, v)
	for _, q := range []string{"cfgq", "wq", "rq", "other"} {
		e.declare(q, sim.QueueOptions{Durable: true})
	}
	for _, x := range []string{"wx", "rx", "otherx"} {
		e.must(e.ch.ExchangeDeclare(x, "fanout", sim.ExchangeOptions{}))
	}
	e.must(e.b.AddUser(sim.User{Name: "app", Password: "pw"}))
	e.must(e.b.SetPermissions("/", "app", sim.Permissions{Configure: "^cfg", Write: "^w", Read: "^r"}))
	c, err := e.b.Dial(sim.ConnectOptions{User: "app", Password: "pw"})
	e.must(err)
	return e.b, c
}

// From 4.0 a refusal names the missing permission (permissions-methods.txt,
// recorded on 3.10.8, 4.0.5 and 4.3.6), topic permissions too (measured on
// 4.0.5 and 4.3.6); 3.13 says "access to ...".
func TestAccessRefusalNamesPermission40(t *testing.T) {
	for _, tc := range []struct {
		v             sim.Version
		prefix, topic string
	}{{sim.V3_13, "", ""}, {sim.V4_0, "configure ", "read "}} {
		b, c := limitedUser(t, tc.v)
		ch := mustChannel(t, c)
		_, err := ch.QueueDeclare("other2", sim.QueueOptions{Durable: true})
		wantErr(t, err, 403, "ACCESS_REFUSED - "+tc.prefix+"access to queue 'other2' in vhost '/' refused for user 'app'", protocol.QueueDeclare)

		if err := b.SetTopicPermissions(sim.TopicPermissions{User: "app", Vhost: "/", Exchange: "amq.topic", Write: "^a", Read: "^a"}); err != nil {
			t.Fatal(err)
		}
		if err := b.SetPermissions("/", "app", sim.Permissions{Configure: "^cfg", Write: "^w|^amq\\.topic", Read: "^r|^amq\\.topic"}); err != nil {
			t.Fatal(err)
		}
		ch = mustChannel(t, c)
		err = ch.QueueBind("wq", "b.key", "amq.topic", nil)
		wantErr(t, err, 403, "ACCESS_REFUSED - "+tc.topic+"access to topic 'b.key' in exchange 'amq.topic' in vhost '/' refused for user 'app'", protocol.QueueBind)
	}
}

func mustChannel(t *testing.T, c *sim.Connection) *sim.Channel {
	t.Helper()
	ch, err := c.Channel()
	if err != nil {
		t.Fatal(err)
	}
	return ch
}
