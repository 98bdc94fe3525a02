package mgmt

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// Handler serves the management API for one broker. It is safe for
// concurrent use.
type Handler struct {
	b      *sim.Broker
	routes []route
}

// NewHandler returns the management API of b.
func NewHandler(b *sim.Broker) *Handler {
	h := &Handler{b: b}
	h.routes = h.table()
	return h
}

// access is what a route requires of the user, as the is_authorized
// callback of its rabbit_mgmt_wm_* module asks rabbit_mgmt_util
// (RabbitMQ 3.10.8, read in its beams; rabbit_web_dispatch_access_control
// in 4.0.5 and 4.3.6, the same rules): by the management tags,
// management ⊂ policymaker ⊂ administrator, and for the routes whose
// first segment is a vhost, access to it. Monitoring, which management ⊂
// monitoring ⊂ administrator, widens what a user sees, never what it may
// do in a vhost: see seesAll and seesVhost.
type access int

const (
	// needManagement is is_authorized: any management tag.
	needManagement access = iota
	// needVhost is is_authorized_vhost: an administrator, or a user with
	// permissions in the path's vhost (list_login_vhosts); a vhost that
	// does not exist passes, for the resource to answer 404.
	needVhost
	// needPolicies is is_authorized_policies: an administrator, or a
	// policymaker with permissions in the path's vhost; the refusal reads
	// "User not authorised to access object".
	needPolicies
	// needAdministrator is is_authorized_admin.
	needAdministrator
	// needMonitoring is is_authorized_monitor: the monitoring or the
	// administrator tag.
	needMonitoring
)

// route is one resource: a path pattern ("{}" matches one segment) and a
// function per method.
type route struct {
	pattern []string
	methods map[string]endpoint
}

type endpoint struct {
	need access
	fn   func(r *request) response
}

// request is a request matched to its route.
type request struct {
	*http.Request
	h    *Handler
	args []string // the "{}" segments, unescaped
	user sim.User
	w    http.ResponseWriter // for the read deadlines of readBody
	body *bodyState
}

// response is what an endpoint answers: a status and a JSON body (nil for
// none).
type response struct {
	status int
	body   any
	header http.Header
}

func ok(body any) response { return response{status: http.StatusOK, body: body} }

var noContent = response{status: http.StatusNoContent}

// apiError is RabbitMQ's error body.
func apiError(status int, errName string, reason any) response {
	return response{status: status, body: map[string]any{"error": errName, "reason": reason}}
}

// notFound is the answer for a missing object or path.
var notFound = apiError(http.StatusNotFound, "Object Not Found", "Not Found")

func badRequest(reason any) response { return apiError(http.StatusBadRequest, "bad_request", reason) }

func notAuthorised(reason string) response {
	return apiError(http.StatusUnauthorized, "not_authorised", reason)
}

// internalError is RabbitMQ's answer when a handler crashes on input it
// did not expect (a body field of the wrong type, an unknown ackmode):
// 500 with no body. The handler gives it where RabbitMQ 3.10.8 does
// (recorded), never by panicking.
var internalError = response{status: http.StatusInternalServerError}

// ServeHTTP dispatches a request as RabbitMQ's management plugin does
// (cowboy_rest's order): an unknown path is 404, a known one with a
// method it lacks 405 (before authentication), then the credentials and
// the user's tags, then the resource.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body := &bodyState{}
	resp := h.serve(w, r, body)
	if r.Body != nil && r.Body != http.NoBody && !body.read {
		unreadBody(w, r)
	}
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(SendTimeout))
	write(w, resp)
}

// serve finds the route and answers the request.
func (h *Handler) serve(w http.ResponseWriter, r *http.Request, body *bodyState) response {
	segs, okPath := splitPath(r.URL.EscapedPath())
	var rt *route
	var args []string
	if okPath {
		for i := range h.routes {
			if a, match := h.routes[i].match(segs); match {
				rt, args = &h.routes[i], a
				break
			}
		}
	}
	if rt == nil {
		return notFound
	}
	method := r.Method
	if method == http.MethodHead {
		method = http.MethodGet
	}
	ep, has := rt.methods[method]
	if !has {
		return response{status: http.StatusMethodNotAllowed, header: http.Header{"Allow": {rt.allow()}}}
	}
	u, denied := h.authenticate(r, ep.need)
	if denied != nil {
		return *denied
	}
	req := &request{Request: r, h: h, args: args, user: u, w: w, body: body}
	if denied := req.vhostDenied(ep.need); denied != nil {
		return *denied
	}
	return ep.fn(req)
}

// splitPath splits an escaped path into unescaped segments, so that the
// vhost "/" can be written %2F.
func splitPath(p string) ([]string, bool) {
	p = strings.TrimSuffix(p, "/")
	var out []string
	for _, s := range strings.Split(strings.TrimPrefix(p, "/"), "/") {
		u, err := url.PathUnescape(s)
		if err != nil {
			return nil, false
		}
		out = append(out, u)
	}
	return out, true
}

func (rt *route) match(segs []string) ([]string, bool) {
	if len(segs) != len(rt.pattern) {
		return nil, false
	}
	var args []string
	for i, p := range rt.pattern {
		switch {
		case p == "{}":
			args = append(args, segs[i])
		case p != segs[i]:
			return nil, false
		}
	}
	return args, true
}

// allow is the Allow header of a 405, in the order RabbitMQ lists them.
func (rt *route) allow() string {
	out := []string{"HEAD"}
	for _, m := range []string{"GET", "POST", "PUT", "DELETE"} {
		if _, ok := rt.methods[m]; ok {
			out = append(out, m)
		}
	}
	return strings.Join(append(out, "OPTIONS"), ", ")
}

// authenticate checks the request's basic credentials against the
// broker's users and the user's tags against need. RabbitMQ's answers
// (recorded): no credentials is 401 with no body, wrong ones "Login
// failed" (spelled not_authorized, unlike the others), both with a
// WWW-Authenticate challenge; a user without a management tag "Not
// management user", without the challenge.
func (h *Handler) authenticate(r *http.Request, need access) (sim.User, *response) {
	challenge := http.Header{"Www-Authenticate": {`Basic realm="RabbitMQ Management"`}}
	name, pass, has := r.BasicAuth()
	if !has {
		return sim.User{}, &response{status: http.StatusUnauthorized, header: challenge}
	}
	u, err := h.b.Authenticate(name, pass, remoteLocal(r))
	if err != nil {
		e := apiError(http.StatusUnauthorized, "not_authorized", "Login failed")
		e.header = challenge
		return sim.User{}, &e
	}
	admin := u.HasTag(sim.TagAdministrator)
	monitoring := admin || u.HasTag(sim.TagMonitoring)
	policymaker := admin || u.HasTag(sim.TagPolicymaker)
	management := monitoring || policymaker || u.HasTag(sim.TagManagement)
	var deny string
	switch {
	case !management:
		deny = "Not management user"
	case need == needPolicies && !policymaker:
		deny = "User not authorised to access object"
	case need == needAdministrator && !admin:
		deny = "Not administrator user"
	case need == needMonitoring && !monitoring:
		deny = "Not monitor user"
	}
	if deny != "" {
		e := notAuthorised(deny)
		return sim.User{}, &e
	}
	return u, nil
}

// remoteLocal is the address the HTTP client connected to, for the
// loopback rule of guest.
func remoteLocal(r *http.Request) netip.Addr {
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(interface{ String() string }); ok {
		if ap, err := netip.ParseAddrPort(a.String()); err == nil {
			return ap.Addr()
		}
	}
	return netip.Addr{}
}

func write(w http.ResponseWriter, resp response) {
	for k, v := range resp.header {
		w.Header()[k] = v
	}
	if resp.body == nil {
		w.WriteHeader(resp.status)
		return
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(resp.body); err != nil {
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(resp.status)
	_, _ = w.Write(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}

// decodeObject reads the request body as a JSON object, numbers kept
// exact, as rabbit_mgmt_util:with_decode does: anything else is
// "not_json", a body over the release's limit "Exceeded HTTP request
// body size limit", both 400.
func (r *request) decodeObject() (map[string]any, *response) {
	raw, err := r.readBody()
	if errors.Is(err, errTooLarge) {
		return nil, &tooLarge
	}
	if err != nil {
		e := badRequest("not_json")
		return nil, &e
	}
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil || m == nil || dec.More() {
		e := badRequest("not_json")
		return nil, &e
	}
	return m, nil
}

// decodeDeclare is decodeObject for a declare, whose body RabbitMQ reads
// through rabbit_mgmt_util:with_vhost_and_props: it crashes on a body
// over the limit, 500 with no body (measured on 3.10.8; 4.0.5's and
// 4.3.6's with_vhost_and_props still match only {ok, ...}).
func (r *request) decodeDeclare() (map[string]any, *response) {
	m, bad := r.decodeObject()
	if bad != nil && bad == &tooLarge {
		return nil, &internalError
	}
	return m, bad
}

// keysMissing is RabbitMQ's 400 for required body keys that are absent,
// or nil when all are there.
func keysMissing(m map[string]any, keys ...string) *response {
	var missing []string
	for _, k := range keys {
		if _, ok := m[k]; !ok {
			missing = append(missing, "{key_missing,"+k+"}")
		}
	}
	if missing == nil {
		return nil
	}
	e := badRequest("[" + strings.Join(missing, ",") + "]")
	return &e
}

// flagField is a boolean field of a declare's body and where it goes.
type flagField struct {
	key string
	to  *bool
}

// declareFields reads a declare's boolean fields and its arguments.
func declareFields(body map[string]any, flags []flagField) (sim.Table, *response) {
	for _, f := range flags {
		v, bad := boolField(body, f.key)
		if bad != nil {
			return nil, bad
		}
		*f.to = v
	}
	return tableField(body, "arguments")
}

// boolField reads an optional boolean body field; RabbitMQ's error for
// another type is ["not_boolean", value].
func boolField(m map[string]any, k string) (bool, *response) {
	v, has := m[k]
	if !has {
		return false, nil
	}
	b, isBool := v.(bool)
	if !isBool {
		e := badRequest([]any{"not_boolean", v})
		return false, &e
	}
	return b, nil
}

// tableField reads an optional "arguments" object as an AMQP table.
// RabbitMQ crashes (500) on a non-object.
func tableField(m map[string]any, k string) (sim.Table, *response) {
	v, has := m[k]
	if !has || v == nil {
		return sim.Table{}, nil
	}
	obj, isObj := v.(map[string]any)
	if !isObj {
		return nil, &internalError
	}
	t, err := protocol.TableFromJSON(obj)
	if err != nil {
		bad := badRequest(err.Error())
		return nil, &bad
	}
	return t, nil
}

// jsonInt reads a decoded JSON integer: RabbitMQ's long.
func jsonInt(v any) (int64, bool) {
	n, err := protocol.ValueFromJSON(v)
	i, isInt := n.(int64)
	return i, isInt && err == nil
}

// vhostExists reports whether the broker has the vhost.
func (h *Handler) vhostExists(name string) bool { return slices.Contains(h.b.Vhosts(), name) }

// canAccessVhost: administrators may read and change every vhost, other
// users, monitoring ones included, those they have permissions in
// (rabbit_mgmt_util:is_authorized_vhost and filter_vhost, which use
// list_login_vhosts for all but administrators).
func (r *request) canAccessVhost(vhost string) bool {
	if r.user.HasTag(sim.TagAdministrator) {
		return true
	}
	_, ok := r.h.b.UserPermissions(vhost, r.user.Name)
	return ok
}

// seesVhost: monitoring users see that every vhost exists and count it in
// the overview (rabbit_mgmt_util:list_visible_vhosts: "monitors can
// always learn of the existence of all vhosts"), without access to what
// is in it.
func (r *request) seesVhost(vhost string) bool {
	return r.seesAll() || r.canAccessVhost(vhost)
}

// vhostDenied is the refusal of a route whose first segment is a vhost
// the user may not access (needVhost, needPolicies), or nil. It comes
// before the body is read and before the resource is looked up; a vhost
// that does not exist passes (rabbit_mgmt_util:user_matches_vhost).
func (r *request) vhostDenied(need access) *response {
	if need != needVhost && need != needPolicies {
		return nil
	}
	v := r.args[0]
	if !r.h.vhostExists(v) || r.canAccessVhost(v) {
		return nil
	}
	e := vhostDenied
	if need == needPolicies {
		e = notAuthorised("User not authorised to access object")
	}
	return &e
}

// seesAll: monitoring users and administrators see every connection,
// channel and consumer; others only their own.
func (r *request) seesAll() bool {
	return r.user.HasTag(sim.TagAdministrator) || r.user.HasTag(sim.TagMonitoring)
}

// vhostDenied is the answer for a vhost the user has no permissions in.
var vhostDenied = notAuthorised("User not authorised to access virtual host")

// brokerError turns an AMQP error from a management operation into
// RabbitMQ's HTTP answer: 403 ACCESS_REFUSED is 401 "Access refused.",
// others 400 with the reply text less its code name.
func brokerError(err error) response {
	var perr *sim.Error
	if !errors.As(err, &perr) {
		return badRequest(err.Error())
	}
	if perr.Code == 403 {
		return notAuthorised("Access refused.")
	}
	text := perr.Text
	if _, rest, found := strings.Cut(text, " - "); found {
		text = rest
	}
	return badRequest(text)
}
