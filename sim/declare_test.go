package sim_test

import (
	"regexp"
	"testing"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

const lockedText = "RESOURCE_LOCKED - cannot obtain exclusive access to locked queue 'q' in vhost '/'. It could be originally declared on another connection or the exclusive property value does not match that of the original declaration."

// A passive declare of a missing queue is 404; of an existing one it returns its counts.
func TestDeclarePassive(t *testing.T) {
	e := newEnv(t)
	_, err := e.ch.QueueDeclare("q", sim.QueueOptions{Passive: true})
	wantErr(t, err, 404, "NOT_FOUND - no queue 'q' in vhost '/'", protocol.Method{Class: 50, ID: 10})
	ch := e.channel(e.conn)
	if _, err := ch.QueueDeclare("q", sim.QueueOptions{Durable: true}); err != nil {
		t.Fatal(err)
	}
	e.ch = ch
	e.publish("q", "m1")
	// A passive declare does not check durable or arguments.
	info, err := ch.QueueDeclare("q", sim.QueueOptions{Passive: true})
	e.must(err)
	diff(t, "info", sim.QueueInfo{Name: "q", Ready: 1}, info)
}

// Redeclaring with other flags or arguments is 406 inequivalent arg (texts checked against RabbitMQ 3.10.8).
func TestDeclareInequivalent(t *testing.T) {
	tests := []struct {
		name      string
		first, re sim.QueueOptions
		text      string
	}{
		{"durable", sim.QueueOptions{}, sim.QueueOptions{Durable: true},
			"PRECONDITION_FAILED - inequivalent arg 'durable' for queue 'q' in vhost '/': received 'true' but current is 'false'"},
		{"auto_delete", sim.QueueOptions{}, sim.QueueOptions{AutoDelete: true},
			"PRECONDITION_FAILED - inequivalent arg 'auto_delete' for queue 'q' in vhost '/': received 'true' but current is 'false'"},
		{"both set, other value", sim.QueueOptions{Args: sim.Table{"x-max-priority": int32(10)}}, sim.QueueOptions{Args: sim.Table{"x-max-priority": int32(5)}},
			"PRECONDITION_FAILED - inequivalent arg 'x-max-priority' for queue 'q' in vhost '/': received '5' but current is '10'"},
		{"both set, other type class", sim.QueueOptions{Args: sim.Table{"x-max-priority": int32(10)}}, sim.QueueOptions{Args: sim.Table{"x-max-priority": "10"}},
			"PRECONDITION_FAILED - inequivalent arg 'x-max-priority' for queue 'q' in vhost '/': received '10' but current is '10'"},
		{"string value", sim.QueueOptions{Args: sim.Table{"x-queue-mode": "lazy"}}, sim.QueueOptions{Args: sim.Table{"x-queue-mode": "default"}},
			"PRECONDITION_FAILED - inequivalent arg 'x-queue-mode' for queue 'q' in vhost '/': received 'default' but current is 'lazy'"},
		{"bool value", sim.QueueOptions{Args: sim.Table{"x-single-active-consumer": true}}, sim.QueueOptions{Args: sim.Table{"x-single-active-consumer": false}},
			"PRECONDITION_FAILED - inequivalent arg 'x-single-active-consumer' for queue 'q' in vhost '/': received 'false' but current is 'true'"},
		{"missing now", sim.QueueOptions{Args: sim.Table{"x-single-active-consumer": true}}, sim.QueueOptions{},
			"PRECONDITION_FAILED - inequivalent arg 'x-single-active-consumer' for queue 'q' in vhost '/': received none but current is the value 'true' of type 'bool'"},
		{"missing before", sim.QueueOptions{}, sim.QueueOptions{Args: sim.Table{"x-single-active-consumer": true}},
			"PRECONDITION_FAILED - inequivalent arg 'x-single-active-consumer' for queue 'q' in vhost '/': received the value 'true' of type 'bool' but current is none"},
		{"int missing now", sim.QueueOptions{Args: sim.Table{"x-max-priority": int32(10)}}, sim.QueueOptions{},
			"PRECONDITION_FAILED - inequivalent arg 'x-max-priority' for queue 'q' in vhost '/': received none but current is the value '10' of type 'signedint'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.declare("q", tt.first)
			_, err := e.ch.QueueDeclare("q", tt.re)
			wantErr(t, err, 406, tt.text, protocol.QueueDeclare)
		})
	}
}

// Integer arguments compare by value across integer types; unchecked arguments are not compared (checked against RabbitMQ 3.10.8).
func TestDeclareEquivalentAcrossIntegerTypes(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{Args: sim.Table{"x-max-priority": int32(10)}})
	for _, v := range []any{int64(10), int16(10), uint8(10), 10} {
		if _, err := e.ch.QueueDeclare("q", sim.QueueOptions{Args: sim.Table{"x-max-priority": v}}); err != nil {
			t.Fatalf("%T(10): %v", v, err)
		}
	}
	info, err := e.ch.QueueDeclare("q", sim.QueueOptions{Args: sim.Table{"x-max-priority": int32(10), "x-foo": "bar"}})
	e.must(err)
	diff(t, "info", sim.QueueInfo{Name: "q"}, info)
}

// A queue exclusive to one connection is 405 RESOURCE_LOCKED for every other connection.
func TestDeclareExclusiveLockedForOtherConnections(t *testing.T) {
	ops := map[string]func(ch *sim.Channel) error{
		"declare": func(ch *sim.Channel) error {
			_, err := ch.QueueDeclare("q", sim.QueueOptions{Exclusive: true})
			return err
		},
		"passive declare": func(ch *sim.Channel) error {
			_, err := ch.QueueDeclare("q", sim.QueueOptions{Passive: true})
			return err
		},
		"consume": func(ch *sim.Channel) error { _, err := ch.Consume("q", sim.ConsumeOptions{}); return err },
		"get":     func(ch *sim.Channel) error { _, _, err := ch.Get("q", false); return err },
		"purge":   func(ch *sim.Channel) error { _, err := ch.QueuePurge("q"); return err },
		"delete":  func(ch *sim.Channel) error { _, err := ch.QueueDelete("q", sim.QueueDeleteOptions{}); return err },
	}
	methods := map[string]protocol.Method{"declare": protocol.QueueDeclare, "passive declare": protocol.QueueDeclare,
		"consume": protocol.BasicConsume, "get": protocol.BasicGet, "purge": protocol.QueuePurge, "delete": protocol.QueueDelete}
	for name, op := range ops {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			e.declare("q", sim.QueueOptions{Exclusive: true})
			other := e.channel(e.b.Connect("other"))
			wantErr(t, op(other), 405, lockedText, methods[name])
			if !e.exists("q") {
				t.Error("queue gone")
			}
		})
	}
}

// On its own connection, redeclaring with the other exclusive flag is 405 too (strict owner match).
func TestDeclareExclusiveFlagMismatchIsLocked(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{})
	_, err := e.ch.QueueDeclare("q", sim.QueueOptions{Exclusive: true})
	wantErr(t, err, 405, lockedText, protocol.QueueDeclare)
	ch := e.channel(e.conn)
	if _, err := ch.QueueDeclare("x", sim.QueueOptions{Exclusive: true}); err != nil {
		t.Fatal(err)
	}
	_, err = ch.QueueDeclare("x", sim.QueueOptions{})
	wantErr(t, err, 405, "RESOURCE_LOCKED - cannot obtain exclusive access to locked queue 'x' in vhost '/'. It could be originally declared on another connection or the exclusive property value does not match that of the original declaration.", protocol.QueueDeclare)
}

// An exclusive queue is deleted when its owning connection closes.
func TestDeclareExclusiveQueueDeletedWhenOwnerCloses(t *testing.T) {
	e := newEnv(t)
	owner := e.b.Connect("owner")
	ch := e.channel(owner)
	if _, err := ch.QueueDeclare("q", sim.QueueOptions{Exclusive: true}); err != nil {
		t.Fatal(err)
	}
	e.must(ch.Close())
	if !e.exists("q") {
		t.Fatal("closing a channel deleted the exclusive queue")
	}
	e.must(owner.Close())
	if e.exists("q") {
		t.Fatal("exclusive queue survived its connection")
	}
	e.declare("q", sim.QueueOptions{})
}

// An exclusive queue is never durable: a redeclare with durable=false is equivalent (checked against RabbitMQ 3.10.8).
func TestDeclareExclusiveQueueIsNeverDurable(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{Exclusive: true, Durable: true})
	e.declare("q", sim.QueueOptions{Exclusive: true})
	e.declare("q", sim.QueueOptions{Exclusive: true, Durable: true})
}

// An auto-delete queue goes when its last consumer is cancelled, not before it ever had one, not while others remain.
func TestDeclareAutoDeleteDeletedWhenLastConsumerCancels(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{AutoDelete: true})
	e.publish("q", "m1")
	if !e.exists("q") {
		t.Fatal("deleted before it had a consumer")
	}
	e.consume(e.ch, "q", "a", sim.ConsumeOptions{})
	e.consume(e.ch, "q", "b", sim.ConsumeOptions{})
	e.must(e.ch.Cancel("a"))
	if !e.exists("q") {
		t.Fatal("deleted while a consumer remained")
	}
	e.must(e.ch.Cancel("b"))
	if e.exists("q") {
		t.Fatal("survived its last consumer")
	}
	e.must(e.ch.Ack(1, false)) // its unacked delivery vanished with it; the ack is ignored
}

// An auto-delete queue also goes when the channel of its last consumer closes.
func TestDeclareAutoDeleteDeletedWhenLastConsumerChannelCloses(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{AutoDelete: true})
	ch := e.channel(e.conn)
	e.consume(ch, "q", "c", sim.ConsumeOptions{})
	e.must(ch.Close())
	if e.exists("q") {
		t.Fatal("survived its last consumer's channel")
	}
}

// An empty name makes the broker generate "amq.gen-" and 22 base64url characters.
func TestDeclareServerNamed(t *testing.T) {
	e := newEnv(t)
	info, err := e.ch.QueueDeclare("", sim.QueueOptions{Exclusive: true})
	e.must(err)
	if !regexp.MustCompile(`^amq\.gen-[A-Za-z0-9_-]{22}$`).MatchString(info.Name) {
		t.Errorf("name %q", info.Name)
	}
	if !e.exists(info.Name) {
		t.Error("generated queue missing")
	}
	// By name it is passive-declarable, but a non-passive redeclare hits the reserved prefix (checked against RabbitMQ 3.10.8).
	if _, err := e.ch.QueueDeclare(info.Name, sim.QueueOptions{Passive: true}); err != nil {
		t.Fatal(err)
	}
	_, err = e.ch.QueueDeclare(info.Name, sim.QueueOptions{Exclusive: true})
	wantErr(t, err, 403, "ACCESS_REFUSED - queue name '"+info.Name+"' contains reserved prefix 'amq.*'", protocol.QueueDeclare)
}

// Client names starting "amq." are reserved: 403 ACCESS_REFUSED (text checked against RabbitMQ 3.10.8).
func TestDeclareAmqPrefixReserved(t *testing.T) {
	e := newEnv(t)
	_, err := e.ch.QueueDeclare("amq.mine", sim.QueueOptions{})
	wantErr(t, err, 403, "ACCESS_REFUSED - queue name 'amq.mine' contains reserved prefix 'amq.*'", protocol.QueueDeclare)
}

// Arguments are validated at declaration; quorum/stream-only ones are refused on a classic queue after that (texts checked against RabbitMQ 3.10.8).
func TestDeclareArgumentValidation(t *testing.T) {
	const pre = "PRECONDITION_FAILED - invalid arg "
	tests := []struct {
		args sim.Table
		text string
	}{
		{sim.Table{"x-max-priority": int32(256)}, pre + "'x-max-priority' for queue 'q' in vhost '/': {max_value_exceeded,256}"},
		{sim.Table{"x-max-priority": int32(-1)}, pre + "'x-max-priority' for queue 'q' in vhost '/': {value_negative,-1}"},
		{sim.Table{"x-max-priority": "x"}, pre + `'x-max-priority' for queue 'q' in vhost '/': "expected integer, got longstr"`},
		{sim.Table{"x-single-active-consumer": "yes"}, pre + "'x-single-active-consumer' for queue 'q' in vhost '/': {unacceptable_type,longstr}"},
		{sim.Table{"x-delivery-limit": int32(5)}, pre + "'x-delivery-limit' for queue 'q' in vhost '/' of queue type rabbit_classic_queue"},
		{sim.Table{"x-initial-cluster-size": int32(0)}, pre + "'x-initial-cluster-size' for queue 'q' in vhost '/' of queue type rabbit_classic_queue"},
		{sim.Table{"x-max-priority": int32(300), "x-max-age": "1D"}, pre + "'x-max-priority' for queue 'q' in vhost '/': {max_value_exceeded,300}"},
	}
	for _, tt := range tests {
		t.Run(tt.text[len(pre):], func(t *testing.T) {
			e := newEnv(t)
			_, err := e.ch.QueueDeclare("q", sim.QueueOptions{Args: tt.args})
			wantErr(t, err, 406, tt.text, protocol.QueueDeclare)
		})
	}
	e := newEnv(t)
	e.declare("ok", sim.QueueOptions{Args: sim.Table{"x-max-priority": uint8(255), "x-single-active-consumer": false}})
}

// declare-ok counts ready messages only, and every consumer, blocked ones included; cancelled ones are excluded.
func TestDeclareOkCounts(t *testing.T) {
	e := newEnv(t)
	info, err := e.ch.QueueDeclare("q", sim.QueueOptions{})
	e.must(err)
	diff(t, "new queue", sim.QueueInfo{Name: "q"}, info)
	e.qos(e.ch, 1, false)
	e.consume(e.ch, "q", "a", sim.ConsumeOptions{})
	e.consume(e.ch, "q", "b", sim.ConsumeOptions{})
	e.consume(e.ch, "q", "gone", sim.ConsumeOptions{})
	e.must(e.ch.Cancel("gone"))
	e.publish("q", msgs(5)...)
	info, err = e.ch.QueueDeclare("q", sim.QueueOptions{})
	e.must(err)
	diff(t, "declare-ok", sim.QueueInfo{Name: "q", Ready: 3, Consumers: 2}, info)
}

// queue.purge removes ready messages only; unacked ones stay and can come back.
func TestPurgeRemovesReadyOnly(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{})
	e.publish("q", msgs(4)...)
	e.ch.Get("q", false)
	n, err := e.ch.QueuePurge("q")
	e.must(err)
	if n != 3 {
		t.Errorf("purged %d, want 3", n)
	}
	diff(t, "after purge", sim.QueueStats{Vhost: "/", Name: "q", Unacked: 1}, e.stats("q"))
	e.must(e.ch.Nack(1, false, true))
	diff(t, "requeued", []string{"m1"}, e.ready("q"))
}

// queue.delete checks if-empty before if-unused; unacked messages count for neither; delete-ok counts ready ones.
func TestQueueDeleteConditions(t *testing.T) {
	tests := []struct {
		name           string
		ready, unacked int
		consumer       bool
		o              sim.QueueDeleteOptions
		text           string
		count          int
	}{
		{"if-empty with ready", 1, 0, false, sim.QueueDeleteOptions{IfEmpty: true}, "PRECONDITION_FAILED - queue 'q' in vhost '/' not empty", 0},
		{"if-empty before if-unused", 1, 0, true, sim.QueueDeleteOptions{IfEmpty: true, IfUnused: true}, "PRECONDITION_FAILED - queue 'q' in vhost '/' not empty", 0},
		{"if-unused with consumer", 0, 0, true, sim.QueueDeleteOptions{IfUnused: true}, "PRECONDITION_FAILED - queue 'q' in vhost '/' in use", 0},
		{"unacked only is empty and unused", 0, 2, false, sim.QueueDeleteOptions{IfEmpty: true, IfUnused: true}, "", 0},
		{"count is ready only", 3, 2, false, sim.QueueDeleteOptions{}, "", 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.declare("q", sim.QueueOptions{})
			if tt.consumer { // a consumer with a full window of one
				ch := e.channel(e.conn)
				e.qos(ch, 1, false)
				e.consume(ch, "q", "c", sim.ConsumeOptions{})
				e.publish("q", "held")
			}
			e.publish("q", msgs(tt.unacked+tt.ready)...)
			for i := 0; i < tt.unacked; i++ {
				e.ch.Get("q", false)
			}
			n, err := e.ch.QueueDelete("q", tt.o)
			if tt.text != "" {
				wantErr(t, err, 406, tt.text, protocol.QueueDelete)
				return
			}
			e.must(err)
			if n != tt.count || e.exists("q") {
				t.Errorf("deleted %d (want %d), exists=%t", n, tt.count, e.exists("q"))
			}
		})
	}
}

// Deleting a missing queue is not an error: delete-ok with 0.
func TestQueueDeleteMissingIsOK(t *testing.T) {
	e := newEnv(t)
	n, err := e.ch.QueueDelete("missing", sim.QueueDeleteOptions{IfEmpty: true, IfUnused: true})
	if n != 0 || err != nil {
		t.Errorf("n=%d err=%v", n, err)
	}
}

// An auto-delete queue that never had a consumer survives the close of the
// channel that declared it and got from it: only losing its last consumer
// deletes it.
func TestDeclareAutoDeleteWithoutConsumerSurvivesChannelClose(t *testing.T) {
	e := newEnv(t)
	ch := e.channel(e.conn)
	if _, err := ch.QueueDeclare("q", sim.QueueOptions{AutoDelete: true}); err != nil {
		t.Fatal(err)
	}
	e.publish("q", "m1", "m2")
	if _, ok, err := ch.Get("q", false); !ok || err != nil {
		t.Fatalf("get: %t %v", ok, err)
	}
	e.must(ch.Close())
	if !e.exists("q") {
		t.Fatal("an auto-delete queue that never had a consumer was deleted with a channel")
	}
	diff(t, "ready", []string{"m1", "m2"}, e.ready("q"))
}
