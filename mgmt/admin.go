package mgmt

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/amqpsim/amqpsim/definitions"
	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

var exchangeTypes = []any{
	map[string]any{"name": "direct", "description": "AMQP direct exchange, as per the AMQP specification", "enabled": true},
	map[string]any{"name": "fanout", "description": "AMQP fanout exchange, as per the AMQP specification", "enabled": true},
	map[string]any{"name": "headers", "description": "AMQP headers exchange, as per the AMQP specification", "enabled": true},
	map[string]any{"name": "topic", "description": "AMQP topic exchange, as per the AMQP specification", "enabled": true},
}

func (r *request) overview() response {
	b := r.h.b
	var conns, chans, consumers int
	for _, c := range r.visibleConns() {
		conns++
		for _, ch := range c.c.Channels() {
			chans++
			consumers += len(ch.Stats().Consumers)
		}
	}
	var queues, ready, unacked, exchanges int
	for _, q := range b.AllQueueDetails() {
		if r.seesVhost(q.Vhost) {
			queues++
			ready += q.Ready
			unacked += q.Unacked
		}
	}
	for _, v := range b.Vhosts() {
		if r.seesVhost(v) {
			xs, _ := b.Exchanges(v)
			exchanges += len(xs)
		}
	}
	version := b.Profile().ServerVersion // the simulated release's
	return ok(map[string]any{
		"management_version": version, "rates_mode": "basic",
		"sample_retention_policies": map[string]any{"global": []int{600, 3600, 28800, 86400}, "basic": []int{600, 3600}, "detailed": []int{600}},
		"exchange_types":            exchangeTypes, "product_version": version, "product_name": "RabbitMQ",
		"rabbitmq_version": version, "cluster_name": node, "erlang_version": "amqpsim",
		"erlang_full_version": "amqpsim, an AMQP 0-9-1 broker simulator", "release_series_support_status": "supported",
		"disable_stats": false, "enable_queue_totals": false, "message_stats": noStats, "churn_rates": noStats,
		"queue_totals": map[string]any{"messages": ready + unacked, "messages_details": rate, "messages_ready": ready,
			"messages_ready_details": rate, "messages_unacknowledged": unacked, "messages_unacknowledged_details": rate},
		"object_totals": map[string]any{"channels": chans, "connections": conns, "consumers": consumers,
			"exchanges": exchanges, "queues": queues},
		"statistics_db_event_queue": 0, "node": node, "listeners": emptyList, "contexts": emptyList,
	})
}

func (r *request) whoami() response {
	tags := r.user.Tags
	if tags == nil {
		tags = []string{}
	}
	return ok(map[string]any{"name": r.user.Name, "tags": tags})
}

func (r *request) vhostJSON(v sim.VhostInfo) map[string]any {
	var ready, unacked int
	for _, q := range r.h.b.AllQueueDetails() {
		if q.Vhost == v.Name {
			ready += q.Ready
			unacked += q.Unacked
		}
	}
	tags := v.Tags
	if tags == nil {
		tags = []string{}
	}
	return map[string]any{
		"cluster_state": map[string]any{node: "running"}, "default_queue_type": "undefined",
		"description": v.Description, "message_stats": noStats,
		"messages": ready + unacked, "messages_details": rate, "messages_ready": ready, "messages_ready_details": rate,
		"messages_unacknowledged": unacked, "messages_unacknowledged_details": rate,
		"metadata": map[string]any{"description": v.Description, "tags": tags}, "name": v.Name,
		"recv_oct": 0, "recv_oct_details": rate, "send_oct": 0, "send_oct_details": rate, "tags": tags, "tracing": false,
	}
}

// vhosts is GET /api/vhosts: the vhosts the user sees, every one for
// monitoring users (rabbit_mgmt_wm_vhosts, list_visible_vhosts).
func (r *request) vhosts() response {
	out := []any{}
	for _, v := range r.h.b.VhostInfos() {
		if r.seesVhost(v.Name) {
			out = append(out, r.vhostJSON(v))
		}
	}
	return ok(out)
}

// vhost is GET /api/vhosts/VHOST, for administrators only, even of a
// vhost the user has permissions in (rabbit_mgmt_wm_vhost:is_authorized;
// recorded).
func (r *request) vhost() response {
	for _, v := range r.h.b.VhostInfos() {
		if v.Name == r.args[0] {
			return ok(r.vhostJSON(v))
		}
	}
	return notFound
}

func (r *request) putVhost() response {
	body, bad := r.decodeObject()
	if bad != nil {
		return *bad
	}
	info := sim.VhostInfo{Name: r.args[0]}
	info.Description, _ = body["description"].(string)
	tags, bad := tagsField(body)
	if bad != nil {
		return *bad
	}
	info.Tags = tags
	existed := r.h.vhostExists(info.Name)
	if err := r.h.b.PutVhost(info); err != nil {
		return badRequest(err.Error())
	}
	if !existed {
		// RabbitMQ grants the creating user full permissions on a new
		// vhost (rabbit_mgmt_wm_vhost:put_vhost).
		_ = r.h.b.SetPermissions(info.Name, r.user.Name, sim.FullPermissions)
		return response{status: http.StatusCreated}
	}
	return noContent
}

func (r *request) deleteVhost() response {
	if err := r.h.b.DeleteVhost(r.args[0]); err != nil {
		return notFound
	}
	return noContent
}

// tagsField reads a user's or vhost's "tags": a comma-separated string or
// a list of strings. RabbitMQ crashes (500) on anything else (recorded).
func tagsField(body map[string]any) ([]string, *response) {
	var tags []string
	switch t := body["tags"].(type) {
	case nil:
	case string:
		for _, s := range strings.Split(t, ",") {
			if s = strings.TrimSpace(s); s != "" {
				tags = append(tags, s)
			}
		}
	case []any:
		for _, e := range t {
			s, isString := e.(string)
			if !isString {
				return nil, &internalError
			}
			tags = append(tags, s)
		}
	default:
		return nil, &internalError
	}
	return tags, nil
}

func (r *request) users() response {
	out := []any{}
	for _, u := range r.h.b.Users() {
		out = append(out, userJSON(u))
	}
	return ok(out)
}

func (r *request) userGet() response {
	u, found := r.h.b.User(r.args[0])
	if !found {
		return notFound
	}
	return ok(userJSON(u))
}

func (r *request) putUser() response {
	body, bad := r.decodeObject()
	if bad != nil {
		return *bad
	}
	tags, bad := tagsField(body)
	if bad != nil {
		return *bad
	}
	u := sim.User{Name: r.args[0], Tags: tags}
	for k, to := range map[string]*string{"password": &u.Password, "password_hash": &u.PasswordHash, "hashing_algorithm": &u.HashingAlgorithm} {
		if v, has := body[k]; has {
			s, isString := v.(string)
			if !isString {
				return internalError
			}
			*to = s
		}
	}
	_, existed := r.h.b.User(u.Name)
	if err := r.h.b.PutUser(u); err != nil {
		return badRequest(err.Error())
	}
	if existed {
		return noContent
	}
	return response{status: http.StatusCreated}
}

func (r *request) deleteUser() response {
	if _, found := r.h.b.User(r.args[0]); !found {
		return notFound
	}
	if err := r.h.b.DeleteUser(r.args[0]); err != nil {
		return badRequest(err.Error())
	}
	return noContent
}

func (r *request) userPermissions() response {
	if _, found := r.h.b.User(r.args[0]); !found {
		return notFound
	}
	out := []any{}
	for _, p := range r.h.b.Permissions() {
		if p.User == r.args[0] {
			out = append(out, permissionJSON(p.Vhost, p.User, p.Permissions))
		}
	}
	return ok(out)
}

func (r *request) permissions() response {
	out := []any{}
	for _, p := range r.h.b.Permissions() {
		out = append(out, permissionJSON(p.Vhost, p.User, p.Permissions))
	}
	return ok(out)
}

func (r *request) permission() response {
	p, found := r.h.b.UserPermissions(r.args[0], r.args[1])
	if !found {
		return notFound
	}
	return ok(permissionJSON(r.args[0], r.args[1], p))
}

func (r *request) putPermission() response {
	body, bad := r.decodeObject()
	if bad != nil {
		return *bad
	}
	if bad := keysMissing(body, "configure", "write", "read"); bad != nil {
		return *bad
	}
	var p sim.Permissions
	for k, to := range map[string]*string{"configure": &p.Configure, "write": &p.Write, "read": &p.Read} {
		s, isString := body[k].(string)
		if !isString {
			return internalError
		}
		*to = s
	}
	vhost, user := r.args[0], r.args[1]
	_, had := r.h.b.UserPermissions(vhost, user)
	if err := r.h.b.SetPermissions(vhost, user, p); err != nil {
		if errors.Is(err, sim.ErrNoVhost) || errors.Is(err, sim.ErrNoUser) {
			return badRequest("vhost_or_user_not_found")
		}
		return badRequest([]any{"invalid_regexp", err.Error()})
	}
	if had {
		return noContent
	}
	return response{status: http.StatusCreated}
}

func (r *request) deletePermission() response {
	if _, found := r.h.b.UserPermissions(r.args[0], r.args[1]); !found {
		return notFound
	}
	if err := r.h.b.ClearPermissions(r.args[0], r.args[1]); err != nil {
		return notFound
	}
	return noContent
}

func (r *request) policies() response {
	vhosts, denied := r.listedVhosts()
	if denied != nil {
		return *denied
	}
	out := []any{}
	for _, v := range vhosts {
		for _, p := range r.h.b.Policies(v) {
			out = append(out, policyJSON(v, p))
		}
	}
	return ok(out)
}

func (r *request) findPolicy() (sim.Policy, *response) {
	v, denied := r.vhostArg(0)
	if denied != nil {
		return sim.Policy{}, denied
	}
	for _, p := range r.h.b.Policies(v) {
		if p.Name == r.args[1] {
			return p, nil
		}
	}
	return sim.Policy{}, &notFound
}

func (r *request) policy() response {
	p, missing := r.findPolicy()
	if missing != nil {
		return *missing
	}
	return ok(policyJSON(r.args[0], p))
}

func (r *request) putPolicy() response {
	body, bad := r.decodeObject()
	if bad != nil {
		return *bad
	}
	vhost := r.args[0]
	if !r.h.vhostExists(vhost) {
		return apiError(http.StatusNotFound, "not_found", "vhost_not_found")
	}
	if !r.canAccessVhost(vhost) {
		return vhostDenied
	}
	if bad := keysMissing(body, "pattern", "definition"); bad != nil {
		return *bad
	}
	p := sim.Policy{Name: r.args[1]}
	var isString, isObject bool
	p.Pattern, isString = body["pattern"].(string)
	def, isObject := body["definition"].(map[string]any)
	if !isString || !isObject {
		return internalError
	}
	t, err := protocol.TableFromJSON(def)
	if err != nil {
		return badRequest(err.Error())
	}
	p.Definition = t
	if v, has := body["priority"]; has {
		n, isInt := jsonInt(v)
		if !isInt {
			return badRequest("Validation failed\n\npriority must be an integer\n")
		}
		p.Priority = int(n)
	}
	if v, has := body["apply-to"]; has {
		s, isString := v.(string)
		if !isString {
			return internalError
		}
		p.ApplyTo = s
	}
	_, missing := r.findPolicy()
	if err := r.h.b.SetPolicy(vhost, p); err != nil {
		return badRequest("Validation failed\n\n" + err.Error() + "\n")
	}
	if missing == nil {
		return noContent
	}
	return response{status: http.StatusCreated}
}

func (r *request) deletePolicy() response {
	if _, missing := r.findPolicy(); missing != nil {
		return *missing
	}
	if err := r.h.b.ClearPolicy(r.args[0], r.args[1]); err != nil {
		return notFound
	}
	return noContent
}

// definitions is GET /api/definitions: the broker's export, with the
// product keys RabbitMQ adds.
func (r *request) definitions() response {
	m, err := toJSONMap(r.h.b.ExportDefinitions())
	if err != nil {
		return internalError
	}
	v := r.h.b.Profile().ServerVersion
	m["rabbit_version"], m["rabbitmq_version"] = v, v
	m["product_name"], m["product_version"] = "RabbitMQ", v
	r.h.markInternal(m)
	return ok(m)
}

// markInternal gives each exported exchange its "internal" flag: the
// management plugin's export carries it (recorded), rabbitmqctl
// export_definitions's, which sim.ExportDefinitions follows, does not.
func (h *Handler) markInternal(defs map[string]any) {
	entries, _ := defs["exchanges"].([]any)
	for _, e := range entries {
		x, isMap := e.(map[string]any)
		if !isMap {
			continue
		}
		vhost, _ := x["vhost"].(string)
		name, _ := x["name"].(string)
		internal := false
		xs, _ := h.b.Exchanges(vhost)
		for _, d := range xs {
			if d.Name == name {
				internal = d.Internal
			}
		}
		x["internal"] = internal
	}
}

// vhostDefinitions is GET /api/definitions/VHOST: one vhost's part of
// the export, its entries without their vhost key, as RabbitMQ writes it.
func (r *request) vhostDefinitions() response {
	vhost, denied := r.vhostArg(0)
	if denied != nil {
		return *denied
	}
	all, err := toJSONMap(r.h.b.ExportDefinitions())
	if err != nil {
		return internalError
	}
	r.h.markInternal(all)
	out := map[string]any{"rabbit_version": r.h.b.Profile().ServerVersion}
	for _, k := range []string{"bindings", "exchanges", "parameters", "policies", "queues"} {
		list := []any{}
		entries, _ := all[k].([]any)
		for _, e := range entries {
			if m, isMap := e.(map[string]any); isMap && m["vhost"] == vhost {
				delete(m, "vhost")
				list = append(list, m)
			}
		}
		out[k] = list
	}
	return ok(out)
}

func toJSONMap(v any) (map[string]any, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	return m, dec.Decode(&m)
}

// postDefinitions is POST /api/definitions: an import, all or nothing.
func (r *request) postDefinitions() response {
	raw, err := r.readBody()
	if errors.Is(err, errTooLarge) {
		return tooLarge // rabbit_mgmt_wm_definitions:accept_json (measured)
	}
	if err != nil || !json.Valid(raw) {
		return badRequest("failed_to_parse_json")
	}
	defs, err := definitions.Parse(raw)
	if err != nil {
		return badRequest(err.Error())
	}
	if defs == nil {
		return badRequest("failed_to_parse_json")
	}
	if err := r.h.b.ImportDefinitions(defs); err != nil {
		return badRequest(err.Error())
	}
	return noContent
}

// aliveness is GET /api/aliveness-test/VHOST: declare the queue
// aliveness-test, publish to it and get the message back, as the user
// (rabbit_mgmt_wm_aliveness_test; the queue stays, as in RabbitMQ).
func (r *request) aliveness() response {
	vhost, denied := r.vhostArg(0)
	if denied != nil {
		return *denied
	}
	const q = "aliveness-test"
	err := r.direct(vhost, func(ch *sim.Channel) error {
		if _, err := ch.QueueDeclare(q, sim.QueueOptions{}); err != nil {
			return err
		}
		if err := ch.Publish("", q, sim.PublishOptions{}, sim.Message{Body: []byte("test_message")}); err != nil {
			return err
		}
		_, _, err := ch.Get(q, true)
		return err
	})
	if err != nil {
		var perr *sim.Error
		if errors.As(err, &perr) && perr.Code == 403 {
			return notAuthorised(perr.Text)
		}
		return apiError(http.StatusServiceUnavailable, "failed", err.Error())
	}
	return ok(map[string]any{"status": "ok"})
}

// alarms is GET /api/health/checks/alarms: 200 {"status":"ok"} without a
// raised alarm, 503 listing them with one
// (rabbit_mgmt_wm_health_check_alarms).
func (r *request) alarms() response {
	a := r.h.b.Alarms()
	if a == 0 {
		return ok(map[string]any{"status": "ok"})
	}
	var list []any
	if a&sim.AlarmMemory != 0 {
		list = append(list, map[string]any{"node": node, "resource": "memory"})
	}
	if a&sim.AlarmDisk != 0 {
		list = append(list, map[string]any{"node": node, "resource": "disk"})
	}
	return response{status: http.StatusServiceUnavailable, body: map[string]any{"status": "failed",
		"reason": "resource alarm(s) in effect in the cluster", "alarms": list}}
}
