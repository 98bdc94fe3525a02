package mgmt

import (
	"errors"
	"io"
	"net/http"
	"time"
)

// The limits of RabbitMQ's management listener: the defaults of cowboy
// 2.8 (cowboy_http) and ranch 2.1 (ranch_tcp), which RabbitMQ 3.10.8's
// listener keeps (rabbit_web_dispatch_sup passes no timeout), measured
// there with a raw socket.
const (
	// RequestTimeout bounds the time to receive a request's line and
	// headers (cowboy's request_timeout): a client that sent nothing, or
	// half its headers, was dropped after 5.0 s.
	RequestTimeout = 5 * time.Second
	// IdleTimeout bounds the time without a received byte (cowboy's
	// idle_timeout): a kept-alive connection was dropped 60 s after its
	// last response, and one whose request announced a body it did not
	// send 60.0 s after the headers.
	IdleTimeout = 60 * time.Second
	// SendTimeout bounds a write to a client that does not read (ranch's
	// send_timeout, with send_timeout_close).
	SendTimeout = 30 * time.Second
)

// NewServer returns an http.Server for h with RabbitMQ's listener limits:
// ReadHeaderTimeout is RequestTimeout and IdleTimeout IdleTimeout. The
// handler itself bounds each read of a request body by IdleTimeout and
// the writing of each response by SendTimeout (as cowboy and ranch do, per
// read and per send, not per request), and refuses a body larger than the
// simulated release reads (sim.Profile.HTTPMaxBody).
func NewServer(h *Handler) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: RequestTimeout, IdleTimeout: IdleTimeout}
}

// errTooLarge is a body over the release's limit.
var errTooLarge = errors.New("mgmt: request body too large")

// tooLarge is RabbitMQ's answer to a body over the limit where the body
// is read through rabbit_mgmt_util:with_decode or by the definitions
// import (measured on 3.10.8); a declare, which reads it through
// with_vhost_and_props, crashes instead: see readBody.
var tooLarge = badRequest("Exceeded HTTP request body size limit")

// readBody reads the request body, at most the release's limit: a
// larger one is errTooLarge, refused before a byte of it is read when
// Content-Length announces it. Each read waits at most IdleTimeout for the
// client.
func (r *request) readBody() ([]byte, error) {
	limit := r.h.b.Profile().HTTPMaxBody
	if r.ContentLength > limit {
		return nil, errTooLarge
	}
	rc := http.NewResponseController(r.w)
	raw, err := io.ReadAll(io.LimitReader(idleReader{r.Body, rc}, limit+1))
	if err != nil {
		return nil, err
	}
	r.body.read = true
	if int64(len(raw)) > limit {
		return nil, errTooLarge
	}
	return raw, nil
}

// idleReader gives each read of a request body IdleTimeout, cowboy's
// idle_timeout, where the server can set deadlines (not over an
// httptest.ResponseRecorder).
type idleReader struct {
	r  io.Reader
	rc *http.ResponseController
}

func (ir idleReader) Read(p []byte) (int, error) {
	_ = ir.rc.SetReadDeadline(time.Now().Add(IdleTimeout))
	return ir.r.Read(p)
}

// bodyState records whether a handler read the request's body.
type bodyState struct{ read bool }

// unreadBody prepares the answer to a request whose body the handler did
// not read (refused before it, or never needing it): the connection
// closes after the response, and the server stops waiting for the body at
// once. Without this net/http reads up to 256 KiB of the body before it
// writes the response, so that a client that sends its headers and waits
// for the answer before sending the body (Expect-less 100-continue, a
// slow or hostile client) gets nothing until it sends the body. RabbitMQ
// answers such a request at once (measured: a POST announcing 1000 bytes
// without credentials got its 401 before any of them).
func unreadBody(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Connection", "close")
	_ = http.NewResponseController(w).SetReadDeadline(time.Now())
}
