package sim_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/amqpsim/amqpsim/sim"
)

// QueueStats shows messages_ready, messages_unacknowledged, consumers (blocked included) and ready bytes, like the management API.
func TestQueueStats(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{})
	e.qos(e.ch, 1, false)
	e.consume(e.ch, "q", "a", sim.ConsumeOptions{})
	e.consume(e.ch, "q", "b", sim.ConsumeOptions{})
	e.publish("q", "one", "two", "three", "four")
	diff(t, "stats", sim.QueueStats{Vhost: "/", Name: "q", Ready: 2, Unacked: 2, Consumers: 2, Bytes: 9}, e.stats("q"))
	if _, err := e.b.QueueStats("/", "missing"); err == nil {
		t.Error("stats of a missing queue")
	}
	e.declare("a", sim.QueueOptions{})
	var names []string
	for _, s := range e.b.Queues() {
		names = append(names, s.Name)
	}
	diff(t, "queues sorted", []string{"a", "q"}, names)
}

// ChannelStats and ConsumerStats show each window: prefetch, outstanding, blocked, active, and the channel's limiter.
func TestChannelAndConsumerStats(t *testing.T) {
	// 3.10: from 4.3 global_qos is denied and global=true is per consumer
	// (scenarios/testdata/profiles/global-qos-per-consumer.txt).
	e := newEnvOn(t, sim.V3_10)
	e.declare("q", sim.QueueOptions{})
	e.qos(e.ch, 1, false)
	e.consume(e.ch, "q", "a", sim.ConsumeOptions{})
	e.qos(e.ch, 0, false)
	e.consume(e.ch, "q", "b", sim.ConsumeOptions{NoAck: true, Args: sim.Table{"x-priority": int32(-2)}})
	e.qos(e.ch, 5, true)
	e.publish("q", msgs(3)...)
	want := sim.ChannelStats{
		Channel: 1, Prefetch: 0, GlobalLimit: 5, GlobalVolume: 1, Unacked: 1, NextTag: 4,
		Consumers: []sim.ConsumerStats{
			{Tag: "a", Queue: "q", Channel: 1, Prefetch: 1, Outstanding: 1, Blocked: true, Active: true},
			{Tag: "b", Queue: "q", Channel: 1, NoAck: true, Priority: -2, Active: true, Args: sim.Table{"x-priority": int32(-2)}},
		},
	}
	diff(t, "channel stats", want, e.ch.Stats())
}

// The same calls give the same trace, byte for byte, generated names included.
func TestTraceIsDeterministic(t *testing.T) {
	run := func() []string {
		b := sim.New(sim.Config{Seed: 7})
		conn := b.Connect("app")
		ch, _ := conn.Channel()
		info, _ := ch.QueueDeclare("", sim.QueueOptions{Exclusive: true})
		ch.Qos(2, 0, true)
		ch2, _ := conn.Channel()
		ch.QueueDeclare("q2", sim.QueueOptions{})
		ch.Consume(info.Name, sim.ConsumeOptions{})
		ch.Consume("q2", sim.ConsumeOptions{})
		ch2.Consume("q2", sim.ConsumeOptions{})
		for i := 0; i < 6; i++ {
			b.Publish("/", "", info.Name, sim.Message{Body: []byte(fmt.Sprint("a", i))})
			b.Publish("/", "", "q2", sim.Message{Body: []byte(fmt.Sprint("b", i))})
		}
		b.Advance(time.Second)
		ch.Ack(0, true) // releases two queues: RabbitMQ's order is random, ours seeded
		ch2.Nack(0, true, true)
		ch.Ack(99, false)
		conn.Close()
		var out []string
		for _, ev := range b.Trace() {
			out = append(out, ev.String())
		}
		return out
	}
	first, second := run(), run()
	diff(t, "traces", first, second)
	if len(first) < 20 {
		t.Errorf("trace suspiciously short: %d events", len(first))
	}
}

// The trace records client calls, pushes ("->") and broker actions, with the virtual time.
func TestTraceRecordsCallsAndPushes(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{})
	e.consume(e.ch, "q", "c", sim.ConsumeOptions{})
	e.b.Advance(1500 * time.Millisecond)
	e.publish("q", "hi")
	var got []string
	for _, ev := range e.b.Trace() {
		got = append(got, ev.String())
	}
	want := []string{
		`0s app connection.open vhost=/`,
		`0s app/1 channel.open`,
		`0s app/1 queue.declare queue="q" {Passive:false Durable:false Exclusive:false AutoDelete:false Args:map[]}`,
		`0s app/1 basic.consume queue="q" ctag=c {Tag:c NoAck:false Exclusive:false Args:map[]}`,
		`1.5s publish exchange="" key="q" body="hi"`,
		`1.5s app/1 -> basic.deliver queue="q" key="q" ctag=c tag=1 body="hi"`,
	}
	diff(t, "trace", want, got)
}

// Advance moves the virtual clock, and only Advance does; Now starts at Config.Start or Epoch.
func TestAdvanceMovesNow(t *testing.T) {
	b := sim.New(sim.Config{})
	if !b.Now().Equal(sim.Epoch()) {
		t.Errorf("Now = %v, want Epoch", b.Now())
	}
	b.Advance(90 * time.Second)
	b.Advance(-time.Hour) // ignored
	if want := sim.Epoch().Add(90 * time.Second); !b.Now().Equal(want) {
		t.Errorf("Now = %v, want %v", b.Now(), want)
	}
	start := time.Date(2030, 5, 1, 12, 0, 0, 0, time.UTC)
	b2 := sim.New(sim.Config{Start: start})
	b2.Advance(time.Minute)
	if want := start.Add(time.Minute); !b2.Now().Equal(want) {
		t.Errorf("Now = %v, want %v", b2.Now(), want)
	}
}

// NoTrace turns the trace off.
func TestNoTrace(t *testing.T) {
	b := sim.New(sim.Config{NoTrace: true})
	ch, _ := b.Connect("app").Channel()
	ch.QueueDeclare("q", sim.QueueOptions{})
	if tr := b.Trace(); len(tr) != 0 {
		t.Errorf("trace has %d events: %s", len(tr), strings.Join([]string{tr[0].String()}, ""))
	}
}
