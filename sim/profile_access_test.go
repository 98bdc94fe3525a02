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

// From 3.13 an unknown exchange type closes the channel with 406
// (rabbitmq-server#11214, 3.13.3; exchange-unknown-type-closes-connection.txt
// on 4.0.5 and 4.3.6); 3.12 closes the connection with 503.
func TestUnknownExchangeTypeChannelError313(t *testing.T) {
	e := newEnvOn(t, sim.V3_12)
	err := e.ch.ExchangeDeclare("x", "nosuchtype", sim.ExchangeOptions{})
	wantErr(t, err, 503, "COMMAND_INVALID - unknown exchange type 'nosuchtype'", protocol.ExchangeDeclare)
	if e.conn.Err() == nil {
		t.Error("3.12: the connection is still open")
	}
	e = newEnvOn(t, sim.V3_13)
	err = e.ch.ExchangeDeclare("x", "nosuchtype", sim.ExchangeOptions{})
	wantErr(t, err, 406, "PRECONDITION_FAILED - unknown exchange type 'nosuchtype'", protocol.ExchangeDeclare)
	ch := e.channel(e.conn)
	e.must(ch.ExchangeDeclare("x", "direct", sim.ExchangeOptions{}))
}

// 4.3 takes any x-queue-mode on a classic queue, still compares it on a
// redeclaration, and quorum queues still refuse it
// (declare-invalid-arguments.txt on 4.3.6; measured there for the rest);
// 4.2 refuses "eager".
func TestQueueModeUnchecked43(t *testing.T) {
	e := newEnvOn(t, sim.V4_2)
	_, err := e.ch.QueueDeclare("q", sim.QueueOptions{Durable: true, Args: sim.Table{"x-queue-mode": "eager"}})
	wantErr(t, err, 406, `PRECONDITION_FAILED - invalid arg 'x-queue-mode' for queue 'q' in vhost '/': "unsupported queue mode 'eager'"`, protocol.QueueDeclare)

	e = newEnvOn(t, sim.V4_3)
	e.declare("q1", sim.QueueOptions{Durable: true, Args: sim.Table{"x-queue-mode": "eager"}})
	e.declare("q2", sim.QueueOptions{Durable: true, Args: sim.Table{"x-queue-mode": int64(5)}})
	e.declare("q3", sim.QueueOptions{Durable: true, Args: sim.Table{"x-queue-mode": "lazy"}})
	_, err = e.ch.QueueDeclare("q3", sim.QueueOptions{Durable: true, Args: sim.Table{"x-queue-mode": "default"}})
	wantErr(t, err, 406, "PRECONDITION_FAILED - inequivalent arg 'x-queue-mode' for queue 'q3' in vhost '/': received 'default' but current is 'lazy'", protocol.QueueDeclare)
	e.ch = e.channel(e.conn)
	_, err = e.ch.QueueDeclare("q4", sim.QueueOptions{Durable: true, Args: sim.Table{"x-queue-type": "quorum", "x-queue-mode": "lazy"}})
	wantErr(t, err, 406, "PRECONDITION_FAILED - invalid arg 'x-queue-mode' for queue 'q4' in vhost '/' of queue type rabbit_quorum_queue", protocol.QueueDeclare)
}

// What each release does with a protocol header, as a raw socket measured
// on 3.10.8, 4.0.5 and 4.3.6: 0-9-1's and 0-9's start 0-9-1 everywhere;
// 3.10.8 would start 0-8 on 0-8's and 4.x AMQP 1.0 on its SASL header,
// which amqpsim answers with the 0-9-1 header; other 0-9-x headers get
// the 0-9-1 header; anything else 3.10's 0-9-1 header and 4.x's AMQP 1.0
// SASL header.
func TestProtocolHeaderAnswers(t *testing.T) {
	const (
		h091 = "AMQP\x00\x00\x09\x01"
		sasl = "AMQP\x03\x01\x00\x00"
	)
	for _, tc := range []struct {
		header                  string
		on310, on40, on43       string // "" starts 0-9-1
		unsimulated310, unsim4x string
	}{
		{"AMQP\x00\x00\x09\x01", "", "", "", "", ""},
		{"AMQP\x01\x01\x00\x09", "", "", "", "", ""},
		{"AMQP\x01\x01\x08\x00", h091, sasl, sasl, "AMQP 0-8", ""},
		{"AMQP\x01\x01\x09\x01", h091, sasl, sasl, "AMQP 0-8", ""},
		{"AMQP\x03\x01\x00\x00", h091, h091, h091, "", "AMQP 1.0"},
		{"AMQP\x00\x00\x09\x00", h091, h091, h091, "", ""},
		{"AMQP\x00\x00\x09\x02", h091, h091, h091, "", ""},
		{"AMQP\x00\x00\x08\x00", h091, sasl, sasl, "", ""},
		{"AMQP\x01\x01\x09\x00", h091, sasl, sasl, "", ""},
		{"AMQP\x00\x01\x00\x00", h091, sasl, sasl, "", ""},
		{"AMQP\x02\x01\x00\x00", h091, sasl, sasl, "", ""},
		{"AMQP\x09\x09\x09\x09", h091, sasl, sasl, "", ""},
		{"XMQP\x00\x00\x09\x01", h091, sasl, sasl, "", ""},
		{"GET / HT", h091, sasl, sasl, "", ""},
	} {
		for _, r := range []struct {
			v           sim.Version
			want, unsim string
		}{{sim.V3_10, tc.on310, tc.unsimulated310}, {sim.V4_0, tc.on40, tc.unsim4x}, {sim.V4_3, tc.on43, tc.unsim4x}} {
			a := r.v.Profile().ProtocolHeader([8]byte([]byte(tc.header)))
			got := string(a.Reply[:])
			if a.Start {
				got = ""
			}
			if got != r.want || a.Unsimulated != r.unsim || a.Start && a.Reply != ([8]byte{}) {
				t.Errorf("%v answers %q with %+v, want reply %q (\"\" starts 0-9-1), unsimulated %q", r.v, tc.header, a, r.want, r.unsim)
			}
		}
	}
}

// 4.0.5 and 4.3.6 offer ANONYMOUS, in different places; 3.10.8 does not
// (connection.start's mechanisms, measured with a raw socket).
func TestMechanismsAnonymous40(t *testing.T) {
	for v, want := range map[sim.Version]string{sim.V3_10: "PLAIN AMQPLAIN", sim.V3_13: "PLAIN AMQPLAIN",
		sim.V4_0: "PLAIN ANONYMOUS AMQPLAIN", sim.V4_2: "PLAIN ANONYMOUS AMQPLAIN", sim.V4_3: "PLAIN AMQPLAIN ANONYMOUS"} {
		p := v.Profile()
		if p.Mechanisms != want || p.OffersMechanism("ANONYMOUS") != (v != sim.V3_10 && v != sim.V3_13) {
			t.Errorf("%v offers %q, want %q", v, p.Mechanisms, want)
		}
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
