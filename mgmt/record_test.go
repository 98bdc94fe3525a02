package mgmt_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// The management API's answers are pinned by recordings from RabbitMQ
// 3.10.8 (testdata/rabbitmq/*.json): each scenario below is a sequence of
// HTTP requests, with AMQP clients around them where the API shows
// connections, channels and consumers. Recorded with
//
//	rabbitmq-plugins enable rabbitmq_management
//	MGMT_URL=http://127.0.0.1:15672 AMQP_URL=amqp://guest:guest@127.0.0.1:5672/ \
//	    go test ./mgmt -run TestAgreesWithRabbitMQ -record
//	rabbitmq-plugins disable rabbitmq_management
//
// Without -record the same scenarios run against the handler and every
// answer is compared with the recording field by field (compare.go).
var record = flag.Bool("record", false, "record the scenarios from the RabbitMQ at $MGMT_URL and $AMQP_URL into testdata/rabbitmq")

// exchange is one recorded request and its answer.
type exchange struct {
	Request  recRequest  `json:"request"`
	Response recResponse `json:"response"`
}

type recRequest struct {
	Method string            `json:"method"`
	Path   string            `json:"path"`
	User   string            `json:"user,omitempty"` // "user:password"; empty: no credentials
	Header map[string]string `json:"header,omitempty"`
	Body   string            `json:"body,omitempty"`
}

type recResponse struct {
	Status int `json:"status"`
	// Header holds the headers clients read: content-type,
	// www-authenticate, allow.
	Header map[string]string `json:"header,omitempty"`
	// Body is the decoded JSON body, or the text of a body that is not
	// JSON, or nil for an empty one.
	Body any `json:"body"`
}

// target is what a scenario talks to: RabbitMQ or the handler.
type target struct {
	t       *testing.T
	httpURL string // no trailing slash
	amqpURL string
	real    bool // RabbitMQ: its statistics arrive every 5 s
	got     []exchange
	conns   []*amqp.Connection
}

// settle waits for RabbitMQ's management statistics to catch up (they are
// emitted every collect_statistics_interval, 5 s); the simulator's are
// always current.
func (tg *target) settle() {
	if tg.real {
		time.Sleep(6 * time.Second)
	}
}

// do sends one request and records it with its answer.
func (tg *target) do(method, path, user, body string, header ...string) exchange {
	tg.t.Helper()
	req, err := http.NewRequest(method, tg.httpURL+path, strings.NewReader(body))
	if err != nil {
		tg.t.Fatal(err)
	}
	// Keep the escapes as written (%2F, %20): they are part of the test.
	req.URL.RawPath = strings.SplitN(path, "?", 2)[0]
	h := map[string]string{}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
		h[header[i]] = header[i+1]
	}
	if body != "" && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if u, p, ok := strings.Cut(user, ":"); ok {
		req.SetBasicAuth(u, p)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tg.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		tg.t.Fatal(err)
	}
	ex := exchange{Request: recRequest{Method: method, Path: path, User: user, Body: body}}
	if len(h) > 0 {
		ex.Request.Header = h
	}
	ex.Response.Status = resp.StatusCode
	for _, k := range []string{"Content-Type", "Www-Authenticate", "Allow"} {
		if v := resp.Header.Get(k); v != "" {
			if ex.Response.Header == nil {
				ex.Response.Header = map[string]string{}
			}
			ex.Response.Header[strings.ToLower(k)] = v
		}
	}
	if len(raw) > 0 {
		var v any
		if json.Unmarshal(raw, &v) == nil {
			ex.Response.Body = v
		} else {
			ex.Response.Body = string(raw)
		}
	}
	tg.got = append(tg.got, ex)
	return ex
}

// note records an observation outside HTTP (what an AMQP client saw) as a
// pseudo-exchange with method NOTE.
func (tg *target) note(what string, v any) {
	b, _ := json.Marshal(v)
	var d any
	_ = json.Unmarshal(b, &d)
	tg.got = append(tg.got, exchange{Request: recRequest{Method: "NOTE", Path: what}, Response: recResponse{Body: d}})
}

// connect opens an AMQP connection named name (client property
// connection_name, as amqp091-go sets it).
func (tg *target) connect(name string) *amqp.Connection {
	tg.t.Helper()
	props := amqp.NewConnectionProperties()
	props.SetClientConnectionName(name)
	cfg := amqp.Config{Properties: props, Heartbeat: 10 * time.Second, Locale: "en_US"}
	c, err := amqp.DialConfig(tg.amqpURL, cfg)
	if err != nil {
		tg.t.Fatalf("dial %s: %v", tg.amqpURL, err)
	}
	tg.conns = append(tg.conns, c)
	return c
}

func (tg *target) close() {
	for _, c := range tg.conns {
		_ = c.Close()
	}
}

// closeNote waits for a connection's close notification and returns it
// as the client saw it. On RabbitMQ the recording gives up after 10 s; on
// the simulator, served over TCP outside any synctest bubble, it waits
// without a deadline (go test's -timeout reports a hang), never on the
// clock, so that a busy machine cannot make it miss the close.
func (tg *target) closeNote(ch chan *amqp.Error) map[string]any {
	var timeout <-chan time.Time
	if tg.real {
		timeout = time.After(10 * time.Second)
	}
	select {
	case e := <-ch:
		if e == nil {
			return map[string]any{"closed": "without error"}
		}
		return map[string]any{"code": e.Code, "reason": e.Reason, "server": e.Server}
	case <-timeout:
		return map[string]any{"closed": "not within 10 s"}
	}
}

const guest = "guest:guest"

// jsonBody marshals v, for request bodies.
func jsonBody(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func testdataPath(name string) string { return filepath.Join("testdata", "rabbitmq", name+".json") }

func writeRecording(name string, exs []exchange) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(exs); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(testdataPath(name)), 0o755); err != nil {
		return err
	}
	return os.WriteFile(testdataPath(name), buf.Bytes(), 0o644)
}

func readRecording(name string) ([]exchange, error) {
	raw, err := os.ReadFile(testdataPath(name))
	if err != nil {
		return nil, err
	}
	var exs []exchange
	if err := json.Unmarshal(raw, &exs); err != nil {
		return nil, fmt.Errorf("%s: %w", testdataPath(name), err)
	}
	return exs, nil
}

// ports returns the local addresses of the target's AMQP connections, the
// start of the names the management API gives them.
func (tg *target) ports() []string {
	var out []string
	for _, c := range tg.conns {
		out = append(out, c.LocalAddr().String())
	}
	return out
}

// connectAs opens an AMQP connection named name as user ("user:password")
// to vhost.
func (tg *target) connectAs(name, user, vhost string) *amqp.Connection {
	tg.t.Helper()
	u, err := url.Parse(tg.amqpURL)
	if err != nil {
		tg.t.Fatal(err)
	}
	name0, pass, _ := strings.Cut(user, ":")
	u.User = url.UserPassword(name0, pass)
	u.Path = ""
	props := amqp.NewConnectionProperties()
	props.SetClientConnectionName(name)
	c, err := amqp.DialConfig(u.String()+"/"+url.PathEscape(vhost), amqp.Config{Properties: props, Heartbeat: 10 * time.Second, Locale: "en_US"})
	if err != nil {
		tg.t.Fatalf("dial %s as %s: %v", vhost, user, err)
	}
	tg.conns = append(tg.conns, c)
	return c
}
