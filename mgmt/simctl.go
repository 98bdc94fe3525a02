package mgmt

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// The simulator's own controls, under /api/sim/, for clients in any
// language (amqptest has the same for Go). They need the administrator
// tag; GET /api/sim lists them (simControls) to any management user.

// simControl describes a control for GET /api/sim.
type simControl struct {
	Method      string `json:"method"`
	Path        string `json:"path"`
	Query       string `json:"query,omitempty"`
	Description string `json:"description"`
}

// simControls are the controls GET /api/sim lists, in the routes' order.
var simControls = []simControl{
	{"GET", "/api/sim/now", "", "the broker's virtual time, as {\"now\": RFC 3339}"},
	{"POST", "/api/sim/advance", "by=DURATION", "moves the virtual clock by DURATION (30m, 1h30m), firing the timers due on the way " +
		"(consumer timeouts, TTLs, x-expires), and answers the new time; 409 if the clock follows the wall clock (serve --clock wall). " +
		"It is not ordered with frames in flight on the AMQP sockets: what a client has written and the broker not yet read is applied " +
		"after the advance, so wait for a reply to the frames that must come first (a publisher confirm, or any synchronous method " +
		"such as queue.declare with passive) before advancing"},
	{"POST", "/api/sim/restart", "", "restarts the broker as a node restart does: every connection closed with 320 CONNECTION_FORCED, " +
		"transient queues, exchanges and messages lost"},
	{"POST", "/api/sim/close-connections", "reason=TEXT", "closes every client connection with 320 CONNECTION_FORCED and TEXT " +
		"(default \"Closed via management plugin\"), as rabbitmqctl close_connection does"},
	{"POST", "/api/sim/alarm", "resource=memory|disk&on=true|false", "raises or clears a resource alarm: publishers are blocked " +
		"(connection.blocked) until the last alarm clears"},
	{"POST", "/api/sim/close-at-delivery", "n=N[&close=channel|connection|every|consumer-timeout][&queue=Q][&consumer=TAG][&code=CODE][&text=TEXT]",
		"arms a close right behind the nth delivery from now (of queue Q, consumer TAG): its channel's (406 by default), its " +
			"connection's or every connection's (320), or the consumer timeout's"},
	{"POST", "/api/sim/nack-publishes", "n=N", "nacks the next N publishes in confirm mode instead of routing them"},
	{"POST", "/api/sim/stop-node", "node=N|NAME", "stops a node of the cluster gracefully, as rabbitmqctl stop: its connections " +
		"get 320 CONNECTION_FORCED (reason 'shutdown') and are dropped, its port refuses connections until start-node; " +
		"answers the nodes with their state and the nodes each reaches"},
	{"POST", "/api/sim/kill-node", "node=N|NAME", "crashes a node: its connections are dropped without a frame, its port " +
		"refuses connections until start-node"},
	{"POST", "/api/sim/start-node", "node=N|NAME", "starts a stopped or killed node again; its port accepts connections again"},
	{"POST", "/api/sim/pause-node", "node=N|NAME", "hangs a node, as SIGSTOP does: its connections stay open and silent " +
		"(no frame, no heartbeat) until their clients' heartbeats give up, its classic queues answer nothing, the quorum queues " +
		"it leads elect a new leader after 7 s"},
	{"POST", "/api/sim/resume-node", "node=N|NAME", "lets a hung node run again: what it held is sent and answered"},
	{"POST", "/api/sim/partition", "group=1,2[&group=3]", "cuts the cluster into sides that cannot reach each other: " +
		"each group, and the nodes no group names; connections stay open (replaces an earlier partition)"},
	{"POST", "/api/sim/heal", "", "ends a partition"},
}

// simList is GET /api/sim: the controls.
func (r *request) simList() response { return ok(simControls) }

func (r *request) simNow() response {
	return ok(map[string]string{"now": r.h.b.Now().Format(time.RFC3339Nano)})
}

func (r *request) simAdvance() response {
	d, err := time.ParseDuration(r.URL.Query().Get("by"))
	if err != nil || d < 0 {
		return response{status: http.StatusBadRequest, body: map[string]string{"error": "by must be a non-negative duration such as 30m"}}
	}
	// A broker whose clock follows the wall clock refuses (serve --clock
	// wall), as does one at the end of its clock's range.
	if err := r.h.b.Advance(d); err != nil {
		return response{status: http.StatusConflict, body: map[string]string{"error": err.Error()}}
	}
	return r.simNow()
}

func (r *request) simRestart() response {
	r.h.b.Restart()
	return ok(map[string]string{"restarted": "true"})
}

// simCloseConnections closes every client connection as `rabbitmqctl
// close_connection` does; reason defaults to the management API's text.
func (r *request) simCloseConnections() response {
	reason := r.URL.Query().Get("reason")
	if reason == "" {
		reason = "Closed via management plugin"
	}
	n := 0
	for _, c := range r.h.b.Connections() {
		if c.CloseWithError(sim.Forced(reason)) {
			n++
		}
	}
	return ok(map[string]int{"closed": n})
}

func (r *request) simAlarm() response {
	q := r.URL.Query()
	alarms := map[string]sim.Alarm{"memory": sim.AlarmMemory, "disk": sim.AlarmDisk}
	a, known := alarms[q.Get("resource")]
	on, err := strconv.ParseBool(q.Get("on"))
	if !known || err != nil {
		return response{status: http.StatusBadRequest, body: map[string]string{"error": "want resource=memory or disk and on=true or false"}}
	}
	r.h.b.SetAlarm(a, on)
	now := r.h.b.Alarms()
	return ok(map[string]bool{"memory": now&sim.AlarmMemory != 0, "disk": now&sim.AlarmDisk != 0})
}

func (r *request) simNackPublishes() response {
	n, err := strconv.Atoi(r.URL.Query().Get("n"))
	if err != nil || n < 0 {
		return response{status: http.StatusBadRequest, body: map[string]string{"error": "n must be a non-negative integer"}}
	}
	r.h.b.NackPublishes(n)
	return ok(map[string]int{"nack": n})
}

// simCloseAtDelivery arms a fault at the nth delivery from now
// (sim.Broker.CloseAtDelivery).
func (r *request) simCloseAtDelivery() response {
	f, err := deliveryFault(r.URL.Query())
	if err == nil {
		err = r.h.b.CloseAtDelivery(f)
	}
	if err != nil {
		return response{status: http.StatusBadRequest, body: map[string]string{"error": err.Error()}}
	}
	return ok(map[string]int{"armed": r.h.b.ArmedFaults()})
}

// deliveryFault reads close-at-delivery's query: n, close=channel (the
// default), connection, every or consumer-timeout, optional queue and
// consumer to count only their deliveries, and the close's code and text
// (by default 406 for a channel, 320 for a connection, "fault injected").
func deliveryFault(q url.Values) (sim.DeliveryFault, error) {
	var f sim.DeliveryFault
	n, err := strconv.Atoi(q.Get("n"))
	if err != nil || n < 1 {
		return f, errors.New("n must be a positive integer: the fault fires at the nth delivery from now")
	}
	f.N, f.Queue, f.ConsumerTag = n, q.Get("queue"), q.Get("consumer")
	code := protocol.ConnectionForced
	switch q.Get("close") {
	case "", "channel":
		f.Action, code = sim.FaultCloseChannel, protocol.PreconditionFailed
	case "connection":
		f.Action = sim.FaultCloseConnection
	case "every":
		f.Action = sim.FaultCloseEveryConnection
	case "consumer-timeout":
		f.Action = sim.FaultConsumerTimeout
		return f, nil
	default:
		return f, errors.New("close must be channel, connection, every or consumer-timeout")
	}
	if c := q.Get("code"); c != "" {
		if code, err = strconv.Atoi(c); err != nil || protocol.CodeName(code) == "" {
			return f, fmt.Errorf("code %q is not an AMQP reply code", c)
		}
	}
	text := q.Get("text")
	if text == "" {
		text = "fault injected"
	}
	f.Err = protocol.Errorf(code, protocol.Method{}, "%s", text)
	return f, nil
}
