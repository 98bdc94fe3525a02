package wire

import (
	"encoding/binary"
	"fmt"

	"github.com/amqpsim/amqpsim/protocol"
)

// Method is an AMQP method with its arguments: one of the pointer types
// generated in methods_gen.go, such as *BasicPublish. The interface is sealed.
type Method interface {
	// ID returns the method's class and method id.
	ID() protocol.Method
	// HasContent reports whether a content header and body frames follow
	// the method: true for basic.publish, basic.return, basic.deliver and
	// basic.get-ok.
	HasContent() bool

	write(w *writer)
	read(r *reader)
}

// DecodeMethod decodes a method frame's payload: class id, method id and the
// arguments. Consecutive bit arguments share an octet, least significant bit
// first. The result is a pointer to the method's struct, such as *BasicAck.
//
// It never panics. Errors are [*Error]s wrapping [ErrUnknownMethod] (503
// COMMAND_INVALID) for an id the specification does not define,
// [ErrTruncated] or [ErrTrailingBytes] (501 FRAME_ERROR) when the payload
// does not hold exactly the arguments, and [ErrMalformedTable] (502
// SYNTAX_ERROR) for a bad field table. The returned method shares no memory
// with payload.
func DecodeMethod(payload []byte) (Method, error) {
	if len(payload) < 4 {
		return nil, newError(protocol.FrameError, ErrTruncated, "method frame payload of %d bytes has no class and method id", len(payload))
	}
	id := protocol.Method{Class: binary.BigEndian.Uint16(payload), ID: binary.BigEndian.Uint16(payload[2:])}
	r := reader{buf: payload[4:]}
	m := readArgs(id.Class, id.ID, &r)
	if m == nil {
		return nil, &Error{Code: protocol.CommandInvalid, Method: id, Err: ErrUnknownMethod,
			Detail: fmt.Sprintf("class %d, method %d", id.Class, id.ID)}
	}
	r.end()
	if r.err != nil {
		r.err.Method = id
		return nil, r.err
	}
	return m, nil
}

// methodScratch holds reusable method values for the methods a connection
// receives per message (basic.publish, basic.ack), so that decoding them
// allocates nothing. A decoded value is valid until the next decode of the
// same method.
type methodScratch struct {
	publish BasicPublish
	ack     BasicAck
}

// decode is DecodeMethod, decoding basic.publish and basic.ack into s.
// Their well-formed payloads are read in place: an ack's fixed 13 bytes,
// and a publish's names, kept from the last publish when the same (a
// publisher sends one routing key again and again).
func (s *methodScratch) decode(payload []byte) (Method, error) {
	if len(payload) < 4 {
		return DecodeMethod(payload)
	}
	id := protocol.Method{Class: binary.BigEndian.Uint16(payload), ID: binary.BigEndian.Uint16(payload[2:])}
	switch {
	case id == protocol.BasicAck && len(payload) == 13:
		s.ack = BasicAck{DeliveryTag: binary.BigEndian.Uint64(payload[4:]), Multiple: payload[12]&1 != 0}
		return &s.ack, nil
	case id == protocol.BasicPublish && s.publishInPlace(payload[4:]):
		return &s.publish, nil
	}
	var m interface {
		Method
		read(*reader)
	}
	switch id {
	case protocol.BasicPublish:
		s.publish = BasicPublish{}
		m = &s.publish
	case protocol.BasicAck:
		s.ack = BasicAck{}
		m = &s.ack
	default:
		return DecodeMethod(payload)
	}
	r := reader{buf: payload[4:]}
	m.read(&r)
	r.end()
	if r.err != nil {
		r.err.Method = id
		return nil, r.err
	}
	return m, nil
}

// publishInPlace decodes a well-formed basic.publish's arguments (reserved
// short, exchange and routing key shortstrs, bits) into s.publish as
// BasicPublish.read does, reusing the last names when the bytes are the
// same; it reports false, leaving the rest to the reader, for anything
// else (a short or long payload).
func (s *methodScratch) publishInPlace(args []byte) bool {
	if len(args) < 3 {
		return false
	}
	reserved := binary.BigEndian.Uint16(args)
	xlen := int(args[2])
	if len(args) < 3+xlen+1 {
		return false
	}
	x := args[3 : 3+xlen]
	klen := int(args[3+xlen])
	rest := args[4+xlen:]
	if len(rest) != klen+1 {
		return false
	}
	key, bits := rest[:klen], rest[klen]
	p := &s.publish
	if string(x) != p.Exchange {
		p.Exchange = string(x)
	}
	if string(key) != p.RoutingKey {
		p.RoutingKey = string(key)
	}
	p.Reserved1, p.Mandatory, p.Immediate = reserved, bits&1 != 0, bits&2 != 0
	return true
}

// AppendMethod appends m's method frame payload (class id, method id,
// arguments) to dst. It fails, returning dst unchanged, if a shortstr argument
// is over 255 bytes or a table holds a value with no AMQP type.
func AppendMethod(dst []byte, m Method) ([]byte, error) {
	w := writer{buf: dst}
	if err := w.method(m); err != nil {
		return dst, err
	}
	return w.buf, nil
}

// method writes m's ids and arguments.
func (w *writer) method(m Method) error {
	if m == nil {
		return fmt.Errorf("wire: encode method: %w", ErrNilMethod)
	}
	id := m.ID()
	w.short(id.Class)
	w.short(id.ID)
	if !writeArgs(w, m) {
		return fmt.Errorf("wire: encode %s: %w", id, ErrNilMethod)
	}
	if w.err != nil {
		return fmt.Errorf("wire: encode %s: %w", id, w.err)
	}
	return nil
}
