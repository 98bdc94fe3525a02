package sim_test

import (
	"strings"
	"testing"

	"github.com/amqpsim/amqpsim/sim"
)

// Each profile difference (sim/profile.go) is pinned by a scenario: a
// library recording, or, for the releases that cannot be run here, a
// hand-written file of scenarios/testdata/profiles on the release before
// the change and the release that made it, citing the rabbitmq-server
// source it follows. This file keeps what a scenario cannot say: the
// API (ParseVersion, the profile table, a Profile of one's own,
// QueueMessages), a policy the broker refuses (a refused policy step
// stops a scenario), and a reply to a generated reply-to name.

func newEnvOn(t *testing.T, v sim.Version) *env { return newEnvConfig(t, sim.Config{Version: v}) }

func TestParseVersion(t *testing.T) {
	for in, want := range map[string]sim.Version{"3.10": sim.V3_10, "3.10.8": sim.V3_10, "3.13.2": sim.V3_13,
		"4.0": sim.V4_0, " 4.3 ": sim.V4_3, "4.3.5": sim.V4_3} {
		if got, err := sim.ParseVersion(in); err != nil || got != want {
			t.Errorf("ParseVersion(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "3.11", "5.0", "4", "4.x", "4.3.5.1", "300.1"} {
		if _, err := sim.ParseVersion(in); err == nil || !strings.Contains(err.Error(), "3.10, 3.12, 3.13, 4.0, 4.1, 4.2, 4.3") {
			t.Errorf("ParseVersion(%q) = %v, want an error listing the profiles", in, err)
		}
	}
	if s := (sim.Version{}).String(); s != "4.3" {
		t.Errorf("the zero Version is %q, want the default 4.3", s)
	}
	if p := sim.New(sim.Config{}).Profile(); p.Version != sim.V4_3 || p.ServerVersion != "4.3.6" {
		t.Errorf("the default profile is %v (%s), want 4.3 (4.3.6)", p.Version, p.ServerVersion)
	}
}

// Each release's profile only adds to the one before (no rule goes away
// and comes back), so the table reads as a history.
func TestProfilesAccumulate(t *testing.T) {
	type flags struct{ qct, lastDeath, ignoreDeath, replyTo, transient, globalQos, quorumOnly bool }
	var prev flags
	for _, v := range sim.Versions() {
		p := v.Profile()
		f := flags{p.QueueConsumerTimeout, p.LastDeathHeaders, p.IgnorePublisherDeaths, p.ReplyToMandatoryRouted,
			p.TransientNonExclusiveDenied, p.GlobalQosDenied, p.Queue.ConsumerTimeoutQuorumOnly}
		for i, was := range []bool{prev.qct, prev.lastDeath, prev.ignoreDeath, prev.replyTo, prev.transient, prev.globalQos, prev.quorumOnly} {
			now := []bool{f.qct, f.lastDeath, f.ignoreDeath, f.replyTo, f.transient, f.globalQos, f.quorumOnly}[i]
			if was && !now {
				t.Errorf("%v drops rule %d of the release before", v, i)
			}
		}
		prev = f
		if !strings.HasPrefix(p.ServerVersion, v.String()+".") {
			t.Errorf("%v reports server version %q", v, p.ServerVersion)
		}
	}
}

// The consumer-timeout policy key exists from 3.12 (rabbit_policies at
// v3.12.0); 3.10 refuses it (measured on RabbitMQ 3.10.8: rabbitmqctl
// set_policy with {"consumer-timeout":1000} answers "are not recognised
// policy settings").
func TestConsumerTimeoutPolicyKey312(t *testing.T) {
	p := sim.Policy{Name: "ct", Pattern: ".", Definition: sim.Table{"consumer-timeout": int64(1000)}}
	if err := sim.New(sim.Config{Version: sim.V3_10}).SetPolicy("/", p); err == nil {
		t.Error("3.10 took a consumer-timeout policy")
	}
	if err := sim.New(sim.Config{Version: sim.V3_12}).SetPolicy("/", p); err != nil {
		t.Errorf("3.12: %v", err)
	}
	p.Definition["consumer-timeout"] = int64(-1)
	if err := sim.New(sim.Config{Version: sim.V3_12}).SetPolicy("/", p); err == nil {
		t.Error("3.12 took a negative consumer-timeout")
	}
}

// From 4.2 a mandatory publish to a direct reply-to name counts as
// routed: no basic.return (release-notes/4.2.0.md). 3.10 returns it
// (TestReplyToRoundTrip).
func TestReplyToMandatoryRouted42(t *testing.T) {
	for _, tc := range []struct {
		v       sim.Version
		returns int
	}{{sim.V4_1, 1}, {sim.V4_2, 0}} {
		e := newEnvOn(t, tc.v)
		e.declare("rpc", sim.QueueOptions{Durable: true})
		replies := e.consume(e.ch, sim.ReplyTo, "rc", sim.ConsumeOptions{NoAck: true})
		server := e.channel(e.conn)
		requests := e.consume(server, "rpc", "srv", sim.ConsumeOptions{NoAck: true})
		e.must(e.ch.Publish("", "rpc", sim.PublishOptions{}, sim.Message{Properties: sim.Properties{ReplyTo: sim.ReplyTo}, Body: []byte("req")}))
		req, _ := requests.Next()
		e.must(server.Publish("", req.ReplyTo, sim.PublishOptions{Mandatory: true}, sim.Message{Body: []byte("resp")}))
		if _, ok := replies.Next(); !ok {
			t.Fatalf("%v: no reply", tc.v)
		}
		if r := server.Returns(); len(r) != tc.returns {
			t.Errorf("%v: %d returns, want %d", tc.v, len(r), tc.returns)
		}
	}
}

// A profile that denies transient_nonexcl_queues refuses only a queue
// that is neither durable nor exclusive (RS@v4.3.5
// rabbit_amqqueue:is_queue_args_combination_permitted/2: "not Durable
// andalso not Exclusive" asks is_permitted); a transient exclusive queue
// and a durable one are declared. Permitting the feature lifts it.
func TestTransientNonExclusiveDeniedByAProfile(t *testing.T) {
	p := sim.New(sim.Config{Version: sim.V4_3}).Profile()
	p.TransientNonExclusiveDenied = true
	e := newEnvConfig(t, sim.Config{Profile: &p})
	e.declare("d", sim.QueueOptions{Durable: true})
	e.declare("x", sim.QueueOptions{Exclusive: true})
	e.declare("xa", sim.QueueOptions{Exclusive: true, AutoDelete: true})
	_, err := e.ch.QueueDeclare("t", sim.QueueOptions{AutoDelete: true})
	if perr := asError(err); perr == nil || perr.Code != 541 || !perr.Hard ||
		!strings.HasPrefix(perr.Text, "INTERNAL_ERROR - Feature `transient_nonexcl_queues` is deprecated.") {
		t.Errorf("transient non-exclusive queue t: %v, want 541 INTERNAL_ERROR closing the connection", err)
	}
	if e.exists("t") {
		t.Error("the refused queue t exists")
	}

	permitted := newEnvConfig(t, sim.Config{Profile: &p, Permit: []string{"transient_nonexcl_queues"}})
	permitted.declare("t", sim.QueueOptions{AutoDelete: true})
}

// QueueMessages lists a quorum queue's ready messages in the order gets
// take them, priorities included (the orders of each release are in
// scenarios/testdata/profiles/quorum-priorities.txt).
func TestQuorumPrioritiesInspected(t *testing.T) {
	for _, v := range []sim.Version{sim.V3_13, sim.V4_0, sim.V4_3} {
		e := newEnvOn(t, v)
		e.declare("q", quorumQueue)
		for i, p := range []uint8{1, 5, 9, 0, 40, 2} {
			e.must(e.b.Publish("/", "", "q", sim.Message{Properties: sim.Properties{Priority: p}, Body: []byte{byte('a' + i)}}))
		}
		ready := e.ready("q")
		diff(t, v.String()+" fetch order", ready, bodies(e.getAll("q")))
	}
}

// Changes covers every rule: undoing them all on any release gives 3.10's
// rules, and each one undone alone changes something on 4.3 (so the
// upgrade check can name every difference's cause).
func TestChangesCoverTheProfiles(t *testing.T) {
	base := sim.V3_10.Profile()
	for _, v := range sim.Versions() {
		p := v.Profile()
		for _, c := range sim.Changes() {
			p = c.Undo(p, base)
		}
		p.Version, p.ServerVersion = base.Version, base.ServerVersion
		p.Platform, p.Copyright = base.Platform, base.Copyright // what it says it is, not a rule
		if p != base {
			t.Errorf("%v with every change undone:\n%+v\nwant 3.10's\n%+v", v, p, base)
		}
	}
	latest := sim.V4_3.Profile()
	for _, c := range sim.Changes() {
		if c.Undo(latest, base) == latest {
			t.Errorf("undoing %q changes nothing on 4.3", c.Name)
		}
		if c.Why == "" {
			t.Errorf("change %q has no why", c.Name)
		}
		// Since is the first release the change shows on.
		for _, v := range sim.Versions() {
			p := v.Profile()
			before := v.String() < c.Since.String() // "3.10" < "4.0": the names sort as the releases
			if shows := c.Undo(p, base) != p; shows == before {
				t.Errorf("change %q (since %v) shows on %v: %t", c.Name, c.Since, v, shows)
			}
		}
	}
}
