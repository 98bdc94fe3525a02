package mgmt_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/amqpsim/amqpsim/mgmt"
	"github.com/amqpsim/amqpsim/sim"
)

// call serves one request in process and returns the status and the
// decoded body.
func call(t *testing.T, h http.Handler, method, path, user, body string) (int, any) {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if u, p, ok := strings.Cut(user, ":"); ok {
		req.SetBasicAuth(u, p)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var v any
	if rec.Body.Len() > 0 {
		if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
			t.Fatalf("%s %s: body %q: %v", method, path, rec.Body, err)
		}
	}
	return rec.Code, v
}

// TestAlarmsCheck: with a resource alarm raised the health check fails
// with 503 and lists it, as rabbit_mgmt_wm_health_check_alarms answers;
// cleared, it is 200 again.
func TestAlarmsCheck(t *testing.T) {
	b := sim.New(sim.Config{})
	h := mgmt.NewHandler(b)
	b.SetAlarm(sim.AlarmMemory, true)
	code, body := call(t, h, "GET", "/api/health/checks/alarms", guest, "")
	want := map[string]any{"status": "failed", "reason": "resource alarm(s) in effect in the cluster",
		"alarms": []any{map[string]any{"node": "rabbit@amqpsim", "resource": "memory"}}}
	if code != 503 || !cmp.Equal(body, want) {
		t.Errorf("with a memory alarm: %d %v, want 503 %v", code, body, want)
	}
	b.SetAlarm(sim.AlarmMemory, false)
	if code, body := call(t, h, "GET", "/api/health/checks/alarms", guest, ""); code != 200 {
		t.Errorf("after clearing: %d %v", code, body)
	}
}

// TestSimControlsNeedAdministrator: the simulator's controls are
// authenticated like the rest of the API, and need the administrator tag.
func TestSimControlsNeedAdministrator(t *testing.T) {
	b := sim.New(sim.Config{})
	if err := b.PutUser(sim.User{Name: "watcher", Password: "pw", Tags: []string{sim.TagMonitoring}}); err != nil {
		t.Fatal(err)
	}
	h := mgmt.NewHandler(b)
	for _, path := range []string{"/api/sim/advance?by=1m", "/api/sim/restart", "/api/sim/close-connections", "/api/sim/alarm?resource=disk&on=true", "/api/sim/nack-publishes?n=1", "/api/sim/close-at-delivery?n=1",
		"/api/sim/stop-node?node=1", "/api/sim/kill-node?node=1", "/api/sim/start-node?node=1", "/api/sim/partition?group=1", "/api/sim/heal"} {
		if code, _ := call(t, h, "POST", path, "", ""); code != 401 {
			t.Errorf("POST %s without credentials: %d, want 401", path, code)
		}
		code, body := call(t, h, "POST", path, "watcher:pw", "")
		if want := map[string]any{"error": "not_authorised", "reason": "Not administrator user"}; code != 401 || !cmp.Equal(body, want) {
			t.Errorf("POST %s as a monitoring user: %d %v, want 401 %v", path, code, body, want)
		}
	}
	if b.Alarms() != 0 {
		t.Error("a refused request raised an alarm")
	}
	if code, body := call(t, h, "POST", "/api/sim/advance?by=90s", guest, ""); code != 200 || body.(map[string]any)["now"] != "2024-01-01T00:01:30Z" {
		t.Errorf("advance as guest: %d %v", code, body)
	}
	following := sim.New(sim.Config{Clock: func() time.Time { return sim.Epoch() }})
	if code, _ := call(t, mgmt.NewHandler(following), "POST", "/api/sim/advance?by=1m", guest, ""); code != 409 {
		t.Errorf("advance of a broker that follows a clock: %d, want 409", code)
	}
}

// TestInProcessConnectionNames: connections without socket addresses get
// distinct RabbitMQ-shaped names, so each can be found and closed by name.
func TestInProcessConnectionNames(t *testing.T) {
	b := sim.New(sim.Config{})
	c1, c2 := b.Connect("a"), b.Connect("b")
	h := mgmt.NewHandler(b)
	_, body := call(t, h, "GET", "/api/connections", guest, "")
	list := body.([]any)
	if len(list) != 2 {
		t.Fatalf("%d connections listed, want 2", len(list))
	}
	n1, n2 := list[0].(map[string]any)["name"], list[1].(map[string]any)["name"]
	if n1 == n2 || !nameShape.MatchString(n1.(string)) {
		t.Errorf("names %q and %q: want distinct, of RabbitMQ's shape", n1, n2)
	}
	if code, _ := call(t, h, "DELETE", "/api/connections/"+strings.ReplaceAll(n2.(string), " ", "%20"), guest, ""); code != 204 {
		t.Errorf("DELETE %s: %d", n2, code)
	}
	if c1.Err() != nil || c2.Err() == nil {
		t.Errorf("after closing %s: a: %v, b: %v", n2, c1.Err(), c2.Err())
	}
	if !strings.Contains(c2.Err().Error(), "CONNECTION_FORCED - Closed via management plugin") {
		t.Errorf("b closed with %v", c2.Err())
	}
}

// TestHead: HEAD is GET without a body, as cowboy serves it.
func TestHead(t *testing.T) {
	h := mgmt.NewHandler(sim.New(sim.Config{}))
	req := httptest.NewRequest("HEAD", "/api/overview", nil)
	req.SetBasicAuth("guest", "guest")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 200 {
		t.Errorf("HEAD /api/overview: %d", rec.Code)
	}
}

// FuzzHandler: no path, method or body makes the handler panic, and it
// answers only with statuses RabbitMQ's API uses.
func FuzzHandler(f *testing.F) {
	for _, s := range []struct{ method, path, body string }{
		{"PUT", "/api/queues/%2F/q", `{"durable":true,"arguments":{"x-message-ttl":1000}}`},
		{"PUT", "/api/queues/%2F/q", `{"arguments":{"x-max-length":"x"}}`},
		{"PUT", "/api/queues/%2F/q", `{"arguments":{"x-queue-type":"quorum"}}`},
		{"POST", "/api/queues/%2F/q/get", `{"count":1e3,"ackmode":"ack_requeue_false","encoding":"auto","truncate":-1}`},
		{"POST", "/api/queues/%2F/q/get", `{"count":-1,"ackmode":"ack_requeue_true","encoding":"base64"}`},
		{"PUT", "/api/exchanges/%2F/x", `{"type":7}`},
		{"PUT", "/api/policies/%2F/p", `{"pattern":".*","definition":{"max-length":-1},"priority":"high"}`},
		{"PUT", "/api/policies/%2F/p", `{"pattern":7,"definition":[]}`},
		{"PUT", "/api/users/u", `{"password":1,"tags":["a",2]}`},
		{"PUT", "/api/permissions/%2F/guest", `{"configure":1,"write":"","read":""}`},
		{"PUT", "/api/vhosts/v", `{"tags":{}}`},
		{"POST", "/api/definitions", `{"queues":[{"name":1}]}`},
		{"DELETE", "/api/connections/%ZZ", ""},
		{"GET", "/api/queues/%2F/q/get/extra", ""},
		{"DELETE", "/api/queues/%2F/amq.gen%2F", ""},
	} {
		f.Add(s.method, s.path, s.body)
	}
	f.Fuzz(func(t *testing.T, method, path, body string) {
		if !strings.HasPrefix(path, "/") || strings.ContainsAny(path, " \t\r\n#?") {
			return
		}
		switch method {
		case "GET", "PUT", "POST", "DELETE", "HEAD":
		default:
			return
		}
		b := sim.New(sim.Config{})
		h := mgmt.NewHandler(b)
		req, err := http.NewRequest(method, "http://amqpsim"+path, strings.NewReader(body))
		if err != nil {
			return
		}
		req.SetBasicAuth("guest", "guest")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		switch rec.Code {
		case 200, 201, 204, 400, 401, 404, 405, 500, 503:
		default:
			t.Errorf("%s %s %q: status %d", method, path, body, rec.Code)
		}
	})
}

// The API reports the simulated release, as connection.start does: the
// default's, or the one Config.Version names.
func TestOverviewReportsTheProfile(t *testing.T) {
	for _, v := range []sim.Version{{}, sim.V4_0} {
		checkReportedVersion(t, mgmt.NewHandler(sim.New(sim.Config{Version: v})), v.Profile().ServerVersion)
	}
}

func checkReportedVersion(t *testing.T, h http.Handler, want string) {
	t.Helper()
	for _, path := range []string{"/api/overview", "/api/definitions"} {
		req := httptest.NewRequest("GET", path, nil)
		req.SetBasicAuth("guest", "guest")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		var body map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if body["rabbitmq_version"] != want || body["product_version"] != want {
			t.Errorf("%s: rabbitmq_version %v, product_version %v; want %s", path, body["rabbitmq_version"], body["product_version"], want)
		}
	}
}

// TestConsumersOfAVhostNeedAccessFrom43: until 4.3 any management user
// may list the consumers of any vhost (its own consumers, that is:
// recorded on 3.10.8 in the access scenario); 4.3 answers one that
// neither has permissions there nor the monitoring tag 404
// {"error":"not_found","reason":"Not Found"}, and still lets a monitoring
// user list them (sim.Profile.ConsumersNeedVhost). Measured twice on
// 3.10.8 and 4.3.6 with the management plugin enabled for the run, a
// vhost and two users without permissions in it: 3.10.8 200 and 200,
// 4.3.6 404 and 200; a missing vhost 404 "Object Not Found" on both.
// Issue 27 reported 401 for the monitoring user on 4.3.6, which the
// broker contradicts.
func TestConsumersOfAVhostNeedAccessFrom43(t *testing.T) {
	for _, v := range []sim.Version{sim.V3_10, sim.V4_0, sim.V4_3} {
		b := sim.New(sim.Config{Version: v})
		b.AddVhost("other")
		for _, u := range []sim.User{{Name: "man", Password: "pw", Tags: []string{sim.TagManagement}},
			{Name: "mon", Password: "pw", Tags: []string{sim.TagMonitoring}}} {
			if err := b.PutUser(u); err != nil {
				t.Fatal(err)
			}
		}
		h := mgmt.NewHandler(b)
		want, wantBody := 200, any([]any{})
		if v == sim.V4_3 {
			want, wantBody = 404, map[string]any{"error": "not_found", "reason": "Not Found"}
		}
		if code, body := call(t, h, "GET", "/api/consumers/other", "man:pw", ""); code != want || !cmp.Equal(body, wantBody) {
			t.Errorf("%v: management user without permissions: %d %v, want %d %v", v, code, body, want, wantBody)
		}
		if code, body := call(t, h, "GET", "/api/consumers/other", "mon:pw", ""); code != 200 {
			t.Errorf("%v: monitoring user without permissions: %d %v, want 200", v, code, body)
		}
		if code, _ := call(t, h, "GET", "/api/consumers/missing", "mon:pw", ""); code != 404 {
			t.Errorf("%v: a missing vhost: %d, want 404", v, code)
		}
	}
}

// TestConnectionOfNobodyKnown: a connection that does not exist is 404
// for a user who may read (monitoring) or close (administrator) anyone's,
// 500 for the others, whose authorisation crashes on it, and 500 for
// everyone on its channels (measured on 3.10.8).
func TestConnectionOfNobodyKnown(t *testing.T) {
	b := sim.New(sim.Config{})
	for _, u := range []sim.User{{Name: "man", Password: "pw", Tags: []string{sim.TagManagement}},
		{Name: "mon", Password: "pw", Tags: []string{sim.TagMonitoring}}} {
		if err := b.PutUser(u); err != nil {
			t.Fatal(err)
		}
	}
	h := mgmt.NewHandler(b)
	for _, c := range []struct {
		method, path, user string
		want               int
	}{
		{"GET", "/api/connections/none", "man:pw", 500},
		{"DELETE", "/api/connections/none", "man:pw", 500},
		{"GET", "/api/connections/none", "mon:pw", 404},
		{"DELETE", "/api/connections/none", "mon:pw", 500},
		{"GET", "/api/connections/none", guest, 404},
		{"DELETE", "/api/connections/none", guest, 404},
		{"GET", "/api/connections/none/channels", "mon:pw", 500},
		{"GET", "/api/connections/none/channels", guest, 500},
	} {
		if code, body := call(t, h, c.method, c.path, c.user, ""); code != c.want {
			t.Errorf("%s %s as %s: %d %v, want %d", c.method, c.path, c.user, code, body, c.want)
		}
	}
}

// TestSimControlsListed: GET /api/sim (and /api/sim/) lists every control
// with its method, query and description, to any management user; each
// listed control is served with that method (a wrong one is 405, not
// 404), and advance's says it is not ordered with frames in flight.
func TestSimControlsListed(t *testing.T) {
	b := sim.New(sim.Config{})
	if err := b.PutUser(sim.User{Name: "watcher", Password: "pw", Tags: []string{sim.TagMonitoring}}); err != nil {
		t.Fatal(err)
	}
	h := mgmt.NewHandler(b)
	for _, path := range []string{"/api/sim", "/api/sim/"} {
		code, body := call(t, h, "GET", path, "watcher:pw", "")
		list, _ := body.([]any)
		if code != 200 || len(list) != 14 {
			t.Fatalf("GET %s: %d %v, want 200 and the 14 controls", path, code, body)
		}
		var paths []string
		for _, c := range list {
			c := c.(map[string]any)
			paths = append(paths, c["method"].(string)+" "+c["path"].(string))
			other := "GET"
			if c["method"] == "GET" {
				other = "POST"
			}
			if code, _ := call(t, h, other, c["path"].(string), guest, ""); code != 405 {
				t.Errorf("%s %s: %d, want 405 (the control is routed for %s)", other, c["path"], code, c["method"])
			}
			if c["path"] == "/api/sim/advance" && !strings.Contains(c["description"].(string), "not ordered with frames in flight") {
				t.Errorf("advance's description: %q", c["description"])
			}
		}
		want := []string{"GET /api/sim/now", "POST /api/sim/advance", "POST /api/sim/restart", "POST /api/sim/close-connections",
			"POST /api/sim/alarm", "POST /api/sim/close-at-delivery", "POST /api/sim/nack-publishes",
			"POST /api/sim/stop-node", "POST /api/sim/kill-node", "POST /api/sim/start-node", "POST /api/sim/pause-node", "POST /api/sim/resume-node",
			"POST /api/sim/partition", "POST /api/sim/heal"}
		if diff := cmp.Diff(want, paths); diff != "" {
			t.Errorf("controls (-want +got):\n%s", diff)
		}
	}
	if code, _ := call(t, h, "GET", "/api/sim", "", ""); code != 401 {
		t.Errorf("GET /api/sim without credentials: %d, want 401", code)
	}
}

// TestDefinitionsTopicHashLimit: POST /api/definitions refuses, on 4.3, a
// file whose topic binding key holds three '#' words, with 400 and the
// reason (4.3.6 answered 400 bad_request with its binding_invalid term;
// amqpsim's reason says the same in words), and imports it on 3.10
// (3.10.8 answered 204; both measured twice with the management plugin).
// The management API has no other way to bind.
func TestDefinitionsTopicHashLimit(t *testing.T) {
	const file = `{"exchanges":[{"name":"tx","vhost":"/","type":"topic","durable":true,"auto_delete":false,"internal":false,"arguments":{}}],
		"queues":[{"name":"q","vhost":"/","durable":true,"auto_delete":false,"arguments":{}}],
		"bindings":[{"source":"tx","vhost":"/","destination":"q","destination_type":"queue","routing_key":"#.a.#.#","arguments":{}}]}`
	for _, v := range []sim.Version{sim.V3_10, sim.V4_3} {
		h := mgmt.NewHandler(sim.New(sim.Config{Version: v}))
		code, body := call(t, h, "POST", "/api/definitions", "guest:guest", file)
		if v == sim.V3_10 {
			if code != 204 {
				t.Errorf("%v: %d %v, want 204", v, code, body)
			}
			continue
		}
		reason, _ := body.(map[string]any)["reason"].(string)
		if code != 400 || !strings.Contains(reason, "Topic binding key '#.a.#.#' uses 3 '#' wildcards, at most 2 are allowed") {
			t.Errorf("%v: %d %v, want 400 naming the key", v, code, body)
		}
	}
}
