package wire

import (
	"errors"
	"fmt"

	"github.com/amqpsim/amqpsim/protocol"
)

// Sentinel errors. Decoding errors come wrapped in an [*Error] that carries
// the reply code; test for them with [errors.Is].
var (
	// ErrUnknownMethod: a method frame names a class and method id the
	// specification does not define (503 COMMAND_INVALID).
	ErrUnknownMethod = errors.New("unknown method")
	// ErrTruncated: a payload ends before the arguments or properties it
	// should hold (501 FRAME_ERROR).
	ErrTruncated = errors.New("truncated payload")
	// ErrTrailingBytes: a payload holds bytes after its last argument or
	// property (501 FRAME_ERROR).
	ErrTrailingBytes = errors.New("unexpected bytes after the payload")
	// ErrMalformedTable: a field table or array cannot be decoded: an
	// unknown type tag, a value running past the table's end, nesting deeper
	// than 64 levels (502 SYNTAX_ERROR).
	ErrMalformedTable = errors.New("malformed field table")
	// ErrBadPropertyFlags: a content header sets property flag bits basic
	// does not define (bits 1 and 0, the continuation bit) (501 FRAME_ERROR).
	ErrBadPropertyFlags = errors.New("undefined content property flags")
	// ErrContentClass: a content header is for a class other than basic (505
	// UNEXPECTED_FRAME).
	ErrContentClass = errors.New("content header for a class other than basic")
	// ErrFrameTooLarge: a frame is larger than the negotiated frame-max (501
	// FRAME_ERROR). Also returned, unwrapped, when encoding a frame that would
	// not fit.
	ErrFrameTooLarge = errors.New("frame too large")
	// ErrFrameEnd: the octet after a frame's payload is not 0xCE (501
	// FRAME_ERROR).
	ErrFrameEnd = errors.New("bad frame-end octet")
	// ErrFrameType: a frame has a type other than 1, 2, 3 or 8 (501
	// FRAME_ERROR).
	ErrFrameType = errors.New("unknown frame type")
	// ErrProtocolHeader: the client opened with something other than
	// "AMQP\x00\x00\x09\x01". The server answers as the simulated
	// release does (sim.Profile.ProtocolHeader): it takes 0-9's header
	// too, and answers any other with a protocol header and closes the
	// connection.
	ErrProtocolHeader = errors.New("unsupported protocol header")

	// ErrFieldType: an encoder was given a table value whose Go type has no
	// AMQP field type.
	ErrFieldType = errors.New("value has no AMQP field type")
	// ErrTooLong: an encoder was given a shortstr over 255 bytes, or a
	// longstr, table or array over 4 GiB.
	ErrTooLong = errors.New("value too long")
	// ErrRange: an encoder was given a Go int outside the int32 range.
	ErrRange = errors.New("value out of range")
	// ErrNoContent: content was written with a method that carries none.
	ErrNoContent = errors.New("method carries no content")
	// ErrNilMethod: a nil method was given to an encoder.
	ErrNilMethod = errors.New("nil method")
)

// Error is a decoding error. Code is the reply code a RabbitMQ server closes
// the connection with for it, and Err the sentinel error it wraps.
type Error struct {
	Code    int             // protocol.FrameError, SyntaxError, CommandInvalid or UnexpectedFrame
	Method  protocol.Method // the method being decoded; zero outside method frames
	Channel uint16          // the frame's channel, when the error comes from a FrameReader
	Err     error           // ErrTruncated, ErrMalformedTable, ...
	Detail  string          // what exactly was wrong, may be ""
}

// Error returns "wire: ", the sentinel's text, the detail and the method.
func (e *Error) Error() string {
	s := "wire: " + e.Err.Error()
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	if e.Method != (protocol.Method{}) {
		s += " (" + e.Method.String() + ")"
	}
	return s
}

// Unwrap returns the sentinel error.
func (e *Error) Unwrap() error { return e.Err }

// AMQP returns the error as the protocol error a RabbitMQ server closes the
// connection with, such as "FRAME_ERROR - bad frame-end octet: got 0x00".
func (e *Error) AMQP() *protocol.Error {
	text := e.Err.Error()
	if e.Detail != "" {
		text += ": " + e.Detail
	}
	return protocol.Errorf(e.Code, e.Method, "%s", text)
}

func newError(code int, err error, format string, args ...any) *Error {
	return &Error{Code: code, Err: err, Detail: fmt.Sprintf(format, args...)}
}
