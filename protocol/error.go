package protocol

import "fmt"

// Reply codes used by RabbitMQ (AMQP 0-9-1 constants plus RabbitMQ's use of them).
const (
	ReplySuccess       = 200
	ContentTooLarge    = 311
	NoRoute            = 312
	NoConsumers        = 313
	ConnectionForced   = 320
	InvalidPath        = 402
	AccessRefused      = 403
	NotFound           = 404
	ResourceLocked     = 405
	PreconditionFailed = 406
	FrameError         = 501
	SyntaxError        = 502
	CommandInvalid     = 503
	ChannelError       = 504
	UnexpectedFrame    = 505
	ResourceError      = 506
	NotAllowed         = 530
	NotImplemented     = 540
	InternalError      = 541
)

var codeNames = map[int]string{
	ReplySuccess:       "OK",
	ContentTooLarge:    "CONTENT_TOO_LARGE",
	NoRoute:            "NO_ROUTE",
	NoConsumers:        "NO_CONSUMERS",
	ConnectionForced:   "CONNECTION_FORCED",
	InvalidPath:        "INVALID_PATH",
	AccessRefused:      "ACCESS_REFUSED",
	NotFound:           "NOT_FOUND",
	ResourceLocked:     "RESOURCE_LOCKED",
	PreconditionFailed: "PRECONDITION_FAILED",
	FrameError:         "FRAME_ERROR",
	SyntaxError:        "SYNTAX_ERROR",
	CommandInvalid:     "COMMAND_INVALID",
	ChannelError:       "CHANNEL_ERROR",
	UnexpectedFrame:    "UNEXPECTED_FRAME",
	ResourceError:      "RESOURCE_ERROR",
	NotAllowed:         "NOT_ALLOWED",
	NotImplemented:     "NOT_IMPLEMENTED",
	InternalError:      "INTERNAL_ERROR",
}

// CodeName returns RabbitMQ's upper-case name for a reply code, such as
// "PRECONDITION_FAILED", or "" for a code it does not know.
func CodeName(code int) string { return codeNames[code] }

// IsHard reports whether RabbitMQ closes the whole connection for an error with
// this reply code (a "hard-error" in the RabbitMQ codegen spec) rather than only
// the channel.
func IsHard(code int) bool {
	switch code {
	case ConnectionForced, InvalidPath, FrameError, SyntaxError, CommandInvalid,
		ChannelError, UnexpectedFrame, ResourceError, NotAllowed, NotImplemented, InternalError:
		return true
	}
	return false
}

// Error is an AMQP protocol error as RabbitMQ reports it in channel.close or
// connection.close.
type Error struct {
	Code   int    // reply code, e.g. 406
	Text   string // reply text, e.g. "PRECONDITION_FAILED - unknown delivery tag 5"
	Method Method // the method that failed; zero for errors raised outside a method (consumer timeout)
	Hard   bool   // true when the connection closes, false when only the channel does
}

// Errorf builds an Error the way RabbitMQ does: the text is the code's name, " - ",
// and the formatted explanation, cut to 255 bytes ("..." replaces the tail).
func Errorf(code int, m Method, format string, args ...any) *Error {
	text := codeNames[code] + " - " + fmt.Sprintf(format, args...)
	if len(text) > 255 {
		text = text[:252] + "..."
	}
	return &Error{Code: code, Text: text, Method: m, Hard: IsHard(code)}
}

// ChannelCrash is what a client sees when RabbitMQ's channel process
// crashes (on a value its own code has no clause for): the connection
// closes with 541 INTERNAL_ERROR, no explanation and no method.
func ChannelCrash() *Error {
	return &Error{Code: InternalError, Text: codeNames[InternalError], Hard: true}
}

// Error says whether the error closes a channel or a connection, with its
// code, the method and RabbitMQ's text.
func (e *Error) Error() string {
	scope := "channel"
	if e.Hard {
		scope = "connection"
	}
	return fmt.Sprintf("%s error %d (%s): %s", scope, e.Code, e.Method, e.Text)
}
