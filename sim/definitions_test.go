package sim

import (
	"encoding/json"
	"net/netip"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/amqpsim/amqpsim/definitions"
	"github.com/amqpsim/amqpsim/protocol"
)

// normalJSON decodes a definitions file to generic JSON with every list
// sorted, for comparing files whose lists RabbitMQ writes in hash order.
// RabbitMQ 3.10.8 writes a vhost without tags as "tags": "" and one with
// none as []; both mean none.
func normalJSON(t *testing.T, data []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	// RabbitMQ 3.10.8 exports an operator policy's definition as [key,
	// value] pairs, amqpsim as the object RabbitMQ's import wants.
	for _, p := range m["parameters"].([]any) {
		value := p.(map[string]any)["value"].(map[string]any)
		if pairs, ok := value["definition"].([]any); ok {
			obj := map[string]any{}
			for _, kv := range pairs {
				obj[kv.([]any)[0].(string)] = kv.([]any)[1]
			}
			value["definition"] = obj
		}
	}
	for _, v := range m["vhosts"].([]any) {
		md := v.(map[string]any)["metadata"].(map[string]any)
		if md["tags"] == "" {
			md["tags"] = []any{}
		}
	}
	for k, v := range m {
		l, ok := v.([]any)
		if !ok {
			continue
		}
		slices.SortFunc(l, func(a, b any) int {
			ja, _ := json.Marshal(a)
			jb, _ := json.Marshal(b)
			return strings.Compare(string(ja), string(jb))
		})
		m[k] = l
	}
	return m
}

// TestDefinitionsRoundTrip loads a file exported from RabbitMQ 3.10.8
// (rabbitmqctl export_definitions after creating a vhost, a user with
// tags, permissions, topic permissions, a policy, an operator policy,
// classic and quorum queues with arguments, exchanges and bindings; names
// changed) and exports it back: the same definitions, and the imported
// password hashes log in.
func TestDefinitionsRoundTrip(t *testing.T) {
	data, err := os.ReadFile("testdata/definitions-3.10.8.json")
	if err != nil {
		t.Fatal(err)
	}
	defs, err := definitions.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	// The file is 3.10.8's, rabbit_version and all: export it from the
	// release it came from.
	b, err := Open(Config{Version: V3_10, Definitions: defs})
	if err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(b.ExportDefinitions())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(normalJSON(t, data), normalJSON(t, out)); diff != "" {
		t.Fatalf("export differs from the imported file (-RabbitMQ +amqpsim):\n%s", diff)
	}
	if _, err := b.Authenticate("app", "s3cret", netip.MustParseAddr("192.0.2.2")); err != nil {
		t.Fatalf("app cannot log in with its imported hash: %v", err)
	}
	c, err := b.Dial(ConnectOptions{User: "app", Password: "s3cret", Vhost: "app-vhost"})
	if err != nil {
		t.Fatal(err)
	}
	ch, _ := c.Channel()
	// The operator policy caps app.dead at 1000 messages, the policy gives
	// app.ttl.retry's messages a 60 s TTL, beside its own 5 s: 5 s wins.
	if err := ch.Publish("app.events", "orders.new", PublishOptions{}, Message{Body: []byte("o1")}); err != nil {
		t.Fatal(err)
	}
	if st, _ := b.QueueStats("app-vhost", "app.orders"); st.Ready != 1 {
		t.Fatalf("app.orders after a publish through the imported binding: %+v", st)
	}
	// Topic permissions came along: app may publish only orders.* to amq.topic.
	if err := ch.Publish("amq.topic", "billing.x", PublishOptions{}, Message{}); err == nil {
		t.Fatal("the imported topic permission did not apply")
	}
}

// TestImportIsAtomic: one bad entry fails the import with an error naming
// it, and nothing of the file is applied.
func TestImportIsAtomic(t *testing.T) {
	for _, tc := range []struct {
		name, file, want string
	}{
		{"bad ttl", `{"vhosts":[{"name":"v"}],"queues":[
			{"name":"q2","vhost":"v","durable":true,"auto_delete":false,"arguments":{}},
			{"name":"q3","vhost":"v","durable":true,"auto_delete":false,"arguments":{"x-message-ttl":-1}}]}`,
			`queues[1] "q3": PRECONDITION_FAILED - invalid arg 'x-message-ttl'`},
		{"bad policy", `{"vhosts":[{"name":"v"}],"policies":[{"vhost":"v","name":"p1","pattern":"^q","apply-to":"queues","definition":{"message-ttl":-5},"priority":0}]}`,
			`policies[0] "p1": policy "p1": invalid value -5 for "message-ttl"`},
		{"unknown component", `{"vhosts":[{"name":"v"}],"parameters":[{"vhost":"v","component":"federation-upstream","name":"up1","value":{"uri":"amqp://x"}}]}`,
			`parameters[0] "up1": component federation-upstream not found`},
		{"missing vhost", `{"queues":[{"name":"q5","vhost":"nosuch","durable":true,"auto_delete":false,"arguments":{}}]}`,
			`queues[0] "q5": vhost 'nosuch' does not exist`},
		{"bad regex", `{"vhosts":[{"name":"v"}],"permissions":[{"user":"guest","vhost":"v","configure":"(","write":".*","read":".*"}]}`,
			`permissions[0] "guest": configure permission: invalid regular expression '('`},
		{"bad hash", `{"users":[{"name":"x","password_hash":"!!","hashing_algorithm":"rabbit_password_hashing_sha256","tags":[]}]}`,
			`users[0] "x": user "x": password_hash is not base64`},
		{"bad exchange type", `{"exchanges":[{"name":"x","vhost":"/","type":"x-delayed-message","durable":true,"auto_delete":false,"arguments":{}}]}`,
			`exchanges[0] "x": unknown exchange type 'x-delayed-message'`},
		// Valid users first, then a bad one: neither valid user is left.
		{"valid users before a bad one", `{"users":[
			{"name":"alice","password":"a","tags":["administrator"]},
			{"name":"bob","password":"b","tags":[]},
			{"name":"eve","password_hash":"!!","hashing_algorithm":"rabbit_password_hashing_sha256","tags":[]}]}`,
			`users[2] "eve": user "eve": password_hash is not base64`},
		// Valid users, then a bad entry of another kind.
		{"valid users before a bad permission", `{"users":[{"name":"alice","password":"a","tags":[]}],"vhosts":[{"name":"v"}],
			"permissions":[{"user":"alice","vhost":"v","configure":"(","write":".*","read":".*"}]}`,
			`permissions[0] "alice": configure permission: invalid regular expression '('`},
	} {
		b := New(Config{})
		before, _ := json.Marshal(b.ExportDefinitions())
		defs, err := definitions.Parse([]byte(tc.file))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		err = b.ImportDefinitions(defs)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error containing %s", tc.name, err, tc.want)
		}
		after, _ := json.Marshal(b.ExportDefinitions())
		if string(before) != string(after) {
			t.Errorf("%s: a failed import changed the broker:\n%s\n%s", tc.name, before, after)
		}
	}
}

// TestImportLikeRabbitMQ pins what RabbitMQ 3.10.8 did with odd files:
// unknown keys are ignored; an existing queue is kept as it is, even when
// the file declares it otherwise; a binding from a missing exchange is
// skipped without an error.
func TestImportLikeRabbitMQ(t *testing.T) {
	b := New(Config{})
	c := b.Connect("c")
	ch, _ := c.Channel()
	if _, err := ch.QueueDeclare("q1", QueueOptions{Durable: true}); err != nil {
		t.Fatal(err)
	}
	defs, err := definitions.Parse([]byte(`{"bogus_top":[1],
		"queues":[{"name":"q1","vhost":"/","durable":false,"auto_delete":false,"arguments":{},"bogus_key":3}],
		"bindings":[{"source":"nosuchx","vhost":"/","destination":"q1","destination_type":"queue","routing_key":"k","arguments":{}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.ImportDefinitions(defs); err != nil {
		t.Fatal(err)
	}
	e := b.ExportDefinitions()
	if len(e.Queues) != 1 || !e.Queues[0].Durable || len(e.Bindings) != 0 {
		t.Fatalf("queues %+v bindings %+v", e.Queues, e.Bindings)
	}
}

// FuzzImportDefinitions: any input is an error or an import, never a
// panic, and a failed import changes nothing.
func FuzzImportDefinitions(f *testing.F) {
	data, err := os.ReadFile("testdata/definitions-3.10.8.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add([]byte(`{"parameters":[{"vhost":"/","component":"operator_policy","name":"p","value":{"pattern":"^","definition":[["max-length",1]]}}]}`))
	f.Add([]byte(`{"bindings":[{"source":"amq.headers","vhost":"/","destination":"amq.fanout","destination_type":"exchange","arguments":{"x-match":"nope"}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		defs, err := definitions.Parse(data)
		if err != nil {
			return
		}
		b := New(Config{})
		before, _ := json.Marshal(b.ExportDefinitions())
		if err := b.ImportDefinitions(defs); err != nil {
			after, _ := json.Marshal(b.ExportDefinitions())
			if string(before) != string(after) {
				t.Fatalf("a failed import (%v) changed the broker", err)
			}
			return
		}
		if _, err := json.Marshal(b.ExportDefinitions()); err != nil {
			t.Fatal(err)
		}
	})
}

// An imported queue is made as a declared one is: under the broker's
// profile (4.0's default quorum delivery limit) and with its type's
// rules (a stream refuses basic.get).
func TestImportedQueueIsDeclaredQueue(t *testing.T) {
	b := New(Config{Version: V4_0})
	ch, _ := b.Connect("c").Channel()
	quorum := QueueOptions{Durable: true, Args: Table{"x-queue-type": "quorum"}}
	if _, err := ch.QueueDeclare("declared", quorum); err != nil {
		t.Fatal(err)
	}
	defs, err := definitions.Parse([]byte(`{"queues":[
		{"name":"imported","vhost":"/","durable":true,"auto_delete":false,"arguments":{"x-queue-type":"quorum"}},
		{"name":"s","vhost":"/","durable":true,"auto_delete":false,"arguments":{"x-queue-type":"stream"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.ImportDefinitions(defs); err != nil {
		t.Fatal(err)
	}
	gets := func(name string) int {
		if err := b.Publish("/", "", name, Message{Body: []byte("m")}); err != nil {
			t.Fatal(err)
		}
		for n := range 100 {
			d, ok, err := ch.Get(name, false)
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				return n
			}
			if err := ch.Reject(d.DeliveryTag, true); err != nil {
				t.Fatal(err)
			}
		}
		return 100
	}
	if d, i := gets("declared"), gets("imported"); d != i || d == 100 {
		t.Errorf("gets until the delivery limit dropped the message: declared %d, imported %d", d, i)
	}
	_, _, err = ch.Get("s", false)
	want := "NOT_IMPLEMENTED - basic.get not supported by stream queues queue 's' in vhost '/'"
	if perr, ok := err.(*protocol.Error); !ok || perr.Text != want {
		t.Errorf("basic.get of an imported stream: %v, want %q", err, want)
	}
}

// TestImportTopicHashLimit: 4.3 refuses a definitions file whose topic
// binding key holds three '#' words, as rabbitmqctl import_definitions
// and POST /api/definitions on 4.3.6 do ({binding_invalid,"Topic binding
// key '~ts' uses ~b '#' wildcards, at most ~b are allowed",[<<"#.a.#.#">>,
// 3,2]}, measured twice each; RabbitMQ leaves the queue it declared
// before the binding, amqpsim's import is atomic); 3.10.8 and 4.0.5
// import it (measured the same ways), and two '#' are fine on 4.3.
func TestImportTopicHashLimit(t *testing.T) {
	file := func(key string) *definitions.File {
		d, err := definitions.Parse([]byte(`{"exchanges":[{"name":"tx","vhost":"/","type":"topic","durable":true,"auto_delete":false,"internal":false,"arguments":{}}],
			"queues":[{"name":"q","vhost":"/","durable":true,"auto_delete":false,"arguments":{}}],
			"bindings":[{"source":"tx","vhost":"/","destination":"q","destination_type":"queue","routing_key":"` + key + `","arguments":{}}]}`))
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	for _, tc := range []struct {
		v       Version
		key     string
		refused bool
	}{{V3_10, "#.a.#.#", false}, {V4_0, "#.a.#.#", false}, {V4_3, "#.a.#.#", true}, {V4_3, "#.a.#", false}} {
		b := New(Config{Version: tc.v})
		err := b.ImportDefinitions(file(tc.key))
		if refused := err != nil; refused != tc.refused {
			t.Errorf("%v, key %q: import error %v, want refused %t", tc.v, tc.key, err, tc.refused)
			continue
		}
		if tc.refused {
			if want := "Topic binding key '#.a.#.#' uses 3 '#' wildcards, at most 2 are allowed"; !strings.Contains(err.Error(), want) {
				t.Errorf("%v: %v, want it to say %q", tc.v, err, want)
			}
			if _, err := b.QueueStats("/", "q"); err == nil {
				t.Errorf("%v: the refused import declared its queue", tc.v)
			}
			continue
		}
		bds, _ := b.Bindings("/")
		if !slices.ContainsFunc(bds, func(d BindingDetails) bool { return d.Source == "tx" && d.RoutingKey == tc.key }) {
			t.Errorf("%v: key %q not bound: %+v", tc.v, tc.key, bds)
		}
	}
}
