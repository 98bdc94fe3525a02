package mgmt

import (
	"github.com/amqpsim/amqpsim/sim"
)

// conn is an open client connection with its description.
type conn struct {
	c    *sim.Connection
	info sim.ConnectionInfo
}

// visibleConns are the client connections the user may see (its own,
// or all for monitoring users), in connect order; the management API's
// own direct connections are left out.
func (r *request) visibleConns() []conn {
	var out []conn
	for _, c := range r.h.b.Connections() {
		ci := c.Info()
		if ci.Direct || (!r.seesAll() && ci.User != r.user.Name) {
			continue
		}
		out = append(out, conn{c: c, info: ci})
	}
	return out
}

// findConn finds a connection by its API name.
func (r *request) findConn(name string) (conn, bool) {
	for _, c := range r.visibleConns() {
		if n, _, _, _, _ := apiName(c.info); n == name {
			return c, true
		}
	}
	return conn{}, false
}

func (r *request) connections() response {
	out := []any{}
	for _, c := range r.visibleConns() {
		out = append(out, connectionJSON(c.info, false))
	}
	return ok(out)
}

func (r *request) connection() response {
	c, found := r.findConn(r.args[0])
	if !found {
		return notFound
	}
	return ok(connectionJSON(c.info, true))
}

// closeConnection is DELETE /api/connections/NAME: the broker closes the
// connection with 320 CONNECTION_FORCED and the X-Reason header's text,
// "Closed via management plugin" without one
// (rabbit_mgmt_wm_connection:force_close_connection; recorded).
func (r *request) closeConnection() response {
	c, found := r.findConn(r.args[0])
	if !found {
		return notFound
	}
	reason := r.Header.Get("X-Reason")
	if reason == "" {
		reason = "Closed via management plugin"
	}
	c.c.CloseWithError(sim.Forced(reason))
	return noContent
}

func (r *request) connectionChannels() response {
	c, found := r.findConn(r.args[0])
	if !found {
		return notFound
	}
	now := r.h.b.Now()
	out := []any{}
	for _, ch := range c.c.Channels() {
		out = append(out, channelJSON(ch.Stats(), c.info, now))
	}
	return ok(out)
}

func (r *request) channels() response {
	now := r.h.b.Now()
	out := []any{}
	for _, c := range r.visibleConns() {
		for _, ch := range c.c.Channels() {
			out = append(out, channelJSON(ch.Stats(), c.info, now))
		}
	}
	return ok(out)
}

// consumers is GET /api/consumers[/VHOST]: the consumers on the user's
// own connections, or on every connection for monitoring users
// (rabbit_mgmt_wm_consumers:filter_user). The vhost of the path must
// exist, but until 4.3 a user need not have access to it: the route asks
// only for a management tag (recorded on 3.10.8; 4.0.5's beams read the
// same), 4.3.6 for a vhost the user sees
// (sim.Profile.ConsumersNeedVhost).
func (r *request) consumers() response {
	var vhost string
	if len(r.args) == 1 {
		vhost = r.args[0]
		if !r.h.vhostExists(vhost) {
			return notFound
		}
		if r.h.b.Profile().ConsumersNeedVhost && !r.seesVhost(vhost) {
			return vhostDenied
		}
	}
	out := []any{}
	for _, c := range r.visibleConns() {
		if vhost != "" && c.info.Vhost != vhost {
			continue
		}
		ref := refOf(c.info)
		for _, ch := range c.c.Channels() {
			for _, cs := range ch.Stats().Consumers {
				if cs.Queue == sim.ReplyTo {
					continue
				}
				out = append(out, consumerJSON(cs, c.info.Vhost, ref))
			}
		}
	}
	return ok(out)
}
