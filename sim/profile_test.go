package sim_test

import (
	"strings"
	"testing"
	"time"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// The tests of this file pin each profile difference (sim/profile.go) to
// the rabbitmq-server source it follows; only 3.10 can be recorded here.
// Each runs the same calls on the release before the change and on the
// release that made it.

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

// 3.12 adds the per-queue consumer timeout: x-consumer-timeout (ms) on
// the queue, the consumer-timeout policy key, the smaller when both are
// set; a non-integer argument means none (RS@v3.12.0
// rabbit_channel:get_queue_consumer_timeout/2,
// rabbit_queue_type_util:args_policy_lookup/3). 3.10 ignores the argument
// (consumer-timeout-argument-ignored.txt, recorded on 3.10.8).
func TestQueueConsumerTimeout312(t *testing.T) {
	for _, tc := range []struct {
		name   string
		v      sim.Version
		arg    any
		policy any
		closed bool
		ms     int
	}{
		{"3.10 ignores the argument", sim.V3_10, int64(5000), nil, false, 0},
		{"3.12 argument", sim.V3_12, int64(5000), nil, true, 5000},
		{"3.12 policy", sim.V3_12, nil, int64(4000), true, 4000},
		{"3.12 smaller of both", sim.V3_12, int64(9000), int64(4000), true, 4000},
		{"3.12 non-integer argument: none", sim.V3_12, "soon", nil, false, 0},
		{"4.2 argument", sim.V4_2, int64(5000), nil, true, 5000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnvConfig(t, sim.Config{Version: tc.v, ChannelTickInterval: time.Second})
			args := sim.Table{}
			if tc.arg != nil {
				args["x-consumer-timeout"] = tc.arg
			}
			if tc.policy != nil {
				e.must(e.b.SetPolicy("/", sim.Policy{Name: "ct", Pattern: "^q$", Definition: sim.Table{"consumer-timeout": tc.policy}}))
			}
			e.declare("q", sim.QueueOptions{Args: args})
			e.consume(e.ch, "q", "A", sim.ConsumeOptions{})
			e.publish("q", "m1")
			e.b.Advance(10 * time.Second)
			err := e.ch.Err()
			if !tc.closed {
				if err != nil {
					t.Fatalf("closed: %v", err)
				}
				return
			}
			want := "PRECONDITION_FAILED - delivery acknowledgement on channel 1 timed out. Timeout value used: " +
				map[int]string{5000: "5000", 4000: "4000"}[tc.ms] + " ms. This timeout value can be configured, see consumers doc guide to learn more"
			if perr := asError(err); perr == nil || perr.Code != 406 || perr.Text != want {
				t.Fatalf("channel error %v, want 406 %q", err, want)
			}
		})
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

// 4.3 evaluates consumer timeouts for quorum queues only: a classic
// delivery never times out, and x-consumer-timeout on a classic queue is
// an argument of another queue type (RS@v4.3.5 rabbit_classic_queue:
// capabilities/0; release-notes/4.3.0.md). The quorum queue times its
// delivery out itself, at the timeout, and the channel cancels the
// consumer instead of closing (profile_quorum_timeout_test.go).
func TestConsumerTimeoutQuorumOnly43(t *testing.T) {
	e := newEnvConfig(t, sim.Config{Version: sim.V4_3, ConsumerTimeout: 5 * time.Second, ChannelTickInterval: time.Second})
	e.declare("cq", sim.QueueOptions{Durable: true})
	e.consume(e.ch, "cq", "A", sim.ConsumeOptions{})
	e.publish("cq", "m1")
	e.b.Advance(time.Minute)
	if err := e.ch.Err(); err != nil {
		t.Fatalf("a classic delivery timed out on 4.3: %v", err)
	}
	e.declare("qq", quorumQueue)
	e.consume(e.ch, "qq", "B", sim.ConsumeOptions{})
	e.publish("qq", "m2")
	e.b.Advance(10 * time.Second)
	if got := e.ch.Cancels(); e.ch.Err() != nil || len(got) != 1 || got[0].ConsumerTag != "B" {
		t.Errorf("the quorum delivery did not time out: cancels %v, channel %v", got, e.ch.Err())
	}
	ch := e.channel(e.conn)
	_, err := ch.QueueDeclare("cq2", sim.QueueOptions{Durable: true, Args: sim.Table{"x-consumer-timeout": int64(1000)}})
	wantErr(t, err, 406, "PRECONDITION_FAILED - invalid arg 'x-consumer-timeout' for queue 'cq2' in vhost '/' of queue type rabbit_classic_queue", protocol.QueueDeclare)
}

// From 3.12 a quorum basic.get adds x-delivery-count only when the count
// is above 0 (RS@v3.12.0 rabbit_fifo_client:add_delivery_count_header/2);
// 3.10's dequeue/3 adds 0 to the first get (quorum-get.txt).
func TestQuorumGetDeliveryCount312(t *testing.T) {
	for _, tc := range []struct {
		v       sim.Version
		hasZero bool
	}{{sim.V3_10, true}, {sim.V3_12, false}, {sim.V4_0, false}} {
		e := newEnvOn(t, tc.v)
		e.declare("q", quorumQueue)
		e.publish("q", "m1")
		d, ok, err := e.ch.Get("q", false)
		e.must(err)
		_, has := d.Headers["x-delivery-count"]
		if !ok || has != tc.hasZero {
			t.Errorf("%v: first get headers %v, want x-delivery-count present=%t", tc.v, d.Headers, tc.hasZero)
		}
		e.must(e.ch.Reject(d.DeliveryTag, true))
		d, _, err = e.ch.Get("q", false)
		e.must(err)
		if d.Headers["x-delivery-count"] != int64(1) || !d.Redelivered {
			t.Errorf("%v: second get headers %v redelivered=%t", tc.v, d.Headers, d.Redelivered)
		}
	}
}

// deadLettered rejects one message of q into a dead-letter queue and
// returns the headers it arrives with there.
func deadLettered(t *testing.T, v sim.Version, headers sim.Table) sim.Table {
	t.Helper()
	e := newEnvOn(t, v)
	e.declare("dlq", sim.QueueOptions{Durable: true})
	e.declare("q", sim.QueueOptions{Durable: true, Args: sim.Table{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": "dlq"}})
	e.must(e.b.Publish("/", "", "q", sim.Message{Properties: sim.Properties{Headers: headers}, Body: []byte("m1")}))
	d, _, err := e.ch.Get("q", false)
	e.must(err)
	e.must(e.ch.Reject(d.DeliveryTag, false))
	d, ok, err := e.ch.Get("dlq", true)
	e.must(err)
	if !ok {
		t.Fatalf("%v: nothing dead-lettered", v)
	}
	return d.Headers
}

// 3.13 adds x-last-death-reason, -queue and -exchange (RS@v3.13.7
// mc_amqpl:deaths_to_headers/2); 3.10 has the x-first-death-* ones only.
func TestLastDeathHeaders313(t *testing.T) {
	if h := deadLettered(t, sim.V3_10, nil); h["x-last-death-reason"] != nil {
		t.Errorf("3.10 sets x-last-death-reason: %v", h)
	}
	h := deadLettered(t, sim.V3_13, nil)
	for k, want := range map[string]string{"x-last-death-reason": "rejected", "x-last-death-queue": "q", "x-last-death-exchange": "",
		"x-first-death-reason": "rejected", "x-first-death-queue": "q"} {
		if h[k] != want {
			t.Errorf("3.13: %s = %v, want %q", k, h[k], want)
		}
	}
}

// 4.0 no longer reads an x-death header a publisher set: the first death
// writes it afresh (release-notes/4.0.1.md; RS@v4.0.9 mc_amqpl keeps
// x-death internal). 3.10 extends it: the count goes on from the
// publisher's.
func TestPublisherDeathIgnored40(t *testing.T) {
	forged := sim.Table{"x-death": []any{sim.Table{"count": int64(5), "reason": "rejected", "queue": "q", "exchange": "",
		"routing-keys": []any{"q"}, "time": time.Unix(0, 0).UTC()}}}
	count := func(h sim.Table) any {
		ds, _ := h["x-death"].([]any)
		if len(ds) != 1 {
			return ds
		}
		return ds[0].(sim.Table)["count"]
	}
	if c := count(deadLettered(t, sim.V3_13, forged)); c != int64(6) {
		t.Errorf("3.13: count %v, want 6", c)
	}
	h := deadLettered(t, sim.V4_0, forged)
	if c := count(h); c != int64(1) {
		t.Errorf("4.0: count %v, want 1", c)
	}
	if h["x-first-death-reason"] != "rejected" {
		t.Errorf("4.0: x-first-death-reason %v", h["x-first-death-reason"])
	}
}

// requeueUntilGone gets and requeues (reject, or nack when nack is set)
// the one message of q until it is gone, and returns how many times it
// was delivered (at most 100).
func requeueUntilGone(e *env, q string, nack bool) int {
	e.t.Helper()
	for n := 0; n < 100; n++ {
		d, ok, err := e.ch.Get(q, false)
		e.must(err)
		if !ok {
			return n
		}
		if nack {
			e.must(e.ch.Nack(d.DeliveryTag, false, true))
		} else {
			e.must(e.ch.Reject(d.DeliveryTag, true))
		}
	}
	return 100
}

// 4.0 gives quorum queues a delivery limit of 20 by default: the 21st
// return drops the message (RS@v4.0.9 rabbit_quorum_queue
// ?DEFAULT_DELIVERY_LIMIT; rabbit_fifo:return_one/8); -1 disables it;
// argument and policy combine as the smaller unless one is negative
// (resolve_delivery_limit/2). 3.10 has no default. The rest is recorded
// (quorum-delivery-limit-default.txt); a negative policy, which 3.10
// refuses, cannot be in a file recorded on all three releases.
func TestQuorumDefaultDeliveryLimit40(t *testing.T) {
	for _, tc := range []struct {
		name      string
		v         sim.Version
		args      sim.Table
		policy    any
		delivered int
	}{
		{"4.0 negative policy: the argument", sim.V4_0, sim.Table{"x-delivery-limit": int64(5)}, int64(-1), 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnvOn(t, tc.v)
			args := sim.Table{"x-queue-type": "quorum"}
			for k, v := range tc.args {
				args[k] = v
			}
			e.declare("q", sim.QueueOptions{Durable: true, Args: args})
			if tc.policy != nil {
				e.must(e.b.SetPolicy("/", sim.Policy{Name: "dl", Pattern: "^q$", Definition: sim.Table{"delivery-limit": tc.policy}}))
			}
			e.publish("q", "m1")
			if n := requeueUntilGone(e, "q", false); n != tc.delivered {
				t.Errorf("delivered %d times, want %d", n, tc.delivered)
			}
		})
	}
}

// publishPriorities publishes body=priority pairs to q.
func publishPriorities(e *env, q string, ps ...int) {
	e.t.Helper()
	for i, p := range ps {
		body := []byte{byte('a' + i)}
		e.must(e.b.Publish("/", "", q, sim.Message{Properties: sim.Properties{Priority: uint8(p)}, Body: body}))
	}
}

// Quorum queues order by priority from 4.0: two levels in 4.0–4.2,
// priority > 4 high, taken twice for one fair take of the older head
// (RS@v4.0.9 rabbit_fifo_q:out/1, next/1; rabbit_fifo:priority_tag/1);
// strict levels 0..31 in 4.3, none counted as 4 (RS@v4.3.5
// rabbit_fifo_pq, rabbit_fifo:msg_priority/1). 3.x ignores priorities.
func TestQuorumPriorities40And43(t *testing.T) {
	// a..f with priorities 1, 5, 9, 0, 40, 2.
	ps := []int{1, 5, 9, 0, 40, 2}
	for _, tc := range []struct {
		v    sim.Version
		want []string
	}{
		{sim.V3_13, []string{"a", "b", "c", "d", "e", "f"}},
		// high b c e, low a d f: hi, hi, fair (a older than e), hi, then low.
		{sim.V4_0, []string{"b", "c", "a", "e", "d", "f"}},
		{sim.V4_2, []string{"b", "c", "a", "e", "d", "f"}},
		// 40→31, 9, 5, 0→4, 2, 1.
		{sim.V4_3, []string{"e", "c", "b", "d", "f", "a"}},
	} {
		e := newEnvOn(t, tc.v)
		e.declare("q", quorumQueue)
		publishPriorities(e, "q", ps...)
		diff(t, tc.v.String()+" fetch order", tc.want, e.ready("q"))
		diff(t, tc.v.String()+" get order", tc.want, bodies(e.getAll("q")))
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

// 4.3 takes a queue neither durable nor exclusive, as 4.2 does: 4.3.6
// lists transient_nonexcl_queues as permitted_by_default (measured), and
// the library's transient queues declare on 4.3.6. The 541 refusal the
// 4.3.5 source gives (rabbit_amqqueue:declare/7,
// is_queue_args_combination_permitted/2) is no profile's.
func TestTransientNonExclusivePermitted43(t *testing.T) {
	for _, v := range []sim.Version{sim.V4_2, sim.V4_3} {
		e := newEnvOn(t, v)
		e.declare("d", sim.QueueOptions{Durable: true})
		e.declare("x", sim.QueueOptions{Exclusive: true})
		e.declare("t", sim.QueueOptions{AutoDelete: true})
		if e.conn.Err() != nil || !e.exists("t") {
			t.Errorf("%v: transient queue t: exists=%t, connection %v", v, e.exists("t"), e.conn.Err())
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

// 4.3 denies global_qos: basic.qos global=true is taken as global=false,
// so it sets the per-consumer prefetch and a quorum consume succeeds
// (RS@v4.3.5 rabbit_channel:handle_method(#'basic.qos'),
// is_global_qos_permitted/0). On 4.2 the limit is channel-wide.
func TestGlobalQosPerConsumer43(t *testing.T) {
	for _, tc := range []struct {
		v    sim.Version
		a, b int // deliveries to each of two consumers
	}{{sim.V4_2, 1, 1}, {sim.V4_3, 2, 2}} {
		e := newEnvOn(t, tc.v)
		e.declare("q", sim.QueueOptions{Durable: true})
		e.qos(e.ch, 2, true)
		a := e.consume(e.ch, "q", "A", sim.ConsumeOptions{})
		b := e.consume(e.ch, "q", "B", sim.ConsumeOptions{})
		e.publish("q", msgs(6)...)
		if na, nb := len(a.Deliveries()), len(b.Deliveries()); na != tc.a || nb != tc.b {
			t.Errorf("%v: deliveries %d and %d, want %d and %d", tc.v, na, nb, tc.a, tc.b)
		}
	}
	e := newEnvOn(t, sim.V4_3)
	e.declare("qq", quorumQueue)
	e.qos(e.ch, 2, true)
	e.consume(e.ch, "qq", "A", sim.ConsumeOptions{})
}

// 4.3 tells basic.reject from basic.nack on a quorum queue: nack with
// requeue is a plain return (acquired_count only), reject with requeue a
// failed delivery (delivery_count too), and the limit is compared with
// delivery_count; x-delivery-count shows delivery_count and
// x-acquired-count the returns (RS@v4.3.5 rabbit_channel:
// handle_method(#'basic.reject'|#'basic.nack'), rabbit_fifo:return_one;
// semantics doc §3, §11). Up to 4.2 both count.
func TestRejectNackDiffer43(t *testing.T) {
	for _, tc := range []struct {
		v         sim.Version
		nack      bool
		delivered int
	}{
		{sim.V4_2, true, 3}, {sim.V4_2, false, 3},
		{sim.V4_3, true, 100}, {sim.V4_3, false, 3},
	} {
		e := newEnvOn(t, tc.v)
		e.declare("q", sim.QueueOptions{Durable: true, Args: sim.Table{"x-queue-type": "quorum", "x-delivery-limit": int64(2)}})
		e.publish("q", "m1")
		if n := requeueUntilGone(e, "q", tc.nack); n != tc.delivered {
			t.Errorf("%v nack=%t: delivered %d times, want %d", tc.v, tc.nack, n, tc.delivered)
		}
	}
	e := newEnvOn(t, sim.V4_3)
	e.declare("q", quorumQueue)
	e.publish("q", "m1")
	for range 3 {
		d, _, err := e.ch.Get("q", false)
		e.must(err)
		e.must(e.ch.Nack(d.DeliveryTag, false, true))
	}
	d, _, err := e.ch.Get("q", false)
	e.must(err)
	e.must(e.ch.Reject(d.DeliveryTag, true))
	d, _, err = e.ch.Get("q", false)
	e.must(err)
	if d.Headers["x-delivery-count"] != int64(1) || d.Headers["x-acquired-count"] != int64(4) || !d.Redelivered {
		t.Errorf("4.3 headers after 3 nacks and a reject: %v redelivered=%t", d.Headers, d.Redelivered)
	}
}

// x-queue-version: 1 and 2 up to 4.2 (declare-queue-version.txt on
// 3.10.8), only 2 in 4.3 (RS@v4.3.5 rabbit_amqqueue:check_queue_version/2).
func TestQueueVersion43(t *testing.T) {
	e := newEnvOn(t, sim.V4_2)
	e.declare("q1", sim.QueueOptions{Durable: true, Args: sim.Table{"x-queue-version": int64(1)}})
	e = newEnvOn(t, sim.V4_3)
	e.declare("q2", sim.QueueOptions{Durable: true, Args: sim.Table{"x-queue-version": int64(2)}})
	_, err := e.ch.QueueDeclare("q1", sim.QueueOptions{Durable: true, Args: sim.Table{"x-queue-version": int64(1)}})
	wantErr(t, err, 406, `PRECONDITION_FAILED - invalid arg 'x-queue-version' for queue 'q1' in vhost '/': "unsupported queue version '1'"`, protocol.QueueDeclare)
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
