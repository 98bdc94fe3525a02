package mgmt_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/amqpsim/amqpsim/mgmt"
	"github.com/amqpsim/amqpsim/sim"
)

// startLimited serves a fresh broker's API over loopback TCP with the
// server mgmt.NewServer configures.
func startLimited(t *testing.T, cfg sim.Config) (*httptest.Server, *sim.Broker) {
	t.Helper()
	b := sim.New(cfg)
	h := mgmt.NewHandler(b)
	ts := httptest.NewUnstartedServer(h)
	ts.Config = mgmt.NewServer(h)
	ts.Start()
	t.Cleanup(ts.Close)
	return ts, b
}

// rawResponse sends head (a request's line and headers, no body) over a
// new connection and reads the response it gets without sending more. It
// gives up after 10 s, loudly: the answer must not wait for the body.
func rawResponse(t *testing.T, ts *httptest.Server, head string) *http.Response {
	t.Helper()
	conn, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := io.WriteString(conn, head); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no response within 10 s to a request whose body was not sent: %v", err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// TestAnsweredBeforeTheBody: a request refused before its body is needed
// is answered at once, though the body was announced and never sent, as
// RabbitMQ does (measured on 3.10.8: a POST announcing 1000 bytes, without
// credentials, got its 401 before any of them); the connection then
// closes. Without credentials, with wrong ones, in a vhost the user may
// not access, and with an announced body over the limit.
func TestAnsweredBeforeTheBody(t *testing.T) {
	ts, b := startLimited(t, sim.Config{})
	b.AddVhost("other")
	if err := b.PutUser(sim.User{Name: "man", Password: "pw", Tags: []string{sim.TagManagement}}); err != nil {
		t.Fatal(err)
	}
	const guestAuth = "Authorization: Basic Z3Vlc3Q6Z3Vlc3Q=\r\n" // guest:guest
	for _, c := range []struct {
		name, head string
		status     int
	}{
		{"no credentials", "POST /api/definitions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n", 401},
		{"wrong password", "PUT /api/queues/%2F/q HTTP/1.1\r\nHost: x\r\nAuthorization: Basic Z3Vlc3Q6eA==\r\nContent-Length: 1000\r\n\r\n", 401},
		{"no access to the vhost", "PUT /api/queues/other/q HTTP/1.1\r\nHost: x\r\nAuthorization: Basic bWFuOnB3\r\nContent-Length: 1000\r\n\r\n", 401},
		{"chunked, no credentials", "PUT /api/users/u HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n", 401},
		{"over the limit", "PUT /api/users/u HTTP/1.1\r\nHost: x\r\n" + guestAuth + fmt.Sprintf("Content-Length: %d\r\n\r\n", b.Profile().HTTPMaxBody+1), 400},
	} {
		resp := rawResponse(t, ts, c.head)
		if resp.StatusCode != c.status || !resp.Close {
			t.Errorf("%s: %s, closing %t; want %d and the connection closed", c.name, resp.Status, resp.Close, c.status)
		}
	}
}

// TestBodyOverTheReleaseLimit: a body larger than the simulated release
// reads is refused as RabbitMQ refuses it (measured on 3.10.8): 400
// "Exceeded HTTP request body size limit" where the body is decoded as
// JSON (users, policies, definitions), 500 with no body for a declare;
// 3.10 reads up to 8,000,000 bytes, 4.0 up to 20,000,000
// (sim.Profile.HTTPMaxBody). The limit holds whether the body announces
// its length or comes chunked.
func TestBodyOverTheReleaseLimit(t *testing.T) {
	user := func(n int) string { // a valid PUT /api/users body of n bytes
		const head, tail = `{"password":"pw","tags":"","x":"`, `"}`
		return head + strings.Repeat("a", n-len(head)-len(tail)) + tail
	}
	queue := func(n int) string {
		const head, tail = `{"durable":false,"x":"`, `"}`
		return head + strings.Repeat("a", n-len(head)-len(tail)) + tail
	}
	tooLarge := map[string]any{"error": "bad_request", "reason": "Exceeded HTTP request body size limit"}
	for _, c := range []struct {
		version sim.Version
		limit   int
	}{{sim.V3_10, 8000000}, {sim.V4_0, 20000000}} {
		h := mgmt.NewHandler(sim.New(sim.Config{Version: c.version}))
		for _, chunked := range []bool{false, true} {
			do := func(method, path, body string) (int, any) {
				req := httptest.NewRequest(method, path, strings.NewReader(body))
				if chunked {
					req.ContentLength = -1
				}
				req.SetBasicAuth("guest", "guest")
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				var v any
				_ = json.Unmarshal(rec.Body.Bytes(), &v)
				return rec.Code, v
			}
			if code, body := do("PUT", "/api/users/u", user(c.limit)); code != 201 && code != 204 {
				t.Errorf("%v chunked=%t: a user body of %d bytes: %d %v", c.version, chunked, c.limit, code, body)
			}
			if code, body := do("PUT", "/api/users/u", user(c.limit+1)); code != 400 || !equalJSON(body, tooLarge) {
				t.Errorf("%v chunked=%t: a user body of %d bytes: %d %v, want 400 %v", c.version, chunked, c.limit+1, code, body, tooLarge)
			}
			if code, body := do("POST", "/api/definitions", user(c.limit+1)); code != 400 || !equalJSON(body, tooLarge) {
				t.Errorf("%v chunked=%t: definitions of %d bytes: %d %v, want 400 %v", c.version, chunked, c.limit+1, code, body, tooLarge)
			}
			if code, body := do("PUT", "/api/queues/%2F/q", queue(c.limit)); code != 201 && code != 204 {
				t.Errorf("%v chunked=%t: a queue body of %d bytes: %d %v", c.version, chunked, c.limit, code, body)
			}
			if code, body := do("PUT", "/api/queues/%2F/q", queue(c.limit+1)); code != 500 || body != nil {
				t.Errorf("%v chunked=%t: a queue body of %d bytes: %d %v, want 500 and no body", c.version, chunked, c.limit+1, code, body)
			}
		}
	}
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// deadlineWriter is a ResponseWriter that records the deadlines the
// handler sets through http.ResponseController.
type deadlineWriter struct {
	*httptest.ResponseRecorder
	read, write time.Time
}

func (w *deadlineWriter) SetReadDeadline(t time.Time) error  { w.read = t; return nil }
func (w *deadlineWriter) SetWriteDeadline(t time.Time) error { w.write = t; return nil }

// TestTimeouts: the server has RabbitMQ's listener limits (cowboy's
// request_timeout 5 s for a request's headers and idle_timeout 60 s
// between requests; measured on 3.10.8: 5.0 s and 60 s), and the handler
// gives each read of a body 60 s (cowboy's idle_timeout, measured: an
// announced body never sent was dropped after 60.0 s) and each response
// 30 s (ranch's send_timeout). Read off the server's fields and the
// deadlines the handler sets, without waiting for them.
func TestTimeouts(t *testing.T) {
	h := mgmt.NewHandler(sim.New(sim.Config{}))
	s := mgmt.NewServer(h)
	if s.ReadHeaderTimeout != 5*time.Second || s.IdleTimeout != 60*time.Second || s.Handler != h {
		t.Errorf("NewServer: ReadHeaderTimeout %v, IdleTimeout %v; want 5s and 1m0s, serving the handler", s.ReadHeaderTimeout, s.IdleTimeout)
	}
	if s.ReadTimeout != 0 || s.WriteTimeout != 0 {
		t.Errorf("NewServer: ReadTimeout %v, WriteTimeout %v; the handler bounds each read and write instead", s.ReadTimeout, s.WriteTimeout)
	}
	req := httptest.NewRequest("PUT", "/api/users/u", strings.NewReader(`{"password":"pw","tags":""}`))
	req.SetBasicAuth("guest", "guest")
	w := &deadlineWriter{ResponseRecorder: httptest.NewRecorder()}
	before := time.Now()
	h.ServeHTTP(w, req)
	after := time.Now()
	if w.Code != 201 {
		t.Fatalf("PUT /api/users/u: %d %s", w.Code, w.Body)
	}
	within := func(d time.Time, by time.Duration) bool {
		return !d.Before(before.Add(by)) && !d.After(after.Add(by))
	}
	if !within(w.read, 60*time.Second) {
		t.Errorf("read deadline %v, want 60 s after the request (%v)", w.read, before)
	}
	if !within(w.write, 30*time.Second) {
		t.Errorf("write deadline %v, want 30 s after the request (%v)", w.write, before)
	}
}
