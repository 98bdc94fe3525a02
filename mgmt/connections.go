package mgmt

import (
	"net/http"

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

// findConn finds a client connection by its API name, whoever's it is.
func (r *request) findConn(name string) (conn, bool) {
	for _, c := range r.h.b.Connections() {
		ci := c.Info()
		if ci.Direct {
			continue
		}
		if n, _, _, _, _ := apiName(ci); n == name {
			return conn{c: c, info: ci}, true
		}
	}
	return conn{}, false
}

// pathConn is the connection of the path, as
// rabbit_mgmt_util:is_authorized_user lets the user at it: a user may
// read its own connections, a monitoring one anyone's; it may close its
// own, an administrator anyone's (closing needs administrator, not
// monitoring). Another user's is refused with 401 "User not authorised to
// access object" (recorded on 3.10.8). A connection that does not exist
// is 404 for a user who may read or close anyone's; for others
// is_authorized_user reads the user of not_found and crashes: 500
// (measured on 3.10.8).
func (r *request) pathConn(closing bool) (conn, *response) {
	anyone := r.seesAll()
	if closing {
		anyone = r.user.HasTag(sim.TagAdministrator)
	}
	c, found := r.findConn(r.args[0])
	switch {
	case !found && anyone:
		return conn{}, &notFound
	case !found:
		return conn{}, &internalError
	case !anyone && c.info.User != r.user.Name:
		e := notAuthorised("User not authorised to access object")
		return conn{}, &e
	}
	return c, nil
}

func (r *request) connections() response {
	out := []any{}
	for _, c := range r.visibleConns() {
		out = append(out, connectionJSON(c.info, false))
	}
	return ok(out)
}

func (r *request) connection() response {
	c, denied := r.pathConn(false)
	if denied != nil {
		return *denied
	}
	return ok(connectionJSON(c.info, true))
}

// closeConnection is DELETE /api/connections/NAME: the broker closes the
// connection with 320 CONNECTION_FORCED and the X-Reason header's text,
// "Closed via management plugin" without one
// (rabbit_mgmt_wm_connection:force_close_connection; recorded). Only an
// administrator closes another user's connection; a monitoring user gets
// 401 like any other (pathConn).
func (r *request) closeConnection() response {
	c, denied := r.pathConn(true)
	if denied != nil {
		return *denied
	}
	reason := r.Header.Get("X-Reason")
	if reason == "" {
		reason = "Closed via management plugin"
	}
	c.c.CloseWithError(sim.Forced(reason))
	return noContent
}

// connectionChannels is GET /api/connections/NAME/channels, with the
// connection's rules; a connection that does not exist is 500 for
// everyone (rabbit_mgmt_wm_connection_channels:resource_exists/2 matches
// error, which conn/1 never returns, and to_json/2 crashes on not_found;
// measured on 3.10.8).
func (r *request) connectionChannels() response {
	if _, found := r.findConn(r.args[0]); !found {
		return internalError
	}
	c, denied := r.pathConn(false)
	if denied != nil {
		return *denied
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
// same). 4.3.6 answers a user who neither is an administrator or a
// monitoring user nor has permissions in the vhost with 404
// {"error":"not_found","reason":"Not Found"}, and the others as before
// (sim.Profile.ConsumersNeedVhost; measured twice with the management
// plugin on 4.3.6: TestConsumersOfAVhostNeedAccessFrom43).
func (r *request) consumers() response {
	var vhost string
	if len(r.args) == 1 {
		vhost = r.args[0]
		if !r.h.vhostExists(vhost) {
			return notFound
		}
		if r.h.b.Profile().ConsumersNeedVhost && !r.seesVhost(vhost) {
			return apiError(http.StatusNotFound, "not_found", "Not Found")
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
