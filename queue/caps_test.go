package queue_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/queue"
)

// TestCaps: each type's fixed answers, one row a type, release and
// declaration: what the broker reads instead of asking the type.
func TestCaps(t *testing.T) {
	v43 := queue.Rules{ConsumerTimeoutQuorumOnly: true, QuorumConsumerTimeout: true, StreamAnySettlement: true}
	for _, tc := range []struct {
		name    string
		durable bool
		rules   queue.Rules
		args    protocol.Table
		want    queue.Caps
		// late says which of a transient and a persistent message are
		// confirmed late; timedOut the declaration that timed out on
		// node "rabbit@n".
		late     [2]bool
		timedOut string
	}{
		{"classic", false, queue.Rules{}, nil,
			queue.Caps{ChannelLimited: true, ConsumerTimeout: true}, [2]bool{false, false},
			"Could not declare queue 'q' in vhost '/' on node 'rabbit@n' because the metadata store operation timed out"},
		{"durable classic", true, queue.Rules{}, nil,
			queue.Caps{ChannelLimited: true, ConsumerTimeout: true, LateConfirms: queue.PersistentLate}, [2]bool{false, true}, ""},
		{"classic 4.3, single active", false, v43, protocol.Table{"x-single-active-consumer": true},
			queue.Caps{ChannelLimited: true, SingleActive: true}, [2]bool{false, false}, ""},
		{"quorum", true, queue.Rules{}, protocol.Table{"x-queue-type": "quorum"},
			queue.Caps{Replicated: true, RegistersEnqueuers: true, DeleteWaitsForMembers: true, ConsumerTimeout: true,
				LateConfirms: queue.AllLate, DeliversAfterConsensus: true, RaftConsumers: true}, [2]bool{true, true},
			"Could not declare quorum queue 'q' in vhost '/' on node 'rabbit@n' because the metadata store operation timed out"},
		{"quorum 4.3, single active", true, v43, protocol.Table{"x-queue-type": "quorum", "x-single-active-consumer": true},
			queue.Caps{SingleActive: true, Replicated: true, RegistersEnqueuers: true, DeleteWaitsForMembers: true,
				LateConfirms: queue.AllLate, DeliversAfterConsensus: true, RaftConsumers: true}, [2]bool{true, true}, ""},
		{"stream", true, queue.Rules{}, protocol.Table{"x-queue-type": "stream"},
			queue.Caps{Replicated: true, LosesCutOffSide: true, ConsumerTimeout: true, LateConfirms: queue.AllLate, RefusesSettlements: true, StoresAMQP10: true}, [2]bool{true, true},
			"Could not set leader PID for queue 'q' in vhost '/' on node 'rabbit@n' because the metadata store operation timed out"},
		{"stream 4.3", true, v43, protocol.Table{"x-queue-type": "stream"},
			queue.Caps{Replicated: true, LosesCutOffSide: true, LateConfirms: queue.AllLate, StoresAMQP10: true}, [2]bool{true, true}, ""},
	} {
		q, err := queue.New[int](&env{timers: map[queue.Timer]int64{}}, "/", "q", queue.Options{Durable: tc.durable, Rules: tc.rules, Args: tc.args})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		c := q.Caps()
		if diff := cmp.Diff(tc.want, c, cmpopts.IgnoreUnexported(queue.Caps{})); diff != "" {
			t.Errorf("%s: Caps (-want +got):\n%s", tc.name, diff)
		}
		if late := [2]bool{c.ConfirmsLate(false), c.ConfirmsLate(true)}; late != tc.late {
			t.Errorf("%s: ConfirmsLate(transient, persistent) = %v, want %v", tc.name, late, tc.late)
		}
		if got := c.DeclareTimedOut("rabbit@n"); tc.timedOut != "" && got != tc.timedOut {
			t.Errorf("%s: DeclareTimedOut = %q, want %q", tc.name, got, tc.timedOut)
		}
	}
}

// TestTakesPolicy: a policy setting a key the type does not support does
// not apply to the queue (rabbit_queue_type:is_policy_applicable/2; each
// type's unsupported_policies, RS@v3.10.8 and v4.3.5).
func TestTakesPolicy(t *testing.T) {
	v312 := queue.Rules{ClassicRefusesMemoryPolicies: true}
	for _, tc := range []struct {
		typ   string
		rules queue.Rules
		key   string
		takes bool
	}{
		{"classic", queue.Rules{}, "max-length", true},
		{"classic", queue.Rules{}, "delivery-limit", false},
		{"classic", queue.Rules{}, "max-age", false},
		{"classic", queue.Rules{}, "max-in-memory-length", true},
		{"classic", v312, "max-in-memory-length", false},
		{"classic", v312, "max-in-memory-bytes", false},
		{"quorum", v312, "delivery-limit", true},
		{"quorum", v312, "max-in-memory-length", true},
		{"quorum", queue.Rules{}, "stream-max-segment-size-bytes", false},
		{"stream", queue.Rules{}, "max-length-bytes", true},
		{"stream", queue.Rules{}, "max-age", true},
		{"stream", queue.Rules{}, "message-ttl", false},
		{"stream", queue.Rules{}, "overflow", false},
		{"stream", queue.Rules{}, "dead-letter-exchange", false},
	} {
		q, err := queue.New[int](&env{timers: map[queue.Timer]int64{}}, "/", "q",
			queue.Options{Durable: true, Rules: tc.rules, Args: protocol.Table{"x-queue-type": tc.typ}})
		if err != nil {
			t.Fatal(err)
		}
		// The key alone, and beside one every type takes.
		for _, def := range []protocol.Table{{tc.key: int32(1)}, {tc.key: int32(1), "max-length-bytes": int32(9)}} {
			if got := q.Caps().TakesPolicy(def); got != tc.takes {
				t.Errorf("%s %+v: TakesPolicy(%v) = %v, want %v", tc.typ, tc.rules, def, got, tc.takes)
			}
		}
	}
}

// A decimal header crashes the conversion a stream's publisher makes at
// the top level on every release, and inside an x- header's array or
// table from 3.13 (stream-decimal-header.txt).
func TestConversionCrashes(t *testing.T) {
	dec := protocol.Decimal{Scale: 1, Value: 15}
	for _, tc := range []struct {
		name           string
		h              protocol.Table
		on310, from313 bool
	}{
		{"none", nil, false, false},
		{"plain values", protocol.Table{"a": "x", "b": int32(1), "x-c": 1.5}, false, false},
		{"top-level decimal", protocol.Table{"d": dec}, true, true},
		{"top-level x- decimal", protocol.Table{"x-d": dec}, true, true},
		{"decimal in an array", protocol.Table{"a": []any{dec}}, false, false},
		{"decimal in a table", protocol.Table{"t": protocol.Table{"k": dec}}, false, false},
		{"decimal in an x- array", protocol.Table{"x-a": []any{int32(1), dec}}, false, true},
		{"decimal deep in an x- table", protocol.Table{"x-t": protocol.Table{"k": []any{protocol.Table{"j": dec}}}}, false, true},
		{"x- array without a decimal", protocol.Table{"x-a": []any{"s", protocol.Table{"k": int64(2)}}}, false, false},
	} {
		if got := (queue.Rules{}).ConversionCrashes(tc.h); got != tc.on310 {
			t.Errorf("%s: 3.10 crashes %t, want %t", tc.name, got, tc.on310)
		}
		if got := (queue.Rules{StreamConvertsXContainers: true}).ConversionCrashes(tc.h); got != tc.from313 {
			t.Errorf("%s: 3.13 crashes %t, want %t", tc.name, got, tc.from313)
		}
	}
}
