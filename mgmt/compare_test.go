package mgmt_test

import (
	"fmt"
	"net"
	"net/http/httptest"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/amqpsim/amqpsim/mgmt"
	"github.com/amqpsim/amqpsim/sim"
	"github.com/amqpsim/amqpsim/wire"
)

// newSimTarget serves a fresh broker's AMQP on loopback TCP and its
// management API on an httptest server.
func newSimTarget(t *testing.T) *target {
	t.Helper()
	// The recordings in testdata are RabbitMQ 3.10.8's: its version in
	// the overview and definitions, its refusal texts.
	b := sim.New(sim.Config{Version: sim.V3_10})
	ws := wire.NewServer(b)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = ws.Serve(ln) }()
	hs := httptest.NewServer(mgmt.NewHandler(b))
	t.Cleanup(func() {
		hs.Close()
		ws.Close()
	})
	return &target{t: t, httpURL: hs.URL, amqpURL: "amqp://guest:guest@" + ln.Addr().String() + "/"}
}

// varies are the keys whose values differ from one broker, node or run to
// the next (times, ports, memory, rates, hashes, statistics amqpsim does
// not keep): of them only the JSON type is compared.
var varies = map[string]bool{
	"node": true, "cluster_name": true, "leader": true, "members": true, "online": true, "open_files": true, "erlang_version": true, "erlang_full_version": true,
	"idle_since": true, "connected_at": true, "peer_port": true, "port": true,
	"memory": true, "reductions": true, "reductions_details": true, "garbage_collection": true,
	"backing_queue_status": true, "message_stats": true, "churn_rates": true,
	"messages_details": true, "messages_ready_details": true, "messages_unacknowledged_details": true,
	"recv_oct": true, "recv_oct_details": true, "send_oct": true, "send_oct_details": true,
	"recv_cnt": true, "send_cnt": true, "send_pend": true,
	"statistics_db_event_queue": true, "listeners": true, "contexts": true,
	"object_totals": true, "queue_totals": true, "cluster_state": true,
	"password_hash": true,
	// Who declared an exchange: amqpsim does not keep it.
	"user_who_performed_action": true,
	// RabbitMQ's connection statistics lag its channels (recorded: 0
	// while a channel was open).
	"channels": true,
	// RabbitMQ's hash of a binding's arguments (an Erlang term's phash2).
	"properties_key": true,
}

// deviations are the recorded answers amqpsim knowingly gives otherwise:
// only the status and the error name are compared.
var deviations = map[string]string{
	"errors#26": "policy validation texts are amqpsim's (sim.SetPolicy), not rabbit_policy's",
	"errors#27": "regular expression errors are Go's, not PCRE's",
	"errors#28": "apply-to validation text is amqpsim's",
	"users#35":  "regular expression errors are Go's, not PCRE's",
}

// nameShape is a connection's or channel's name, whose port varies.
var nameShape = regexp.MustCompile(`^[^ ]+:\d+ -> [^ ]+:\d+( \(\d+\))?$`)

func compareRecording(t *testing.T, want, got []exchange, ports []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%d exchanges, recorded %d", len(got), len(want))
	}
	scenario := strings.TrimPrefix(t.Name(), "TestAgreesWithRabbitMQ/")
	for i := range min(len(got), len(want)) {
		w, g := want[i], got[i]
		g.Response.Body = ours(g.Response.Body, ports)
		where := fmt.Sprintf("#%d %s %s", i, w.Request.Method, w.Request.Path)
		if g.Response.Status != w.Response.Status {
			t.Errorf("%s: status %d, RabbitMQ %d (body %v)", where, g.Response.Status, w.Response.Status, g.Response.Body)
			continue
		}
		for _, k := range []string{"content-type", "www-authenticate", "allow"} {
			if g.Response.Header[k] != w.Response.Header[k] {
				t.Errorf("%s: header %s %q, RabbitMQ %q", where, k, g.Response.Header[k], w.Response.Header[k])
			}
		}
		if _, dev := deviations[fmt.Sprintf("%s#%d", scenario, i)]; dev {
			wm, _ := w.Response.Body.(map[string]any)
			gm, _ := g.Response.Body.(map[string]any)
			if wm["error"] != gm["error"] {
				t.Errorf("%s: error %v, RabbitMQ %v", where, gm["error"], wm["error"])
			}
			continue
		}
		var diffs []string
		compareValue("body", w.Response.Body, g.Response.Body, &diffs)
		for _, d := range diffs {
			t.Errorf("%s: %s", where, d)
		}
	}
}

// compareValue compares a recorded JSON value with the handler's: every
// recorded key must be there, equal unless it varies (then of the same
// type); the handler may give keys RabbitMQ leaves out before its first
// statistics.
func compareValue(path string, want, got any, diffs *[]string) {
	switch w := want.(type) {
	case map[string]any:
		g, isMap := got.(map[string]any)
		if !isMap {
			*diffs = append(*diffs, fmt.Sprintf("%s: %v, RabbitMQ %v", path, got, want))
			return
		}
		keys := make([]string, 0, len(w))
		for k := range w {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			gv, has := g[k]
			switch {
			case !has:
				*diffs = append(*diffs, fmt.Sprintf("%s.%s missing (RabbitMQ %v)", path, k, w[k]))
			case varies[k]:
				if w[k] != nil && kind(w[k]) != kind(gv) {
					*diffs = append(*diffs, fmt.Sprintf("%s.%s: %v (%s), RabbitMQ %v (%s)", path, k, gv, kind(gv), w[k], kind(w[k])))
				}
			default:
				compareValue(path+"."+k, w[k], gv, diffs)
			}
		}
	case []any:
		g, isList := got.([]any)
		if !isList || len(g) != len(w) {
			*diffs = append(*diffs, fmt.Sprintf("%s: %v, RabbitMQ %v", path, got, want))
			return
		}
		for i := range w {
			compareValue(fmt.Sprintf("%s[%d]", path, i), w[i], g[i], diffs)
		}
	case string:
		if g, isString := got.(string); isString && nameShape.MatchString(w) && nameShape.MatchString(g) {
			return
		}
		if !reflect.DeepEqual(want, got) {
			*diffs = append(*diffs, fmt.Sprintf("%s: %#v, RabbitMQ %#v", path, got, want))
		}
	default:
		if !reflect.DeepEqual(want, got) {
			*diffs = append(*diffs, fmt.Sprintf("%s: %#v, RabbitMQ %#v", path, got, want))
		}
	}
}

func kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "object"
	case []any:
		return "list"
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "bool"
	}
	return fmt.Sprintf("%T", v)
}
