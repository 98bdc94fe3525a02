package sim_test

import (
	"testing"

	"github.com/amqpsim/amqpsim/sim"
)

// The stream rules of this file were measured on RabbitMQ 4.0.5 and 4.3.6
// (scenarios/library/stream-*.txt, each recorded on 3.10.8 too);
// sim/profile.go sets them in one block of Version.Profile. Their texts
// are scenarios (stream-consume-checks.txt in the library,
// stream-queue-texts.txt and stream-reject-refused-310.txt in
// scenarios/testdata/profiles); what stays here is the stream's byte
// count and first offset, which no scenario step shows.

// retentionStream declares s with 400-byte segments and a 1200-byte limit
// and publishes m1..m9, one chunk each: three segments of three messages
// (the last two led by a snapshot chunk), as in stream-retention-bytes.txt.
func retentionStream(t *testing.T, v sim.Version) *env {
	e := newEnvOn(t, v)
	e.declare("s", sim.QueueOptions{Durable: true, Args: sim.Table{"x-queue-type": "stream",
		"x-stream-max-segment-size-bytes": int64(400), "x-max-length-bytes": int64(1200)}})
	e.publish("s", msgs(9)...)
	return e
}

// A 4.x chunk is 11 bytes larger than a 3.10 one for a message without
// properties (its header section; queue's TestStreamChunkSizes has the
// measurements), so byte retention deletes sooner: the first segment is
// gone when m7 opens the third (stream-retention-bytes.txt). The segments
// hold 149- and 160-byte chunks for a 9-character name (the recorder's
// prefix and "s"); the segment files of the recording measured 455, 515
// and 515 bytes on 3.10.8 and 551 and 551 on 4.x, where the channel's pid
// had a character more than the model's 10 (a byte more per chunk).
func TestStreamChunks40(t *testing.T) {
	for _, tc := range []struct {
		v     sim.Version
		bytes int64
		first int64
	}{{sim.V3_10, 455 + 515 + 515, 0}, {sim.V4_0, 548 + 548, 3}, {sim.V4_3, 548 + 548, 3}} {
		st := retentionStream(t, tc.v).stats("s").Stream
		if st.Bytes != tc.bytes || st.FirstOffset != tc.first {
			t.Errorf("%v: %d bytes from offset %d, want %d from %d", tc.v, st.Bytes, st.FirstOffset, tc.bytes, tc.first)
		}
	}
}

// A 4.x consumer whose attach opens a segment finds its start before the
// retention evaluation that follows, and reads what it deletes; having read
// them into the segment its attach opened, on 4.3 its channel crashes at
// the next chunk if it has credit then (its read-ahead buffer is stale),
// and reads on if it has none (measured on 4.0.5 and 4.3.6; the library
// has the crashes with credit).
func TestStreamReadAheadCrash43(t *testing.T) {
	for _, tc := range []struct {
		v        sim.Version
		prefetch int
		crash    bool
	}{
		{sim.V4_0, 20, false},
		{sim.V4_3, 20, true},
		{sim.V4_3, 2, false}, // no credit left when m10 is written
	} {
		e := retentionStream(t, tc.v)
		conn := e.b.Connect("reader")
		ch := e.channel(conn)
		e.qos(ch, tc.prefetch, false)
		a := e.consume(ch, "s", "A", sim.ConsumeOptions{Args: sim.Table{"x-stream-offset": "first"}})
		if st := e.stats("s").Stream; st.FirstOffset != 7 {
			t.Errorf("%v: the attach left offset %d first, want 7 (the second segment deleted)", tc.v, st.FirstOffset)
		}
		e.publish("s", "m10")
		if tc.crash {
			if perr := asError(conn.Err()); perr == nil || perr.Code != 541 || perr.Text != "INTERNAL_ERROR" {
				t.Errorf("%v: connection %v, want closed with 541 INTERNAL_ERROR", tc.v, conn.Err())
			}
			diff(t, tc.v.String()+" deliveries", msgs(9)[3:], bodies(a.Deliveries()))
			continue
		}
		if err := conn.Err(); err != nil {
			t.Fatalf("%v prefetch %d: %v", tc.v, tc.prefetch, err)
		}
		var got []string
		for range 20 {
			d, ok := a.Next()
			if !ok {
				break
			}
			got = append(got, string(d.Body))
			e.must(ch.Ack(d.DeliveryTag, false))
		}
		diff(t, tc.v.String()+" deliveries", []string{"m4", "m5", "m6", "m7", "m8", "m9", "m10"}, got)
	}
}
