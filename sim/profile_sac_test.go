package sim_test

import (
	"testing"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// The 4.0 changes to quorum single active consumer queues and to
// basic.consume. The priority rules are recorded on 3.10.8, 4.0.5 and
// 4.3.6 (quorum-sac-priority.txt, quorum-single-active-consumer.txt);
// what stays follows the rabbitmq-server source cited on each test.

var quorumSAC = sim.QueueOptions{Durable: true, Args: sim.Table{"x-queue-type": "quorum", "x-single-active-consumer": true}}

// unread reads the bodies of every unread delivery of c.
func unread(c *sim.Consumer) []string {
	out := []string{}
	for _, d := range c.Deliveries() {
		out = append(out, string(d.Body))
	}
	return out
}

func prio(p int) sim.ConsumeOptions {
	return sim.ConsumeOptions{Args: sim.Table{"x-priority": int64(p)}}
}

// 4.2+ refuses basic.get on a quorum single active consumer queue with the
// 405 of 3.10 but another text (quorum-single-active-consumer.txt: 4.3.6
// writes it, 4.0.5 still 3.10's, so the change came after 4.0;
// queue.Rules.SACGetNamesQueueType places it in 4.2): the channel prints the
// queue type, rabbit_queue_type:short_alias_of/1 (a
// binary by its spec), with ~p, so <<"quorum">>. Source:
// rabbit_channel:unsupported_single_active_consumer_error/1, and
// handle_method(#'basic.get'{}) matching {error, {unsupported,
// single_active_consumer}}, which rabbit_fifo:apply/3 returns for a
// dequeue under single_active. Verified: both functions in a stored 4.x
// rabbit_channel.erl (the one with the channel-level consumer timeout
// and the global_qos deprecation, so 4.0–4.2) and rabbit_queue_type.erl;
// not verified: that v4.0.9 itself has this function (the index holds no
// file at that tag), nor the registry's value for quorum (assumed
// <<"quorum">>, the alias x-queue-type takes: queue types register binary
// names, as rabbit_registry:register(queue, <<"qos0">>, ...) does in the
// MQTT suites). On the 3.10.8 broker here, io_lib:format("~p",
// [<<"quorum">>]) gives <<"quorum">>; its registry has no queue types.
func TestQuorumSACGetText42(t *testing.T) {
	for v, want := range map[sim.Version]string{
		sim.V3_10: "RESOURCE_LOCKED - cannot obtain access to locked queue 'q' in vhost '/'. basic.get operations are not supported by quorum queues with single active consumer",
		sim.V4_0:  "RESOURCE_LOCKED - cannot obtain access to locked queue 'q' in vhost '/'. basic.get operations are not supported by quorum queues with single active consumer",
		sim.V4_2:  "RESOURCE_LOCKED - cannot obtain access to locked queue 'q' in vhost '/'. basic.get operations are not supported by <<\"quorum\">> queues with single active consumer",
		sim.V4_3:  "RESOURCE_LOCKED - cannot obtain access to locked queue 'q' in vhost '/'. basic.get operations are not supported by <<\"quorum\">> queues with single active consumer",
	} {
		e := newEnvOn(t, v)
		e.declare("q", quorumSAC)
		_, _, err := e.ch.Get("q", false)
		wantErr(t, err, 405, want, protocol.BasicGet)
	}
}

// consumer_max_per_channel (4.0+): a basic.consume with a new tag on a
// channel that has N consumers closes the connection with 530, before
// the queue is looked up; a reused tag still gets its own 530; cancelled
// consumers no longer count, and the reply-to pseudo queue is limited but
// not counted. Source: rabbit_channel:handle_method(#'basic.consume'{})
// (both clauses), CurrentConsumers = maps:size(ConsumerMapping), error
// when CurrentConsumers >= MaxConsumers, "reached maximum (~B) of
// consumers per channel"; #conf.max_consumers "taken from
// rabbit.consumer_max_per_channel". Verified: those lines in a stored 4.x
// rabbit_channel.erl; not verified: the v4.0.9 tag itself (the semantics
// doc's §10 and release-notes/4.0.1.md place it in 4.0).
func TestConsumerMaxPerChannel40(t *testing.T) {
	e := newEnvConfig(t, sim.Config{Version: sim.V4_0, ConsumerMaxPerChannel: 2})
	e.declare("q", sim.QueueOptions{})
	e.consume(e.ch, "q", "a", sim.ConsumeOptions{})
	e.consume(e.ch, "q", "b", sim.ConsumeOptions{})
	// Another channel has its own count.
	e.consume(e.channel(e.conn), "q", "c", sim.ConsumeOptions{})
	_, err := e.ch.Consume("q", sim.ConsumeOptions{Tag: "a"})
	wantErr(t, err, 530, "NOT_ALLOWED - attempt to reuse consumer tag 'a'", protocol.BasicConsume)

	e = newEnvConfig(t, sim.Config{Version: sim.V4_0, ConsumerMaxPerChannel: 2})
	e.declare("q", sim.QueueOptions{})
	e.consume(e.ch, "q", "a", sim.ConsumeOptions{})
	e.consume(e.ch, "q", "b", sim.ConsumeOptions{})
	e.must(e.ch.Cancel("a"))
	e.consume(e.ch, sim.ReplyTo, "r", sim.ConsumeOptions{NoAck: true})
	e.consume(e.ch, "q", "c", sim.ConsumeOptions{})
	_, err = e.ch.Consume("missing", sim.ConsumeOptions{})
	wantErr(t, err, 530, "NOT_ALLOWED - reached maximum (2) of consumers per channel", protocol.BasicConsume)

	// No limit by default.
	e = newEnvOn(t, sim.V4_0)
	e.declare("q", sim.QueueOptions{})
	for _, tag := range []string{"a", "b", "c", "d"} {
		e.consume(e.ch, "q", tag, sim.ConsumeOptions{})
	}
}

// 3.10 has no consumer_max_per_channel (its rabbitmq.conf schema does not
// know the key): a Config that sets it is refused, as is a negative one.
func TestConsumerMaxPerChannelConfig(t *testing.T) {
	for _, cfg := range []sim.Config{{Version: sim.V3_10, ConsumerMaxPerChannel: 1}, {Version: sim.V3_13, ConsumerMaxPerChannel: 1},
		{Version: sim.V4_0, ConsumerMaxPerChannel: -1}} {
		if _, err := sim.Open(cfg); err == nil {
			t.Errorf("Open(%v, ConsumerMaxPerChannel %d) = nil error", cfg.Version, cfg.ConsumerMaxPerChannel)
		}
	}
	if _, err := sim.Open(sim.Config{Version: sim.V4_3, ConsumerMaxPerChannel: 1}); err != nil {
		t.Error(err)
	}
}

// 4.0: the quiescing consumer also hands over when it gives its last
// message back (nack with requeue) or its channel closes; the message
// goes to the new active consumer, redelivered. Source as above: return/8
// and handle_down/3 run update_or_remove_con/4 or cancel_consumer/5, then
// activate_next_consumer/2 (after a return only from machine version 7,
// the stored source). Unlike RabbitMQ 4.0.5: recorded there, the nack
// hands nothing over (4.3.6 does hand over); the channel close does on
// both (quorum-sac-priority.txt).
func TestQuorumSACHandOverOnReturn40(t *testing.T) {
	for _, closeChannel := range []bool{false, true} {
		e := newEnvOn(t, sim.V4_0)
		e.declare("q", quorumSAC)
		ch1 := e.channel(e.conn)
		e.consume(ch1, "q", "A", sim.ConsumeOptions{})
		e.publish("q", "m1")
		b := e.consume(e.ch, "q", "B", prio(10))
		diff(t, "B while A holds m1", []string{}, unread(b))
		if closeChannel {
			e.must(ch1.Close())
		} else {
			e.must(ch1.Nack(1, false, true))
		}
		got := brief(b.Deliveries())
		diff(t, "B after A gave m1 back", []dv{{1, "m1", true}}, got)
	}
}
