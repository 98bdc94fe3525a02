package sim_test

import (
	"strings"
	"testing"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// Each consumer-side error of the semantics page's section 10 has RabbitMQ's code, text, method ids and scope.
func TestErrorTable(t *testing.T) {
	locked := "RESOURCE_LOCKED - cannot obtain exclusive access to locked queue 'x' in vhost '/'. It could be originally declared on another connection or the exclusive property value does not match that of the original declaration."
	tests := []struct {
		name   string
		op     func(e *env) error
		code   int
		text   string
		method protocol.Method
	}{
		{"unknown delivery tag", func(e *env) error { return e.ch.Ack(7, false) },
			406, "PRECONDITION_FAILED - unknown delivery tag 7", protocol.Method{Class: 60, ID: 80}},
		{"consume missing queue", func(e *env) error { _, err := e.ch.Consume("nope", sim.ConsumeOptions{}); return err },
			404, "NOT_FOUND - no queue 'nope' in vhost '/'", protocol.Method{Class: 60, ID: 20}},
		{"get missing queue", func(e *env) error { _, _, err := e.ch.Get("nope", false); return err },
			404, "NOT_FOUND - no queue 'nope' in vhost '/'", protocol.Method{Class: 60, ID: 70}},
		{"purge missing queue", func(e *env) error { _, err := e.ch.QueuePurge("nope"); return err },
			404, "NOT_FOUND - no queue 'nope' in vhost '/'", protocol.Method{Class: 50, ID: 30}},
		{"passive declare missing queue", func(e *env) error { _, err := e.ch.QueueDeclare("nope", sim.QueueOptions{Passive: true}); return err },
			404, "NOT_FOUND - no queue 'nope' in vhost '/'", protocol.Method{Class: 50, ID: 10}},
		{"empty name, none declared", func(e *env) error {
			e.ch = e.channel(e.conn)
			_, err := e.ch.QueuePurge("")
			return err
		},
			404, "NOT_FOUND - no previously declared queue", protocol.QueuePurge},
		{"exclusive queue of another connection", func(e *env) error { _, err := e.ch.QueuePurge("x"); return err },
			405, locked, protocol.QueuePurge},
		{"consume beside an exclusive consumer", func(e *env) error { _, err := e.ch.Consume("q", sim.ConsumeOptions{}); return err },
			403, "ACCESS_REFUSED - queue 'q' in vhost '/' in exclusive use", protocol.BasicConsume},
		{"consumer tag reuse", func(e *env) error {
			e.consume(e.ch, "x2", "t", sim.ConsumeOptions{})
			_, err := e.ch.Consume("x2", sim.ConsumeOptions{Tag: "t"})
			return err
		}, 530, "NOT_ALLOWED - attempt to reuse consumer tag 't'", protocol.BasicConsume},
		{"prefetch_size", func(e *env) error { return e.ch.Qos(0, 7, true) },
			540, "NOT_IMPLEMENTED - prefetch_size!=0 (7)", protocol.BasicQos},
		{"recover requeue=false", func(e *env) error { return e.ch.Recover(false) },
			540, "NOT_IMPLEMENTED - requeue=false", protocol.Method{Class: 60, ID: 110}},
		{"flow active=false", func(e *env) error { return e.ch.Flow(false) },
			540, "NOT_IMPLEMENTED - active=false", protocol.Method{Class: 20, ID: 20}},
		{"publish immediate", func(e *env) error { return e.ch.Publish("", "q", sim.PublishOptions{Immediate: true}, sim.Message{}) },
			540, "NOT_IMPLEMENTED - immediate=true", protocol.BasicPublish},
		{"x-priority not an integer", func(e *env) error {
			_, err := e.ch.Consume("x2", sim.ConsumeOptions{Args: sim.Table{"x-priority": "1"}})
			return err
		}, 406, `PRECONDITION_FAILED - invalid arg 'x-priority' for queue 'x2' in vhost '/': "expected integer, got longstr"`, protocol.BasicConsume},
		{"delete if-unused", func(e *env) error {
			_, err := e.ch.QueueDelete("q", sim.QueueDeleteOptions{IfUnused: true})
			return err
		},
			406, "PRECONDITION_FAILED - queue 'q' in vhost '/' in use", protocol.Method{Class: 50, ID: 40}},
		{"delete if-empty", func(e *env) error { _, err := e.ch.QueueDelete("q", sim.QueueDeleteOptions{IfEmpty: true}); return err },
			406, "PRECONDITION_FAILED - queue 'q' in vhost '/' not empty", protocol.QueueDelete},
		{"second channel.open", func(e *env) error { _, err := e.conn.OpenChannel(e.ch.ID()); return err },
			504, "CHANNEL_ERROR - second 'channel.open' seen", protocol.Method{Class: 20, ID: 10}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.declare("q", sim.QueueOptions{})
			e.declare("x2", sim.QueueOptions{})
			chX := e.channel(e.conn)
			e.qos(chX, 1, false)
			e.consume(chX, "q", "excl", sim.ConsumeOptions{Exclusive: true})
			e.publish("q", "m1", "m2") // m1 held by the exclusive consumer, m2 ready
			other := e.b.Connect("other")
			if _, err := e.channel(other).QueueDeclare("x", sim.QueueOptions{Exclusive: true}); err != nil {
				t.Fatal(err)
			}
			err := tt.op(e)
			wantErr(t, err, tt.code, tt.text, tt.method)
			hard := protocol.IsHard(tt.code)
			wantClosed(t, e.ch.Err(), asError(err))
			if gotHard := e.conn.Err() != nil; gotHard != hard {
				t.Errorf("connection closed = %t, want %t", gotHard, hard)
			}
			if other.Err() != nil {
				t.Errorf("another connection closed: %v", other.Err())
			}
		})
	}
}

// 403-406 (and 311-313) are soft (channel) errors; 320, 402, 501-506, 530, 540, 541 are hard (connection).
func TestErrorScopeByCode(t *testing.T) {
	hard := map[int]bool{}
	for _, c := range []int{320, 402, 501, 502, 503, 504, 505, 506, 530, 540, 541} {
		hard[c] = true
	}
	for _, c := range []int{311, 312, 313, 320, 402, 403, 404, 405, 406, 501, 502, 503, 504, 505, 506, 530, 540, 541} {
		if got := protocol.IsHard(c); got != hard[c] {
			t.Errorf("IsHard(%d) = %t, want %t", c, got, hard[c])
		}
	}
}

// Reply texts are "<NAME> - <explanation>", cut to 252 bytes plus "..." when longer than 255.
func TestErrorTextTruncatedAt255(t *testing.T) {
	e := newEnv(t)
	name := strings.Repeat("n", 250)
	_, err := e.ch.Consume(name, sim.ConsumeOptions{})
	full := "NOT_FOUND - no queue '" + name + "' in vhost '/'"
	wantErr(t, err, 404, full[:252]+"...", protocol.BasicConsume)
	if n := len(asError(err).Text); n != 255 {
		t.Errorf("text length %d, want 255", n)
	}
}

// Cancelling an unknown consumer tag is not an error.
func TestErrorNoneForCancelOfUnknownTag(t *testing.T) {
	e := newEnv(t)
	e.must(e.ch.Cancel("ghost"))
	e.must(e.ch.Cancel(""))
}
