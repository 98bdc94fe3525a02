package queue_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/amqpsim/amqpsim/consumer"
	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/queue"
)

var streamEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newStream(t *testing.T, o queue.Options, extra protocol.Table) (queue.Streamer[int], *env) {
	t.Helper()
	e := &env{timers: map[queue.Timer]int64{}}
	o.Durable, o.Epoch = true, streamEpoch
	o.Args = protocol.Table{"x-queue-type": "stream"}
	for k, v := range extra {
		o.Args[k] = v
	}
	q, err := queue.New[int](e, "/", "s", o)
	if err != nil {
		t.Fatal(err)
	}
	return q.(queue.Streamer[int]), e
}

func publishTo(q testQueue, headers protocol.Table, bodies ...string) {
	for _, b := range bodies {
		var p *protocol.Properties
		if headers != nil {
			p = &protocol.Properties{Headers: headers}
		}
		q.Publish(&queue.Message{Body: []byte(b), RoutingKey: "s", Properties: p}, 0, false)
	}
}

func streamConsumer(tag string, prefetch int) *consumer.Consumer[int] {
	return consumer.New(consumer.Settings{Tag: tag, Prefetch: prefetch}, &consumer.Group[int]{}, 0)
}

// ParseMaxAge follows rabbit_amqqueue:check_max_age/1 (stream-max-age.txt,
// stream-declare-crash.txt).
func TestParseMaxAge(t *testing.T) {
	for s, want := range map[string]time.Duration{
		"1D": 24 * time.Hour, "7h": 7 * time.Hour, "01h": time.Hour, "1s": time.Second,
		"1Y": 365 * 24 * time.Hour, "1M": 30 * 24 * time.Hour, "30m": 30 * time.Minute,
	} {
		if got, err := queue.ParseMaxAge(s); err != nil || got != want {
			t.Errorf("ParseMaxAge(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	for _, s := range []string{"1x", "1d", "0s", "10", "1h1m", "1.5h"} {
		if _, err := queue.ParseMaxAge(s); err == nil || err.Error() != "invalid_max_age" {
			t.Errorf("ParseMaxAge(%q): %v, want invalid_max_age", s, err)
		}
	}
	for _, s := range []string{"", "h", "-1h", " 1h", "FIRST"} {
		var pe *protocol.Error
		if _, err := queue.ParseMaxAge(s); !errors.As(err, &pe) || pe.Code != 541 || !pe.Hard {
			t.Errorf("ParseMaxAge(%q): %v, want a hard 541", s, err)
		}
	}
}

// Every consumer reads the whole log from where it starts; acks only
// return credit.
func TestStreamOffsetsAndCredit(t *testing.T) {
	q, e := newStream(t, queue.Options{}, nil)
	publishTo(q, nil, "m0", "m1", "m2")
	first := streamConsumer("a", 2)
	q.Attach(first, queue.Offset{Kind: queue.OffsetFirst}, nil)
	q.Attach(streamConsumer("b", 5), queue.Offset{Kind: queue.OffsetLast}, nil)
	q.Attach(streamConsumer("c", 5), queue.Offset{Kind: queue.OffsetAt, N: 1}, nil)
	q.Attach(streamConsumer("d", 5), queue.Offset{Kind: queue.OffsetAt, N: 4}, nil)
	q.Attach(streamConsumer("e", 5), queue.Offset{Kind: queue.OffsetNext}, nil)
	q.Dispatch()
	want := []string{"a:m0", "a:m1", "b:m2", "c:m1", "c:m2"}
	if !slices.Equal(e.delivered, want) {
		t.Fatalf("delivered %v, want %v", e.delivered, want)
	}
	e.delivered = nil
	q.Settle([]queue.Settled[int]{{Message: q.Messages()[0], Consumer: first}}, queue.Ack)
	q.Dispatch()
	publishTo(q, nil, "m3", "m4")
	q.Dispatch()
	// d waits for offset 4: m3 (offset 3) is skipped.
	want = []string{"a:m2", "b:m3", "b:m4", "c:m3", "c:m4", "d:m4", "e:m3", "e:m4"}
	slices.Sort(e.delivered)
	if !slices.Equal(e.delivered, want) {
		t.Fatalf("delivered %v, want %v", e.delivered, want)
	}
	if n := len(q.Messages()); n != 5 {
		t.Fatalf("%d messages retained, want 5: acks remove nothing", n)
	}
	if v := q.Messages()[4].Properties.Headers["x-stream-offset"]; v != int64(4) {
		t.Fatalf("x-stream-offset of m4 = %v, want long 4", v)
	}
}

// A timestamp offset starts at the first message written at or after it.
func TestStreamTimestampOffset(t *testing.T) {
	q, e := newStream(t, queue.Options{}, nil)
	publishTo(q, nil, "m0")
	e.now = int64(10 * time.Second)
	publishTo(q, nil, "m1")
	q.Attach(streamConsumer("a", 5), queue.Offset{Kind: queue.OffsetTime, Time: streamEpoch.Add(5 * time.Second)}, nil)
	q.Dispatch()
	if want := []string{"a:m1"}; !slices.Equal(e.delivered, want) {
		t.Fatalf("delivered %v, want %v", e.delivered, want)
	}
}

// A timestamp offset exactly equal to a chunk's time starts at that chunk
// (osiris_log: the first chunk whose timestamp is at or after it), not at
// the next one.
func TestStreamTimestampOffsetAtAChunksTime(t *testing.T) {
	q, e := newStream(t, queue.Options{}, nil)
	publishTo(q, nil, "m0")
	e.now = int64(10 * time.Second)
	publishTo(q, nil, "m1")
	e.now = int64(20 * time.Second)
	publishTo(q, nil, "m2")
	q.Attach(streamConsumer("a", 5), queue.Offset{Kind: queue.OffsetTime, Time: streamEpoch.Add(10 * time.Second)}, nil)
	q.Dispatch()
	if want := []string{"a:m1", "a:m2"}; !slices.Equal(e.delivered, want) {
		t.Fatalf("delivered %v, want %v", e.delivered, want)
	}
}

// queue.declare-ok's count is RabbitMQ's 5 s metric: the count at the last
// tick of the broker's clock (stream-count.txt).
func TestStreamCountLags(t *testing.T) {
	q, e := newStream(t, queue.Options{}, nil)
	e.now = int64(1 * time.Second)
	publishTo(q, nil, "m0", "m1")
	if n := q.Ready(); n != 0 {
		t.Fatalf("count %d right after publishing, want 0 until the tick", n)
	}
	e.now = int64(5 * time.Second)
	if n := q.Ready(); n != 2 {
		t.Fatalf("count %d at the tick, want 2", n)
	}
	publishTo(q, nil, "m2")
	if n := q.Ready(); n != 2 {
		t.Fatalf("count %d after a publish at the tick, want 2", n)
	}
	e.now = int64(10 * time.Second)
	if n := q.Ready(); n != 3 {
		t.Fatalf("count %d at the next tick, want 3", n)
	}
}

// Retention drops whole segments when a segment opens, and while a max-age
// applies evaluates again an hour later (osiris_retention:schedule/3).
func TestStreamRetentionByAgeTimer(t *testing.T) {
	q, e := newStream(t, queue.Options{}, protocol.Table{"x-stream-max-segment-size-bytes": int32(400), "x-max-age": "1m"})
	publishTo(q, nil, "m1", "m2", "m3", "m4") // m4 opens the second segment
	if due, ok := e.timers[queue.RetentionTimer]; !ok || due != int64(time.Hour) {
		t.Fatalf("retention timer %v, %v; want due in an hour", due, ok)
	}
	e.now = int64(time.Hour)
	q.TimerFired(queue.RetentionTimer)
	var bodies []string
	for _, m := range q.Messages() {
		bodies = append(bodies, string(m.Body))
	}
	if want := []string{"m4"}; !slices.Equal(bodies, want) {
		t.Fatalf("retained %v, want %v", bodies, want)
	}
	if st := q.Stats().Stream; st.FirstOffset != 3 || st.NextOffset != 5 || st.Segments != 1 {
		t.Fatalf("stats %+v, want first 3 (the snapshot), next 5, one segment", st)
	}
	if _, ok := e.timers[queue.RetentionTimer]; ok {
		t.Fatal("retention timer left with one segment")
	}
}

// RabbitMQ 3.13's filtering, read in rabbitmq-server 3.13's
// deps/rabbit/src/rabbit_stream_queue.erl: filter_spec/1 (x-stream-filter
// a longstr or an array whose longstr elements count, x-stream-match-unfiltered
// a bool, false by default, no filter without x-stream-filter),
// consume/3 (the spec goes to osiris:init_reader/4 as reader options), and
// stream_message/2 (a published message's x-stream-filter-value header, a
// string, becomes its chunk's filter value). osiris filters whole chunks
// with a bloom filter; amqpsim writes one message per chunk, so its filter
// is exact (no false positives). Off (3.10, the default) the arguments are
// ignored (stream-filter-310.txt).
func TestStreamFiltering313(t *testing.T) {
	for _, on := range []bool{true, false} {
		q, e := newStream(t, queue.Options{Rules: queue.Rules{StreamFiltering: on}}, nil)
		publishTo(q, protocol.Table{"x-stream-filter-value": "red"}, "r1")
		publishTo(q, protocol.Table{"x-stream-filter-value": "blue"}, "b1")
		publishTo(q, nil, "u1")
		for _, c := range []struct {
			tag  string
			args protocol.Table
		}{
			{"a", protocol.Table{"x-stream-filter": "red"}},
			{"b", protocol.Table{"x-stream-filter": []any{"red", "blue"}}},
			{"c", protocol.Table{"x-stream-filter": "red", "x-stream-match-unfiltered": true}},
			{"d", protocol.Table{"x-stream-match-unfiltered": true}}, // no filter at all
		} {
			f, ok := queue.ParseFilter(c.args)
			var fp *queue.Filter
			if ok {
				fp = &f
			}
			q.Attach(streamConsumer(c.tag, 10), queue.Offset{Kind: queue.OffsetFirst}, fp)
		}
		q.Dispatch()
		slices.Sort(e.delivered)
		want := []string{"a:r1", "b:b1", "b:r1", "c:r1", "c:u1", "d:b1", "d:r1", "d:u1"}
		if !on {
			want = []string{"a:b1", "a:r1", "a:u1", "b:b1", "b:r1", "b:u1", "c:b1", "c:r1", "c:u1", "d:b1", "d:r1", "d:u1"}
		}
		if !slices.Equal(e.delivered, want) {
			t.Errorf("filtering %t: delivered %v, want %v", on, e.delivered, want)
		}
	}
}

// With filtering (3.13+) the bloom filter's size is checked at declare
// (rabbit_stream_queue:check_filter_size/1 at 3.13: 16..255); 3.10 takes
// any value (stream-filter-310.txt).
func TestStreamFilterSize313(t *testing.T) {
	for _, tc := range []struct {
		on   bool
		size int32
		fail bool
	}{{true, 15, true}, {true, 256, true}, {true, 16, false}, {true, 255, false}, {false, 15, false}, {false, 1000, false}} {
		e := &env{timers: map[queue.Timer]int64{}}
		_, err := queue.New[int](e, "/", "s", queue.Options{Durable: true, Rules: queue.Rules{StreamFiltering: tc.on},
			Args: protocol.Table{"x-queue-type": "stream", "x-stream-filter-size-bytes": tc.size}})
		var pe *protocol.Error
		if got := errors.As(err, &pe); got != tc.fail || (got && pe.Text != "PRECONDITION_FAILED - Invalid value for  x-stream-filter-size-bytes") {
			t.Errorf("filtering %t, size %d: %v", tc.on, tc.size, err)
		}
	}
}
