package wire

import (
	"math"

	"github.com/amqpsim/amqpsim/protocol"
)

// ClassBasic is the class id of basic, the only AMQP 0-9-1 class with
// content, and so the class id of every content header.
const ClassBasic = 60

// Header is the payload of a content header frame: class id 60 (basic),
// weight, body size, property flags and the present basic properties.
type Header struct {
	Weight     uint16 // unused by AMQP 0-9-1; RabbitMQ and amqp091-go send 0
	BodySize   uint64 // total size of the body frames that follow
	Properties protocol.Properties
}

// Property flag bits, the first property in bit 15.
const (
	flagContentType     = 1 << 15
	flagContentEncoding = 1 << 14
	flagHeaders         = 1 << 13
	flagDeliveryMode    = 1 << 12
	flagPriority        = 1 << 11
	flagCorrelationID   = 1 << 10
	flagReplyTo         = 1 << 9
	flagExpiration      = 1 << 8
	flagMessageID       = 1 << 7
	flagTimestamp       = 1 << 6
	flagType            = 1 << 5
	flagUserID          = 1 << 4
	flagAppID           = 1 << 3
	flagClusterID       = 1 << 2
	flagsUndefined      = 1<<1 | 1<<0 // bit 0 would announce another flags word
)

// AppendHeader appends h as a content header frame payload to dst. A
// property is present when it is not the zero value, except Headers, which
// is present when it is non-nil (so an empty table survives a round trip).
// Timestamps are whole seconds.
func AppendHeader(dst []byte, h *Header) ([]byte, error) {
	w := writer{buf: dst}
	w.header(h)
	if w.err != nil {
		return dst, w.err
	}
	return w.buf, nil
}

func (w *writer) header(h *Header) {
	p := &h.Properties
	var flags uint16
	set := func(present bool, bit uint16) {
		if present {
			flags |= bit
		}
	}
	set(p.ContentType != "", flagContentType)
	set(p.ContentEncoding != "", flagContentEncoding)
	set(p.Headers != nil, flagHeaders)
	set(p.DeliveryMode != 0, flagDeliveryMode)
	set(p.Priority != 0, flagPriority)
	set(p.CorrelationID != "", flagCorrelationID)
	set(p.ReplyTo != "", flagReplyTo)
	set(p.Expiration != "", flagExpiration)
	set(p.MessageID != "", flagMessageID)
	set(!p.Timestamp.IsZero(), flagTimestamp)
	set(p.Type != "", flagType)
	set(p.UserID != "", flagUserID)
	set(p.AppID != "", flagAppID)
	set(p.ClusterID != "", flagClusterID)

	w.short(ClassBasic)
	w.short(h.Weight)
	w.longlong(h.BodySize)
	w.short(flags)
	if flags&flagContentType != 0 {
		w.shortstr(p.ContentType)
	}
	if flags&flagContentEncoding != 0 {
		w.shortstr(p.ContentEncoding)
	}
	if flags&flagHeaders != 0 {
		w.table(p.Headers)
	}
	if flags&flagDeliveryMode != 0 {
		w.octet(p.DeliveryMode)
	}
	if flags&flagPriority != 0 {
		w.octet(p.Priority)
	}
	if flags&flagCorrelationID != 0 {
		w.shortstr(p.CorrelationID)
	}
	if flags&flagReplyTo != 0 {
		w.shortstr(p.ReplyTo)
	}
	if flags&flagExpiration != 0 {
		w.shortstr(p.Expiration)
	}
	if flags&flagMessageID != 0 {
		w.shortstr(p.MessageID)
	}
	if flags&flagTimestamp != 0 {
		w.timestamp(p.Timestamp)
	}
	if flags&flagType != 0 {
		w.shortstr(p.Type)
	}
	if flags&flagUserID != 0 {
		w.shortstr(p.UserID)
	}
	if flags&flagAppID != 0 {
		w.shortstr(p.AppID)
	}
	if flags&flagClusterID != 0 {
		w.shortstr(p.ClusterID)
	}
}

// DecodeHeader decodes a content header frame payload. It never panics.
// Errors are [*Error]s: [ErrContentClass] (505 UNEXPECTED_FRAME) for a class
// other than 60, [ErrBadPropertyFlags], [ErrTruncated] or [ErrTrailingBytes]
// (501 FRAME_ERROR), and [ErrMalformedTable] (502 SYNTAX_ERROR) for bad
// headers. Timestamps decode as UTC times.
func DecodeHeader(payload []byte) (Header, error) {
	var h Header
	r := reader{buf: payload}
	if class := r.short(); r.err == nil && class != ClassBasic {
		return h, newError(protocol.UnexpectedFrame, ErrContentClass,
			"expected content header for class %d, got one for class %d instead", ClassBasic, class)
	}
	h.Weight = r.short()
	h.BodySize = r.longlong()
	flags := r.short()
	if r.err == nil && flags&flagsUndefined != 0 {
		return Header{}, newError(protocol.FrameError, ErrBadPropertyFlags, "property flags %#04x", flags)
	}
	p := &h.Properties
	if flags&flagContentType != 0 {
		p.ContentType = r.shortstr()
	}
	if flags&flagContentEncoding != 0 {
		p.ContentEncoding = r.shortstr()
	}
	if flags&flagHeaders != 0 {
		p.Headers = r.table()
	}
	if flags&flagDeliveryMode != 0 {
		p.DeliveryMode = r.octet()
	}
	if flags&flagPriority != 0 {
		p.Priority = r.octet()
	}
	if flags&flagCorrelationID != 0 {
		p.CorrelationID = r.shortstr()
	}
	if flags&flagReplyTo != 0 {
		p.ReplyTo = r.shortstr()
	}
	if flags&flagExpiration != 0 {
		p.Expiration = r.shortstr()
	}
	if flags&flagMessageID != 0 {
		p.MessageID = r.shortstr()
	}
	if flags&flagTimestamp != 0 {
		p.Timestamp = r.timestamp()
	}
	if flags&flagType != 0 {
		p.Type = r.shortstr()
	}
	if flags&flagUserID != 0 {
		p.UserID = r.shortstr()
	}
	if flags&flagAppID != 0 {
		p.AppID = r.shortstr()
	}
	if flags&flagClusterID != 0 {
		p.ClusterID = r.shortstr()
	}
	r.end()
	if r.err != nil {
		return Header{}, r.err
	}
	return h, nil
}

// BodyFrameSize returns the largest body frame payload that fits frameMax:
// frameMax minus the 8 bytes of frame overhead, as amqp091-go and RabbitMQ
// split bodies. A frameMax of 0 means no limit (up to 4 GiB - 1 per frame).
func BodyFrameSize(frameMax uint32) int {
	switch {
	case frameMax == 0:
		return math.MaxUint32
	case frameMax <= FrameOverhead:
		return 1
	}
	return int(frameMax - FrameOverhead)
}

// AppendBodyFrames appends body to dst as body frames on channel, each
// payload at most [BodyFrameSize](frameMax) bytes. An empty body appends
// nothing: the header's zero body size says all.
func AppendBodyFrames(dst []byte, channel uint16, body []byte, frameMax uint32) []byte {
	size := BodyFrameSize(frameMax)
	for len(body) > 0 {
		n := min(len(body), size)
		dst = AppendFrame(dst, Frame{Type: FrameBody, Channel: channel, Payload: body[:n]})
		body = body[n:]
	}
	return dst
}
