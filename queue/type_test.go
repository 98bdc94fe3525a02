package queue_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/amqpsim/amqpsim/consumer"
	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/queue"
)

// typeQueue declares queue "q" of type typ ("" for classic) with extra
// arguments under rules r.
func typeQueue(t *testing.T, typ string, r queue.Rules, extra protocol.Table) queue.Queue[int] {
	t.Helper()
	args := protocol.Table{}
	if typ != "" {
		args["x-queue-type"] = typ
	}
	for k, v := range extra {
		args[k] = v
	}
	q, err := queue.New[int](&env{timers: map[queue.Timer]int64{}}, "/", "q", queue.Options{Durable: true, Args: args, Rules: r})
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// errText is err's reply text and whether it closes the connection, ""
// for nil.
func errText(err error) string {
	if err == nil {
		return ""
	}
	var pe *protocol.Error
	if !errors.As(err, &pe) {
		return "not a protocol error: " + err.Error()
	}
	if pe.Hard {
		return "hard " + pe.Text
	}
	return pe.Text
}

// Each type answers the broker's questions with its own rule and
// RabbitMQ's refusals, the texts the scenario library recorded.
func TestTypesAnswerForTheirRules(t *testing.T) {
	v310, v43 := queue.Rules{}, queue.Rules{StreamQueueTexts: true, StreamAnySettlement: true,
		SACGetNamesQueueType: true, ConsumerTimeoutQuorumOnly: true}
	type answers struct {
		Type                             string
		Get, Purge, DeleteFlags          string
		Nack, Recover                    string
		TimesOut, Limited                bool
		ConsumeNoPrefetch, ConsumeGlobal string
	}
	get := func(q queue.Queue[int]) string {
		_, err := q.Get(true, func(*queue.Message, bool) {})
		return errText(err)
	}
	purge := func(q queue.Queue[int]) string { _, err := q.Purge(); return errText(err) }
	consume := func(q queue.Queue[int], r queue.ConsumeRequest) string {
		return errText(q.Consume(r, func(int) *consumer.Consumer[int] {
			return consumer.New(consumer.Settings{Tag: "c", Prefetch: r.Prefetch}, &consumer.Group[int]{}, 0)
		}))
	}
	ask := func(q queue.Queue[int]) answers {
		_, del := q.CheckDelete(true, true)
		return answers{
			Type: q.Type().String(), Get: get(q), Purge: purge(q), DeleteFlags: errText(del),
			Nack:     errText(q.CheckSettle(protocol.BasicNack, queue.Requeue)),
			Recover:  errText(q.CheckSettle(protocol.BasicRecover, queue.Requeue)),
			TimesOut: q.Caps().ConsumerTimeout, Limited: q.Caps().ChannelLimited,
			ConsumeNoPrefetch: consume(q, queue.ConsumeRequest{}),
			ConsumeGlobal:     consume(q, queue.ConsumeRequest{Prefetch: 1, GlobalLimit: 5}),
		}
	}
	const res = "queue 'q' in vhost '/'"
	for _, tc := range []struct {
		name  string
		typ   string
		rules queue.Rules
		extra protocol.Table
		want  answers
	}{
		{"classic", "", v310, nil, answers{Type: "classic",
			DeleteFlags: "PRECONDITION_FAILED - " + res + " in use",
			TimesOut:    true, Limited: true}},
		{"classic 4.3", "", v43, nil, answers{Type: "classic",
			DeleteFlags: "PRECONDITION_FAILED - " + res + " in use", Limited: true}},
		{"quorum", "quorum", v310, nil, answers{Type: "quorum",
			DeleteFlags:   "hard NOT_IMPLEMENTED - cannot delete " + res + ". queue.delete operations with if-unused flag set are not supported by quorum queues",
			TimesOut:      true,
			ConsumeGlobal: "hard NOT_IMPLEMENTED - " + res + " does not support global qos"}},
		{"quorum single active", "quorum", v310, protocol.Table{"x-single-active-consumer": true}, answers{Type: "quorum",
			Get:           "RESOURCE_LOCKED - cannot obtain access to locked " + res + ". basic.get operations are not supported by quorum queues with single active consumer",
			DeleteFlags:   "hard NOT_IMPLEMENTED - cannot delete " + res + ". queue.delete operations with if-unused flag set are not supported by quorum queues",
			TimesOut:      true,
			ConsumeGlobal: "hard NOT_IMPLEMENTED - " + res + " does not support global qos"}},
		{"quorum single active 4.3", "quorum", v43, protocol.Table{"x-single-active-consumer": true}, answers{Type: "quorum",
			Get:           "RESOURCE_LOCKED - cannot obtain access to locked " + res + `. basic.get operations are not supported by <<"quorum">> queues with single active consumer`,
			DeleteFlags:   "hard NOT_IMPLEMENTED - cannot delete " + res + ". queue.delete operations with if-unused flag set are not supported by quorum queues",
			TimesOut:      true,
			ConsumeGlobal: "hard NOT_IMPLEMENTED - " + res + " does not support global qos"}},
		{"stream", "stream", v310, nil, answers{Type: "stream",
			Get:               "hard NOT_IMPLEMENTED - basic.get not supported by stream queues " + res,
			Purge:             "hard NOT_IMPLEMENTED - queue.purge not supported by stream queues " + res,
			Nack:              "hard NOT_IMPLEMENTED - basic.nack and basic.reject not supported by stream queues " + res,
			Recover:           "hard INTERNAL_ERROR",
			TimesOut:          true,
			ConsumeNoPrefetch: "PRECONDITION_FAILED - consumer prefetch count is not set for '" + res + "'",
			ConsumeGlobal:     "hard NOT_IMPLEMENTED - " + res + " does not support global qos"}},
		{"stream 4.3", "stream", v43, nil, answers{Type: "stream",
			Get:               "hard NOT_IMPLEMENTED - basic.get not supported by stream queues " + res,
			Purge:             "hard NOT_IMPLEMENTED - queue.purge not supported by stream queues " + res,
			ConsumeNoPrefetch: "PRECONDITION_FAILED - consumer prefetch count is not set for stream " + res,
			ConsumeGlobal:     "hard NOT_IMPLEMENTED - " + res + " does not support global qos"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := typeQueue(t, tc.typ, tc.rules, tc.extra)
			queue.AddConsumer(q, consumer.New(consumer.Settings{Tag: "x", Prefetch: 1}, &consumer.Group[int]{}, 0))
			if diff := cmp.Diff(tc.want, ask(q)); diff != "" {
				t.Errorf("answers (-want +got):\n%s", diff)
			}
		})
	}
}

// A restart keeps a classic queue's persistent messages only, and every
// message of a quorum queue and a stream; delete-ok's count is a
// classic or quorum queue's ready messages and a stream's 0.
// TestClassicRestartAfterACrash: a classic queue whose node crashed
// recovers its messages as possibly delivered: redelivered at their next
// fetch, and in 4.3 counting one failed delivery, which a dead letter
// carries (classic-ttl-passes-while-home-killed.txt); a clean stop keeps
// their flags.
func TestClassicRestartAfterACrash(t *testing.T) {
	for _, tc := range []struct {
		crashed, deliveryCount bool
		failures               int64
	}{{false, true, 0}, {true, false, 0}, {true, true, 1}} {
		q := typeQueue(t, "", queue.Rules{ClassicDeliveryCount: tc.deliveryCount}, nil)
		q.Publish(&queue.Message{Body: []byte("p"), Properties: &protocol.Properties{DeliveryMode: 2}}, 0, false)
		q.Restart(tc.crashed)
		m := q.Messages()[0]
		if m.Delivered != tc.crashed || m.Failures != tc.failures {
			t.Errorf("crashed %v, ClassicDeliveryCount %v: delivered %v, failures %d; want %v, %d",
				tc.crashed, tc.deliveryCount, m.Delivered, m.Failures, tc.crashed, tc.failures)
		}
	}
}

func TestTypesRestartAndDelete(t *testing.T) {
	for _, tc := range []struct {
		typ                 string
		ready, afterRestart int
	}{{"", 2, 1}, {"quorum", 2, 2}, {"stream", 0, 2}} {
		q := typeQueue(t, tc.typ, queue.Rules{}, nil)
		q.Publish(&queue.Message{Body: []byte("p"), Properties: &protocol.Properties{DeliveryMode: 2}}, 0, false)
		q.Publish(&queue.Message{Body: []byte("t")}, 0, false)
		if n, err := q.CheckDelete(false, false); n != tc.ready || err != nil {
			t.Errorf("%s: delete-ok counts %d (%v), want %d", q.Type(), n, err, tc.ready)
		}
		q.Restart(false)
		if n := len(q.Messages()); n != tc.afterRestart {
			t.Errorf("%s: %d messages after a restart, want %d", q.Type(), n, tc.afterRestart)
		}
		q.Delete()
		if n := len(q.Messages()); n != 0 {
			t.Errorf("%s: %d messages after deletion", q.Type(), n)
		}
	}
}

// The types' names, and the answers given before a queue exists.
func TestTypeNames(t *testing.T) {
	for typ, want := range map[queue.Type]string{queue.Classic: "classic", queue.Quorum: "quorum", queue.Stream: "stream"} {
		if typ.String() != want {
			t.Errorf("%d is %q, want %q", typ, typ, want)
		}
	}
	for typ, want := range map[string]string{
		"": "", "classic": "", "other": "",
		"quorum": "PRECONDITION_FAILED - Cannot declare a server-named queue for type rabbit_quorum_queue",
		"stream": "PRECONDITION_FAILED - Cannot declare a server-named queue for type rabbit_stream_queue",
	} {
		if got := errText(queue.CheckServerNamed(protocol.Table{"x-queue-type": typ})); got != want {
			t.Errorf("server-named %q: %q, want %q", typ, got, want)
		}
	}
	if args := queue.DefinitionArgs(nil, "classic"); args != nil {
		t.Errorf("classic from a definitions file: %v, want no arguments", args)
	}
	if args := queue.DefinitionArgs(nil, "quorum"); args["x-queue-type"] != "quorum" {
		t.Errorf("quorum from a definitions file: %v", args)
	}
	if args := queue.DefinitionArgs(protocol.Table{"x-queue-type": "stream"}, "quorum"); args["x-queue-type"] != "stream" {
		t.Errorf("the argument wins over the type field: %v", args)
	}
}
