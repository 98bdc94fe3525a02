package queue

import (
	"slices"
	"strings"

	"github.com/amqpsim/amqpsim/consumer"
	"github.com/amqpsim/amqpsim/protocol"
)

// What the AMQP methods mean for a stream (rabbit_stream_queue), where
// the broker asks the queue.

// Type returns Stream.
func (s *stream[T]) Type() Type { return Stream }

// Consume runs the checks RabbitMQ 3.10.8 makes of a basic.consume on a
// stream, in its order (stream-consume-checks.txt, stream-offsets.txt,
// stream-consume-args.txt): the consumer arguments (a stream does not
// take x-priority, which is refused with the others before any value is
// read), the x-stream-offset value, a per-consumer prefetch, manual acks,
// no channel-wide limit, then the offsets its reader crashes on. The
// consumer starts where x-stream-offset says, with its 3.13 filter; a
// stream ignores the exclusive flag (AdmitConsumer), and its consumers
// have no priority.
func (s *stream[T]) Consume(r ConsumeRequest, join func(priority int) *consumer.Consumer[T]) error {
	if err := s.checkConsumeArgs(Stream, r.Args); err != nil {
		return err
	}
	v, present := r.Args["x-stream-offset"]
	from, err := ParseOffset(s.opts.Rules, v, present, r.Now, s.Resource())
	if err != nil {
		return err
	}
	// rabbit_stream_queue:consume/3, in 3.10's texts or, from 4.0,
	// naming a "stream queue" (Rules.StreamQueueTexts).
	texts := s.opts.Rules.StreamQueueTexts
	if r.Prefetch == 0 {
		if texts {
			return protocol.Errorf(protocol.PreconditionFailed, protocol.BasicConsume, "consumer prefetch count is not set for stream %s", s.Resource())
		}
		return protocol.Errorf(protocol.PreconditionFailed, protocol.BasicConsume, "consumer prefetch count is not set for '%s'", s.Resource())
	}
	if r.NoAck {
		by := "stream queues"
		if texts {
			by = "stream"
		}
		return protocol.Errorf(protocol.NotImplemented, protocol.BasicConsume, "automatic acknowledgement not supported by %s %s", by, s.Resource())
	}
	if r.GlobalLimit > 0 {
		return s.globalQosRefused()
	}
	if from.Crashes() {
		return from.CrashError()
	}
	var filter *Filter
	if f, ok := ParseFilter(r.Args); ok {
		filter = &f
	}
	if err := s.AdmitConsumer(r.Exclusive); err != nil {
		return err
	}
	s.attach(join(0), from, filter)
	return nil
}

// Get refuses basic.get, as rabbit_stream_queue:dequeue/4 does
// (stream-settle.txt).
func (s *stream[T]) Get(bool, func(*Message, bool)) (bool, error) {
	return false, protocol.Errorf(protocol.NotImplemented, protocol.BasicGet, "basic.get not supported by stream queues %s", s.Resource())
}

// CheckSettle takes basic.ack, and from 4.0 every settlement
// (Rules.StreamAnySettlement). RabbitMQ 3.10.8's
// rabbit_stream_queue:settle/4 takes only acks: nack and reject close the
// connection with 540, and requeueing a stream's delivery with
// basic.recover crashes the channel, 541 (stream-settle.txt).
func (s *stream[T]) CheckSettle(m protocol.Method, how Settlement) error {
	if how == Ack || s.opts.Rules.StreamAnySettlement {
		return nil
	}
	if m == protocol.BasicRecover || m == protocol.BasicRecoverAsync {
		return protocol.ChannelCrash()
	}
	return protocol.Errorf(protocol.NotImplemented, m, "basic.nack and basic.reject not supported by stream queues %s", s.Resource())
}

// Purge refuses queue.purge: rabbit_stream_queue:purge/1 answers {error,
// not_supported} (stream-settle.txt).
func (s *stream[T]) Purge() (int, error) {
	return 0, protocol.Errorf(protocol.NotImplemented, protocol.QueuePurge, "queue.purge not supported by stream queues %s", s.Resource())
}

// CheckDelete ignores both flags and answers 0, as
// rabbit_stream_queue:delete/4 does (stream-delete.txt).
func (s *stream[T]) CheckDelete(bool, bool) (int, error) { return 0, nil }

// Delete empties the log.
func (s *stream[T]) Delete() {
	s.base += int64(len(s.log))
	s.log, s.bodies = nil, 0
}

// Restart keeps the log whole.
func (s *stream[T]) Restart(bool) {}

// streamCaps are a stream's answers: a member on every node and a leader,
// but a writer that takes publishes without a registration call and a
// delete that waits for no member (neither measured on a cluster); it
// confirms once its writer has replicated the chunk, and amqpsim delivers
// a chunk as it is written (3.10.8 delivered before the acks of the
// double-ack measurement arrived); its consumers have their own credit
// (rabbit_stream_queue's), so it never asks the channel's limiter, and
// Consume refuses a channel-wide limit; the channel's consumer timeout
// applies but where only quorum queues have one
// (Rules.ConsumerTimeoutQuorumOnly). The declaration that timed out is
// rabbit_stream_queue:declare's text (read from its source; not
// measured).
func (d *declared) streamCaps() Caps {
	return Caps{Replicated: true, LosesCutOffSide: true, ConsumerTimeout: !d.opts.Rules.ConsumerTimeoutQuorumOnly, LateConfirms: AllLate, StoresAMQP10: true,
		RefusesSettlements: !d.opts.Rules.StreamAnySettlement,
		declareTimedOut:    declareTimedOutText("Could not set leader PID for " + d.Resource()),
		// Of the keys amqpsim models, rabbit_stream_queue's
		// unsupported_policies has the classic and quorum ones
		// (RS@v3.10.8, v4.3.5).
		unsupportedPolicies: []string{"expires", "message-ttl", "dead-letter-exchange", "dead-letter-routing-key",
			"max-length", "max-in-memory-length", "max-in-memory-bytes", "overflow", "delivery-limit"}}
}

// Stats counts the registered consumers (declare-ok's count is 0) and
// describes the log.
func (s *stream[T]) Stats() Stats {
	st := &StreamStats{FirstOffset: s.base, NextOffset: s.base + int64(len(s.log)),
		Segments: len(s.retention.segments), Bytes: s.retention.total()}
	for i := range s.log {
		if s.log[i].m != nil {
			st.Messages++
		}
	}
	return Stats{Consumers: len(s.readers), Stream: st}
}

// ConversionCrashes says whether converting headers h to AMQP 1.0, as the
// publishing channel does for a stream (Caps.StoresAMQP10), crashes the
// channel: from_091 has no clause for a decimal value
// (RS@v3.10.8 rabbit_msg_record.erl, RS@v3.13.7 and v4.3.5 mc_amqpl.erl).
// A decimal at the top level crashes on every release; an array or a
// table is left out up to 3.12, and from 3.13 (StreamConvertsXContainers)
// an x- header's array or table is converted, so a decimal anywhere inside
// one crashes (stream-decimal-header.txt, recorded on 3.10.8, 4.0.5 and
// 4.3.6). The connection then closes with 541 INTERNAL_ERROR.
func (r Rules) ConversionCrashes(h protocol.Table) bool {
	for k, v := range h {
		switch v := v.(type) {
		case protocol.Decimal:
			return true
		case []any, protocol.Table:
			if r.StreamConvertsXContainers && strings.HasPrefix(k, "x-") && holds(v, isDecimal) {
				return true
			}
		}
	}
	return false
}

// holds says whether v is, or holds inside its arrays and tables at any
// depth, a value is accepts.
func holds(v any, is func(any) bool) bool {
	if is(v) {
		return true
	}
	switch v := v.(type) {
	case []any:
		return slices.ContainsFunc(v, func(e any) bool { return holds(e, is) })
	case protocol.Table:
		for _, e := range v {
			if holds(e, is) {
				return true
			}
		}
	}
	return false
}

func isDecimal(v any) bool { _, ok := v.(protocol.Decimal); return ok }

func isBinary(v any) bool { _, ok := v.([]byte); return ok }

// storedHeader is header k=v as a stream's consumers get it back: the
// publishing channel converts the message to AMQP 1.0 for the log, and
// the reading channel converts it back. ok is false for a header the
// round trip loses.
//
// Up to 3.12 (RS@v3.10.8 rabbit_msg_record) every array and table header
// is left out. From 3.13 (StreamConvertsXContainers; RS@v3.13.7 and
// v4.3.5 mc_amqpl: from_091/2, to_091/2, is_internal_header/1) an x-
// header becomes a message annotation of any type, except the internal
// ones (x-death, x-exchange, x-routing-key, x-basic-*), which the way back
// leaves out; an array CC header becomes the annotation x-cc, and so does
// an x-cc header, both coming back as CC; any other array or table is
// left out; and a binary comes back a longstr, at any depth. Recorded on
// 3.10.8, 4.0.5 and 4.3.6: stream-header-conversion.txt.
func (r Rules) storedHeader(k string, v any) (string, any, bool) {
	if !r.StreamConvertsXContainers {
		switch v.(type) {
		case []any, protocol.Table:
			return k, nil, false
		}
		return k, v, true
	}
	switch {
	case k == "x-cc":
		return "CC", binaryAsString(v), true
	case k == "x-death" || k == "x-exchange" || k == "x-routing-key" || strings.HasPrefix(k, "x-basic-"):
		return k, nil, false
	case strings.HasPrefix(k, "x-"):
		return k, binaryAsString(v), true
	}
	switch v.(type) {
	case []any:
		if k != "CC" {
			return k, nil, false
		}
	case protocol.Table:
		return k, nil, false
	}
	return k, binaryAsString(v), true
}

// binaryAsString returns v with every binary value, at any depth, a
// longstr; v is not modified, and is returned as it is when it holds no
// binary.
func binaryAsString(v any) any {
	if !holds(v, isBinary) {
		return v
	}
	switch v := v.(type) {
	case []byte:
		return string(v)
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = binaryAsString(e)
		}
		return out
	case protocol.Table:
		out := make(protocol.Table, len(v))
		for k, e := range v {
			out[k] = binaryAsString(e)
		}
		return out
	}
	return v
}

// basicFromHeaders is the rest of the round trip: a message's type
// travels as x-basic-type, its app-id up to 3.12 as x-basic-app-id
// (RS@v3.10.8 rabbit_msg_record from_amqp091/2 and to_amqp091/1; from
// 3.13, mc_amqpl keeps the app-id as group-id), and the way back takes
// the first of each name as the property. So a header of that name whose
// message lacks the property becomes it; beside the property, up to 3.12
// the header stays, from 3.13 it is left out as every x-basic- header is
// (storedHeader). Measured on 3.10.8, 4.0.5 and 4.3.6 with amqp091-go:
// TestStreamBasicHeaders.
func basicFromHeaders(p *protocol.Properties, published, h protocol.Table, mc bool) {
	if v, ok := published["x-basic-type"].(string); ok && p.Type == "" {
		p.Type = v
		delete(h, "x-basic-type")
	}
	if v, ok := published["x-basic-app-id"].(string); ok && p.AppID == "" && !mc {
		p.AppID = v
		delete(h, "x-basic-app-id")
	}
}
