package mgmt

import (
	"net/http"
	"strconv"
	"time"

	"github.com/amqpsim/amqpsim/sim"
)

// The simulator's own controls, under /api/sim/, for clients in any
// language (amqptest has the same for Go). They need the administrator
// tag.

func (r *request) simNow() response {
	return ok(map[string]string{"now": r.h.b.Now().Format(time.RFC3339Nano)})
}

func (r *request) simAdvance() response {
	if !r.h.advance {
		return response{status: http.StatusConflict, body: map[string]string{"error": "the clock follows the wall clock; start with --clock manual to advance it"}}
	}
	d, err := time.ParseDuration(r.URL.Query().Get("by"))
	if err != nil || d < 0 {
		return response{status: http.StatusBadRequest, body: map[string]string{"error": "by must be a non-negative duration such as 30m"}}
	}
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
