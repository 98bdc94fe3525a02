package mgmt_test

import (
	"fmt"
	"net/url"
	"strings"

	amqp "github.com/rabbitmq/amqp091-go"
)

// scenario is one recorded sequence. Everything it creates on the broker
// is named mgmt-rec-* and deleted by its last steps.
type scenario struct {
	name string
	run  func(tg *target)
}

var scenarios = []scenario{
	{name: "errors", run: scenarioErrors},
	{name: "queues", run: scenarioQueues},
	{name: "exchanges", run: scenarioExchanges},
	{name: "connections", run: scenarioConnections},
	{name: "policies", run: scenarioPolicies},
	{name: "health", run: scenarioHealth},
	{name: "users", run: scenarioUsers},
	{name: "definitions", run: scenarioDefinitions},
	{name: "vhosts", run: scenarioVhosts},
	{name: "access", run: scenarioAccess},
	{name: "connection-access", run: scenarioConnectionAccess},
	{name: "long-names", run: scenarioLongNames},
	{name: "blank-password", run: scenarioBlankPassword},
}

// scenarioErrors: authentication, unknown paths and methods, bad bodies.
func scenarioErrors(tg *target) {
	tg.do("GET", "/api/overview", "", "")
	tg.do("GET", "/api/overview", "guest:wrong", "")
	tg.do("GET", "/api/overview", "mgmt-rec-nobody:x", "")
	tg.do("POST", "/api/overview", guest, "")
	tg.do("DELETE", "/api/queues", guest, "")
	tg.do("GET", "/api/mgmt-rec-nonexistent", guest, "")
	tg.do("GET", "/api/queues/%2F/mgmt-rec-none", guest, "")
	tg.do("GET", "/api/queues/mgmt-rec-novhost", guest, "")
	tg.do("GET", "/api/queues/mgmt-rec-novhost/q", guest, "")
	tg.do("DELETE", "/api/queues/%2F/mgmt-rec-none", guest, "")
	tg.do("PUT", "/api/queues/%2F/mgmt-rec-e1", guest, "{bad")
	tg.do("PUT", "/api/queues/%2F/mgmt-rec-e1", guest, `{"durable":"yes"}`)
	tg.do("PUT", "/api/queues/%2F/mgmt-rec-e1", guest, `[1,2]`)
	tg.do("PUT", "/api/queues/%2F/mgmt-rec-e1", guest, `{"arguments":{"x-message-ttl":-1}}`)
	tg.do("PUT", "/api/queues/%2F/mgmt-rec-e1", guest, `{"arguments":{"x-queue-type":"nonsense"}}`)
	tg.do("PUT", "/api/queues/%2F/mgmt-rec-e1", guest, `{"arguments":"none"}`)
	tg.do("PUT", "/api/queues/mgmt-rec-novhost/q", guest, `{}`)
	tg.do("POST", "/api/queues/%2F/mgmt-rec-none/get", guest, `{"count":1,"ackmode":"ack_requeue_true","encoding":"auto"}`)
	tg.do("DELETE", "/api/queues/%2F/mgmt-rec-none/contents", guest, "")
	tg.do("GET", "/api/exchanges/%2F/mgmt-rec-none", guest, "")
	tg.do("PUT", "/api/exchanges/%2F/mgmt-rec-e1", guest, `{}`)
	tg.do("PUT", "/api/exchanges/%2F/mgmt-rec-e1", guest, `{"type":"nonsense"}`)
	tg.do("DELETE", "/api/exchanges/%2F/mgmt-rec-none", guest, "")
	tg.do("GET", "/api/connections/mgmt-rec-none", guest, "")
	tg.do("DELETE", "/api/connections/mgmt-rec-none", guest, "")
	tg.do("PUT", "/api/policies/%2F/mgmt-rec-p", guest, `{"pattern":"x"}`)
	tg.do("PUT", "/api/policies/%2F/mgmt-rec-p", guest, `{"pattern":"x","definition":{"message-ttl":-1}}`)
	tg.do("PUT", "/api/policies/%2F/mgmt-rec-p", guest, `{"pattern":"(","definition":{"message-ttl":1}}`)
	tg.do("PUT", "/api/policies/%2F/mgmt-rec-p", guest, `{"pattern":"x","definition":{"max-length":1},"apply-to":"nonsense"}`)
	tg.do("GET", "/api/policies/%2F/mgmt-rec-none", guest, "")
	tg.do("DELETE", "/api/policies/%2F/mgmt-rec-none", guest, "")
	tg.do("GET", "/api/aliveness-test/mgmt-rec-novhost", guest, "")
	tg.do("DELETE", "/api/exchanges/%2F/mgmt-rec-e1", guest, "")
}

// scenarioQueues: declare, inspect, get, purge and delete a queue.
func scenarioQueues(tg *target) {
	const q = "/api/queues/%2F/mgmt-rec-q1"
	tg.do("PUT", q, guest, `{"durable":true,"auto_delete":false,"arguments":{"x-max-length":10}}`)
	tg.do("PUT", q, guest, `{"durable":true,"auto_delete":false,"arguments":{"x-max-length":10}}`)
	tg.do("PUT", q, guest, `{"durable":false}`)
	tg.do("PUT", q, guest, `{"durable":true,"unknown-field":1,"arguments":{"x-max-length":10}}`)

	c := tg.connect("mgmt-rec-pub")
	ch, err := c.Channel()
	if err != nil {
		tg.t.Fatal(err)
	}
	for i, body := range []string{"one", "two", "three"} {
		p := amqp.Publishing{Body: []byte(body), ContentType: "text/plain", DeliveryMode: 2,
			Headers: amqp.Table{"n": int32(i)}, MessageId: fmt.Sprint("id", i)}
		if err := ch.Publish("", "mgmt-rec-q1", false, false, p); err != nil {
			tg.t.Fatal(err)
		}
	}
	if err := c.Close(); err != nil {
		tg.t.Fatal(err)
	}
	tg.settle()
	tg.do("GET", q, guest, "")
	tg.do("GET", "/api/queues", guest, "")
	tg.do("GET", "/api/queues/%2F", guest, "")
	tg.do("POST", q+"/get", guest, `{"count":2,"ackmode":"ack_requeue_true","encoding":"auto","truncate":50000}`)
	tg.do("POST", q+"/get", guest, `{"count":1,"ackmode":"ack_requeue_false","encoding":"base64"}`)
	tg.do("POST", q+"/get", guest, `{"count":1,"ackmode":"reject_requeue_true","encoding":"auto","truncate":2}`)
	tg.do("POST", q+"/get", guest, `{"count":1,"ackmode":"nonsense","encoding":"auto"}`)
	tg.do("POST", q+"/get", guest, `{"count":1,"ackmode":"ack_requeue_true","encoding":"nonsense"}`)
	tg.do("POST", q+"/get", guest, `{"count":1}`)
	tg.do("POST", q+"/get", guest, `{bad`)
	tg.settle()
	tg.do("GET", q, guest, "")
	tg.do("DELETE", q+"/contents", guest, "")
	tg.settle()
	tg.do("GET", q, guest, "")
	tg.do("DELETE", q, guest, "")
	tg.do("GET", q, guest, "")
	tg.do("DELETE", q, guest, "")
}

// scenarioExchanges: the predeclared exchanges, declaring, binding and
// deleting one.
func scenarioExchanges(tg *target) {
	tg.do("GET", "/api/exchanges", guest, "")
	tg.do("GET", "/api/exchanges/%2F", guest, "")
	tg.do("GET", "/api/exchanges/%2F/amq.direct", guest, "")
	tg.do("GET", "/api/exchanges/%2F/amq.default", guest, "")
	tg.do("PUT", "/api/exchanges/%2F/mgmt-rec-x1", guest, `{"type":"fanout","durable":false,"auto_delete":false,"internal":false,"arguments":{}}`)
	tg.do("PUT", "/api/exchanges/%2F/mgmt-rec-x1", guest, `{"type":"fanout","durable":false}`)
	tg.do("PUT", "/api/exchanges/%2F/mgmt-rec-x1", guest, `{"type":"direct","durable":false}`)
	tg.do("PUT", "/api/queues/%2F/mgmt-rec-xq", guest, `{"durable":false}`)
	c := tg.connect("mgmt-rec-bind")
	ch, err := c.Channel()
	if err != nil {
		tg.t.Fatal(err)
	}
	if err := ch.QueueBind("mgmt-rec-xq", "k1", "mgmt-rec-x1", false, amqp.Table{"a": "b"}); err != nil {
		tg.t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		tg.t.Fatal(err)
	}
	tg.settle()
	tg.do("GET", "/api/exchanges/%2F/mgmt-rec-x1", guest, "")
	tg.do("GET", "/api/bindings", guest, "")
	tg.do("GET", "/api/bindings/%2F", guest, "")
	tg.do("GET", "/api/queues/%2F/mgmt-rec-xq/bindings", guest, "")
	tg.do("DELETE", "/api/exchanges/%2F/mgmt-rec-x1", guest, "")
	tg.do("GET", "/api/bindings/%2F", guest, "")
	tg.do("DELETE", "/api/exchanges/%2F/amq.direct", guest, "")
	tg.do("DELETE", "/api/queues/%2F/mgmt-rec-xq", guest, "")
}

// scenarioConnections: list connections, channels and consumers, and
// close connections by name, with and without X-Reason.
func scenarioConnections(tg *target) {
	c := tg.connect("mgmt-rec-c1")
	ch, err := c.Channel()
	if err != nil {
		tg.t.Fatal(err)
	}
	if err := ch.Qos(5, 0, false); err != nil {
		tg.t.Fatal(err)
	}
	if _, err := ch.QueueDeclare("mgmt-rec-cq", false, true, false, false, nil); err != nil {
		tg.t.Fatal(err)
	}
	if _, err := ch.Consume("mgmt-rec-cq", "mgmt-rec-ctag", false, false, false, false, nil); err != nil {
		tg.t.Fatal(err)
	}
	tg.settle()
	tg.do("GET", "/api/connections", guest, "")
	name := tg.connName("mgmt-rec-c1")
	tg.do("GET", "/api/connections/"+name, guest, "")
	tg.do("GET", "/api/connections/"+name+"/channels", guest, "")
	tg.do("GET", "/api/channels", guest, "")
	tg.do("GET", "/api/consumers", guest, "")
	tg.do("GET", "/api/consumers/%2F", guest, "")
	tg.do("GET", "/api/queues/%2F/mgmt-rec-cq", guest, "")
	closed := c.NotifyClose(make(chan *amqp.Error, 1))
	tg.do("DELETE", "/api/connections/"+name, guest, "", "X-Reason", "mgmt-rec closing it")
	tg.note("close of mgmt-rec-c1", tg.closeNote(closed))

	c2 := tg.connect("mgmt-rec-c2")
	tg.settle()
	name2 := tg.connName("mgmt-rec-c2")
	closed2 := c2.NotifyClose(make(chan *amqp.Error, 1))
	tg.do("DELETE", "/api/connections/"+name2, guest, "")
	tg.note("close of mgmt-rec-c2", tg.closeNote(closed2))
	tg.settle()
	tg.do("GET", "/api/connections/"+name2, guest, "")
	tg.do("GET", "/api/queues/%2F/mgmt-rec-cq", guest, "")
}

// scenarioPolicies: a policy set, shown on the queue it matches, cleared.
func scenarioPolicies(tg *target) {
	const p = "/api/policies/%2F/mgmt-rec-p1"
	tg.do("PUT", p, guest, `{"pattern":"^mgmt-rec-pq","definition":{"max-length":2,"message-ttl":60000},"priority":1,"apply-to":"queues"}`)
	tg.do("PUT", p, guest, `{"pattern":"^mgmt-rec-pq","definition":{"max-length":3},"priority":2,"apply-to":"queues"}`)
	tg.do("GET", p, guest, "")
	tg.do("GET", "/api/policies", guest, "")
	tg.do("GET", "/api/policies/%2F", guest, "")
	tg.do("PUT", "/api/queues/%2F/mgmt-rec-pq1", guest, `{"durable":false,"arguments":{"x-max-length":5}}`)
	tg.settle()
	tg.do("GET", "/api/queues/%2F/mgmt-rec-pq1", guest, "")
	tg.do("DELETE", p, guest, "")
	tg.do("GET", p, guest, "")
	tg.settle()
	tg.do("GET", "/api/queues/%2F/mgmt-rec-pq1", guest, "")
	tg.do("DELETE", "/api/queues/%2F/mgmt-rec-pq1", guest, "")
}

// scenarioHealth: the health checks and the overview.
func scenarioHealth(tg *target) {
	tg.do("GET", "/api/aliveness-test/%2F", guest, "")
	tg.do("GET", "/api/health/checks/alarms", guest, "")
	tg.do("POST", "/api/health/checks/alarms", guest, "")
	tg.do("GET", "/api/overview", guest, "")
	tg.do("GET", "/api/vhosts", guest, "")
	tg.do("GET", "/api/vhosts/%2F", guest, "")
	tg.do("GET", "/api/users", guest, "")
	tg.do("GET", "/api/users/guest", guest, "")
	tg.do("GET", "/api/permissions", guest, "")
	tg.do("GET", "/api/whoami", guest, "")
}

// connName returns the path segment of the connection whose client named
// it clientName, as RabbitMQ names it ("127.0.0.1:PORT -> 127.0.0.1:5672",
// escaped); it is not recorded, as the client's port varies.
func (tg *target) connName(clientName string) string {
	tg.t.Helper()
	n := len(tg.got)
	ex := tg.do("GET", "/api/connections", guest, "")
	tg.got = tg.got[:n]
	list, _ := ex.Response.Body.([]any)
	for _, e := range list {
		m, _ := e.(map[string]any)
		props, _ := m["client_properties"].(map[string]any)
		if props["connection_name"] == clientName {
			s, _ := m["name"].(string)
			return url.PathEscape(s)
		}
	}
	tg.t.Fatalf("no connection named %s in %v", clientName, ex.Response.Body)
	return ""
}

// scenarioUsers: management tags and permissions decide what a user may
// see and do.
func scenarioUsers(tg *target) {
	const none, mon, man, pol = "mgmt-rec-none:pw", "mgmt-rec-mon:pw", "mgmt-rec-man:pw", "mgmt-rec-pol:pw"
	tg.do("PUT", "/api/users/mgmt-rec-none", guest, `{"password":"pw","tags":""}`)
	tg.do("PUT", "/api/users/mgmt-rec-mon", guest, `{"password":"pw","tags":"monitoring"}`)
	tg.do("PUT", "/api/users/mgmt-rec-man", guest, `{"password":"pw","tags":"management"}`)
	tg.do("PUT", "/api/users/mgmt-rec-pol", guest, `{"password":"pw","tags":"policymaker"}`)
	tg.do("PUT", "/api/permissions/%2F/mgmt-rec-none", guest, `{"configure":".*","write":".*","read":".*"}`)
	tg.do("PUT", "/api/permissions/%2F/mgmt-rec-mon", guest, `{"configure":".*","write":".*","read":".*"}`)
	tg.do("PUT", "/api/permissions/%2F/mgmt-rec-man", guest, `{"configure":"^mgmt-rec-own","write":".*","read":".*"}`)
	tg.do("PUT", "/api/permissions/%2F/mgmt-rec-pol", guest, `{"configure":".*","write":".*","read":".*"}`)
	tg.do("GET", "/api/users/mgmt-rec-mon", guest, "")
	tg.do("GET", "/api/users/mgmt-rec-mon/permissions", guest, "")
	tg.do("GET", "/api/permissions/%2F/mgmt-rec-man", guest, "")
	tg.do("GET", "/api/whoami", mon, "")
	tg.do("GET", "/api/overview", none, "")
	tg.do("GET", "/api/whoami", none, "")
	tg.do("GET", "/api/queues", none, "")
	tg.do("GET", "/api/users", mon, "")
	tg.do("GET", "/api/users", man, "")
	tg.do("GET", "/api/permissions", mon, "")
	tg.do("GET", "/api/vhosts", man, "")
	tg.do("PUT", "/api/queues/%2F/mgmt-rec-own1", man, `{"durable":false}`)
	tg.do("PUT", "/api/queues/%2F/mgmt-rec-other", man, `{"durable":false}`)
	tg.do("PUT", "/api/queues/%2F/mgmt-rec-other", mon, `{"durable":false}`)
	tg.do("GET", "/api/queues/%2F/mgmt-rec-other", man, "")
	tg.do("DELETE", "/api/queues/%2F/mgmt-rec-other", man, "")
	tg.do("DELETE", "/api/queues/%2F/mgmt-rec-other", guest, "")
	tg.do("PUT", "/api/policies/%2F/mgmt-rec-p2", man, `{"pattern":"^mgmt-rec-own","definition":{"max-length":1}}`)
	tg.do("PUT", "/api/policies/%2F/mgmt-rec-p2", pol, `{"pattern":"^mgmt-rec-own","definition":{"max-length":1}}`)
	tg.do("GET", "/api/policies/%2F", man, "")
	tg.do("DELETE", "/api/policies/%2F/mgmt-rec-p2", pol, "")
	tg.do("GET", "/api/aliveness-test/%2F", man, "")
	tg.do("GET", "/api/health/checks/alarms", man, "")
	tg.do("GET", "/api/definitions", man, "")
	tg.do("DELETE", "/api/queues/%2F/mgmt-rec-own1", man, "")
	tg.do("PUT", "/api/users/mgmt-rec-bad", guest, `{bad`)
	tg.do("PUT", "/api/users/mgmt-rec-bad", guest, `{"tags":7}`)
	tg.do("PUT", "/api/permissions/%2F/mgmt-rec-mon", guest, `{"configure":"(","write":".*","read":".*"}`)
	tg.do("PUT", "/api/permissions/mgmt-rec-novhost/mgmt-rec-mon", guest, `{"configure":".*","write":".*","read":".*"}`)
	tg.do("PUT", "/api/permissions/%2F/mgmt-rec-nouser", guest, `{"configure":".*","write":".*","read":".*"}`)
	for _, u := range []string{"none", "mon", "man", "pol"} {
		tg.do("DELETE", "/api/permissions/%2F/mgmt-rec-"+u, guest, "")
		tg.do("DELETE", "/api/users/mgmt-rec-"+u, guest, "")
	}
	tg.do("GET", "/api/users/mgmt-rec-mon", guest, "")
	tg.do("DELETE", "/api/users/mgmt-rec-mon", guest, "")
}

// scenarioDefinitions: export, and an import that declares a topology.
func scenarioDefinitions(tg *target) {
	tg.do("GET", "/api/definitions", guest, "")
	tg.do("GET", "/api/definitions/%2F", guest, "")
	tg.do("POST", "/api/definitions", guest, jsonBody(map[string]any{
		"queues": []any{map[string]any{"name": "mgmt-rec-dq", "vhost": "/", "durable": true, "auto_delete": false,
			"arguments": map[string]any{"x-message-ttl": 60000}}},
		"exchanges": []any{map[string]any{"name": "mgmt-rec-dx", "vhost": "/", "type": "topic", "durable": true,
			"auto_delete": false, "internal": false, "arguments": map[string]any{}}},
		"bindings": []any{map[string]any{"source": "mgmt-rec-dx", "vhost": "/", "destination": "mgmt-rec-dq",
			"destination_type": "queue", "routing_key": "a.#", "arguments": map[string]any{}}},
	}))
	tg.do("GET", "/api/definitions", guest, "")
	tg.do("POST", "/api/definitions", guest, `{bad`)
	tg.do("DELETE", "/api/exchanges/%2F/mgmt-rec-dx", guest, "")
	tg.do("DELETE", "/api/queues/%2F/mgmt-rec-dq", guest, "")
}

// scenarioVhosts: a vhost created, used and deleted through the API; a
// user without permissions in a vhost; an exclusive and a quorum queue.
func scenarioVhosts(tg *target) {
	const v = "/api/vhosts/mgmt-rec-v1"
	tg.do("PUT", v, guest, `{"description":"made by mgmt-rec","tags":"a,b"}`)
	tg.do("PUT", v, guest, `{"description":"changed"}`)
	tg.do("GET", v, guest, "")
	tg.do("GET", "/api/permissions/mgmt-rec-v1/guest", guest, "")
	tg.do("GET", "/api/exchanges/mgmt-rec-v1", guest, "")
	tg.do("GET", "/api/queues/mgmt-rec-v1", guest, "")
	tg.do("PUT", "/api/queues/mgmt-rec-v1/mgmt-rec-vq", guest, `{"durable":false}`)
	tg.do("PUT", "/api/users/mgmt-rec-nov", guest, `{"password":"pw","tags":"management"}`)
	tg.do("GET", "/api/queues/mgmt-rec-v1", "mgmt-rec-nov:pw", "")
	tg.do("GET", "/api/queues/mgmt-rec-v1/mgmt-rec-vq", "mgmt-rec-nov:pw", "")
	tg.do("PUT", "/api/queues/mgmt-rec-v1/mgmt-rec-vq2", "mgmt-rec-nov:pw", `{}`)
	tg.do("GET", "/api/vhosts", "mgmt-rec-nov:pw", "")
	tg.do("GET", v, "mgmt-rec-nov:pw", "")
	tg.do("DELETE", "/api/users/mgmt-rec-nov", guest, "")
	tg.do("DELETE", v, guest, "")
	tg.do("GET", v, guest, "")
	tg.do("DELETE", v, guest, "")
	tg.do("GET", "/api/queues/mgmt-rec-v1", guest, "")

	c := tg.connect("mgmt-rec-ex")
	ch, err := c.Channel()
	if err != nil {
		tg.t.Fatal(err)
	}
	if _, err := ch.QueueDeclare("mgmt-rec-exq", false, false, true, false, nil); err != nil {
		tg.t.Fatal(err)
	}
	tg.do("PUT", "/api/queues/%2F/mgmt-rec-qq", guest, `{"durable":true,"arguments":{"x-queue-type":"quorum"}}`)
	tg.settle()
	tg.do("GET", "/api/queues/%2F/mgmt-rec-exq", guest, "")
	tg.do("DELETE", "/api/queues/%2F/mgmt-rec-exq", guest, "")
	tg.do("GET", "/api/queues/%2F/mgmt-rec-qq", guest, "")
	tg.do("DELETE", "/api/queues/%2F/mgmt-rec-qq", guest, "")
	if err := c.Close(); err != nil {
		tg.t.Fatal(err)
	}
}

// scenarioAccess: what monitoring, policymaker and management users may
// read and change in a vhost they have no permissions in
// (rabbit_mgmt_util:is_authorized_vhost, is_authorized_policies,
// filter_vhost: monitoring widens only the vhost, connection, channel and
// consumer listings).
func scenarioAccess(tg *target) {
	const mon, monpol, man = "mgmt-rec-amon:pw", "mgmt-rec-amonpol:pw", "mgmt-rec-aman:pw"
	tg.accessSetup()
	for _, u := range []string{mon, monpol, man} {
		tg.do("GET", "/api/vhosts/mgmt-rec-va", u, "")
		tg.do("GET", "/api/vhosts/%2F", u, "")
		tg.do("GET", "/api/queues", u, "")
		tg.do("GET", "/api/queues/mgmt-rec-va", u, "")
		tg.do("GET", "/api/queues/mgmt-rec-va/mgmt-rec-aq", u, "")
		tg.do("GET", "/api/queues/mgmt-rec-va/mgmt-rec-aq/bindings", u, "")
		tg.do("GET", "/api/exchanges/mgmt-rec-va", u, "")
		tg.do("GET", "/api/exchanges/mgmt-rec-va/mgmt-rec-ax", u, "")
		tg.do("GET", "/api/bindings", u, "")
		tg.do("GET", "/api/bindings/mgmt-rec-va", u, "")
		tg.do("GET", "/api/consumers", u, "")
		tg.do("GET", "/api/consumers/mgmt-rec-va", u, "")
		tg.do("GET", "/api/policies", u, "")
		tg.do("GET", "/api/policies/mgmt-rec-va", u, "")
		tg.do("GET", "/api/policies/mgmt-rec-va/mgmt-rec-ap", u, "")
		tg.do("GET", "/api/aliveness-test/mgmt-rec-va", u, "")
		tg.do("PUT", "/api/queues/mgmt-rec-va/mgmt-rec-aq2", u, `{"durable":false}`)
		tg.do("DELETE", "/api/queues/mgmt-rec-va/mgmt-rec-aq/contents", u, "")
		tg.do("POST", "/api/queues/mgmt-rec-va/mgmt-rec-aq/get", u, `{"count":1,"ackmode":"ack_requeue_true","encoding":"auto"}`)
		tg.do("DELETE", "/api/queues/mgmt-rec-va/mgmt-rec-aq", u, "")
		tg.do("DELETE", "/api/exchanges/mgmt-rec-va/mgmt-rec-ax", u, "")
		tg.do("PUT", "/api/policies/mgmt-rec-va/mgmt-rec-ap2", u, `{"pattern":"^mgmt-rec-zz","definition":{"max-length":1}}`)
		tg.do("DELETE", "/api/policies/mgmt-rec-va/mgmt-rec-ap", u, "")
		// A vhost that does not exist is the resource's 404, not a
		// refusal (rabbit_mgmt_util:user_matches_vhost passes
		// not_found); a policy still needs the policymaker tag first.
		tg.do("GET", "/api/queues/mgmt-rec-vnone", u, "")
		tg.do("GET", "/api/queues/mgmt-rec-vnone/mgmt-rec-aq", u, "")
		tg.do("PUT", "/api/queues/mgmt-rec-vnone/mgmt-rec-aq", u, `{"durable":false}`)
		tg.do("GET", "/api/policies/mgmt-rec-vnone/mgmt-rec-ap", u, "")
	}
	// In a vhost it has permissions in, a policymaker sets and clears
	// policies; a management user may not even read one.
	tg.do("PUT", "/api/policies/%2F/mgmt-rec-ap3", monpol, `{"pattern":"^mgmt-rec-zz","definition":{"max-length":1}}`)
	tg.do("GET", "/api/policies/%2F/mgmt-rec-ap3", monpol, "")
	tg.do("GET", "/api/policies/%2F/mgmt-rec-ap3", man, "")
	tg.do("GET", "/api/policies/%2F/mgmt-rec-none", man, "")
	tg.do("DELETE", "/api/policies/%2F/mgmt-rec-ap3", monpol, "")
	tg.accessCleanup()
}

// scenarioConnectionAccess: whose connections a user may see and close
// (rabbit_mgmt_util:is_authorized_user: another user's connection needs
// monitoring to be read, administrator to be closed; anyone may close
// their own).
func scenarioConnectionAccess(tg *target) {
	const mon, monpol, man = "mgmt-rec-amon:pw", "mgmt-rec-amonpol:pw", "mgmt-rec-aman:pw"
	tg.accessSetup()
	own := tg.connectAs("mgmt-rec-amonconn", mon, "/")
	tg.settle()
	name, ownName := tg.connName("mgmt-rec-aguest"), tg.connName("mgmt-rec-amonconn")
	for _, u := range []string{mon, monpol, man} {
		tg.do("GET", "/api/connections/"+name, u, "")
		tg.do("GET", "/api/connections/"+name+"/channels", u, "")
		tg.do("DELETE", "/api/connections/"+name, u, "", "X-Reason", "mgmt-rec must not close it")
	}
	tg.do("GET", "/api/connections/"+ownName, man, "")
	tg.do("GET", "/api/connections/mgmt-rec-none", mon, "")
	closed := own.NotifyClose(make(chan *amqp.Error, 1))
	tg.do("DELETE", "/api/connections/"+ownName, mon, "")
	tg.note("close of mgmt-rec-amonconn", tg.closeNote(closed))
	tg.settle()
	tg.do("GET", "/api/queues/mgmt-rec-va/mgmt-rec-aq", guest, "")
	tg.accessCleanup()
}

// accessSetup makes the vhost mgmt-rec-va with a queue, an exchange, a
// binding, a policy and guest's consumer, and three users with
// permissions in "/" only: a monitoring one, a monitoring policymaker and
// a management one.
func (tg *target) accessSetup() {
	tg.do("PUT", "/api/vhosts/mgmt-rec-va", guest, `{}`)
	for _, u := range [][2]string{{"amon", "monitoring"}, {"amonpol", "monitoring,policymaker"}, {"aman", "management"}} {
		tg.do("PUT", "/api/users/mgmt-rec-"+u[0], guest, `{"password":"pw","tags":"`+u[1]+`"}`)
		tg.do("PUT", "/api/permissions/%2F/mgmt-rec-"+u[0], guest, `{"configure":".*","write":".*","read":".*"}`)
	}
	tg.do("PUT", "/api/queues/mgmt-rec-va/mgmt-rec-aq", guest, `{"durable":false}`)
	tg.do("PUT", "/api/exchanges/mgmt-rec-va/mgmt-rec-ax", guest, `{"type":"direct"}`)
	tg.do("PUT", "/api/policies/mgmt-rec-va/mgmt-rec-ap", guest, `{"pattern":"^mgmt-rec-zz","definition":{"max-length":1}}`)
	c := tg.connectAs("mgmt-rec-aguest", "guest:guest", "mgmt-rec-va")
	ch, err := c.Channel()
	if err != nil {
		tg.t.Fatal(err)
	}
	if err := ch.QueueBind("mgmt-rec-aq", "k", "mgmt-rec-ax", false, nil); err != nil {
		tg.t.Fatal(err)
	}
	if _, err := ch.Consume("mgmt-rec-aq", "mgmt-rec-actag", false, false, false, false, nil); err != nil {
		tg.t.Fatal(err)
	}
	tg.settle()
}

func (tg *target) accessCleanup() {
	for _, u := range []string{"amon", "amonpol", "aman"} {
		tg.do("DELETE", "/api/users/mgmt-rec-"+u, guest, "")
	}
	tg.do("DELETE", "/api/vhosts/mgmt-rec-va", guest, "")
}

// scenarioLongNames: names longer than AMQP's 255-byte short strings: a
// queue's is refused before anything else is looked at
// (rabbit_mgmt_wm_queue:accept_content,
// rabbit_parameter_validation:amqp091_queue_name), an exchange's is not.
func scenarioLongNames(tg *target) {
	long := func(n int) string { return "mgmt-rec-" + strings.Repeat("l", n-len("mgmt-rec-")) }
	tg.do("PUT", "/api/queues/%2F/"+long(256), guest, `{"durable":false}`)
	tg.do("PUT", "/api/queues/%2F/"+long(300), guest, `{"durable":false}`)
	tg.do("PUT", "/api/queues/mgmt-rec-novhost/"+long(300), guest, `{"durable":false}`)
	tg.do("PUT", "/api/queues/%2F/"+long(255), guest, `{"durable":false}`)
	tg.do("DELETE", "/api/queues/%2F/"+long(255), guest, "")
	tg.do("PUT", "/api/exchanges/%2F/"+long(300), guest, `{"type":"fanout"}`)
	tg.do("DELETE", "/api/exchanges/%2F/"+long(300), guest, "")
}

// scenarioBlankPassword: a user may have a blank password, or none; it
// never logs in with a blank one
// (rabbit_auth_backend_internal:user_login_authentication).
func scenarioBlankPassword(tg *target) {
	tg.do("PUT", "/api/users/mgmt-rec-blank", guest, `{"password":"","tags":"management"}`)
	tg.do("GET", "/api/whoami", "mgmt-rec-blank:", "")
	tg.do("PUT", "/api/users/mgmt-rec-blank", guest, `{"tags":"management"}`)
	tg.do("GET", "/api/whoami", "mgmt-rec-blank:", "")
	tg.do("DELETE", "/api/users/mgmt-rec-blank", guest, "")
}
