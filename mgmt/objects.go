package mgmt

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"unicode/utf8"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// direct runs fn on a channel of a direct connection the user opens to
// vhost, as the management plugin declares, deletes and gets through an
// internal AMQP connection: the broker checks the user's permissions as
// for any client. The connection closes when fn returns.
func (r *request) direct(vhost string, fn func(ch *sim.Channel) error) error {
	c, err := r.h.b.Dial(sim.ConnectOptions{Name: "management", Vhost: vhost, User: r.user.Name, Direct: true})
	if err != nil {
		return err
	}
	defer c.Close()
	ch, err := c.Channel()
	if err != nil {
		return err
	}
	return fn(ch)
}

// vhostArg checks the vhost of a path: it must exist (404) and the user
// must have access to it.
func (r *request) vhostArg(i int) (string, *response) {
	v := r.args[i]
	if !r.h.vhostExists(v) {
		return "", &notFound
	}
	if !r.canAccessVhost(v) {
		return "", &vhostDenied
	}
	return v, nil
}

// optionalVhost is the vhost of a listing's optional /VHOST segment, ""
// without one.
func (r *request) optionalVhost() (string, *response) {
	if len(r.args) == 1 {
		return r.vhostArg(0)
	}
	return "", nil
}

// connRefs maps connection numbers to what their channels and consumers
// repeat of them.
func (h *Handler) connRefs() map[uint64]connRef {
	out := map[uint64]connRef{}
	for _, c := range h.b.Connections() {
		ci := c.Info()
		out[ci.ID] = refOf(ci)
	}
	return out
}

func (r *request) queues() response {
	vhost, denied := r.optionalVhost()
	if denied != nil {
		return *denied
	}
	now := r.h.b.Now()
	out := []any{}
	conns := r.h.connRefs()
	for _, q := range r.h.b.AllQueueDetails() {
		if (vhost == "" && r.canAccessVhost(q.Vhost)) || q.Vhost == vhost {
			out = append(out, queueJSON(q, now, false, conns))
		}
	}
	return ok(out)
}

func (r *request) queue() response {
	v, denied := r.vhostArg(0)
	if denied != nil {
		return *denied
	}
	q, err := r.h.b.QueueDetails(v, r.args[1])
	if err != nil {
		return notFound
	}
	return ok(queueJSON(q, r.h.b.Now(), true, r.h.connRefs()))
}

// putQueue is PUT /api/queues/V/Q, a queue.declare on a direct
// connection of the user. A name longer than AMQP's short strings is
// refused first, before the vhost is looked for
// (rabbit_mgmt_wm_queue:accept_content; recorded): no client could name
// the queue. As rabbit_mgmt_util:direct_request, it looks for the vhost
// before it reads the body.
func (r *request) putQueue() response {
	vhost, name := r.args[0], r.args[1]
	if len(name) > 255 {
		// rabbit_parameter_validation:amqp091_queue_name, its "~n" kept.
		return badRequest(fmt.Sprintf("queue should be less than 255 bytes, actually was %d\n", len(name)))
	}
	if !r.h.vhostExists(vhost) {
		return apiError(http.StatusNotFound, "not_found", "vhost_not_found")
	}
	body, bad := r.decodeDeclare()
	if bad != nil {
		return *bad
	}
	var o sim.QueueOptions
	args, bad := declareFields(body, []flagField{{"durable", &o.Durable}, {"auto_delete", &o.AutoDelete}, {"exclusive", &o.Exclusive}})
	if bad != nil {
		return *bad
	}
	o.Args = args
	_, existed := r.h.b.QueueDetails(vhost, name)
	if err := r.direct(vhost, func(ch *sim.Channel) error { _, err := ch.QueueDeclare(name, o); return err }); err != nil {
		return brokerError(err)
	}
	if existed == nil {
		return noContent
	}
	return response{status: http.StatusCreated}
}

func (r *request) deleteQueue() response {
	v, denied := r.vhostArg(0)
	if denied != nil {
		return *denied
	}
	if _, err := r.h.b.QueueDetails(v, r.args[1]); err != nil {
		return notFound
	}
	q := r.URL.Query()
	o := sim.QueueDeleteOptions{IfEmpty: q.Get("if-empty") == "true", IfUnused: q.Get("if-unused") == "true"}
	if err := r.direct(v, func(ch *sim.Channel) error { _, err := ch.QueueDelete(r.args[1], o); return err }); err != nil {
		return brokerError(err)
	}
	return noContent
}

func (r *request) purgeQueue() response {
	v, denied := r.vhostArg(0)
	if denied != nil {
		return *denied
	}
	if _, err := r.h.b.QueueDetails(v, r.args[1]); err != nil {
		return notFound
	}
	if err := r.direct(v, func(ch *sim.Channel) error { _, err := ch.QueuePurge(r.args[1]); return err }); err != nil {
		return brokerError(err)
	}
	return noContent
}

// getMessages is POST /api/queues/v/q/get: up to count basic.gets, then
// the ackmode's settlement of all of them at once (so message_count falls
// from one message to the next, and requeued ones come back redelivered).
func (r *request) getMessages() response {
	body, bad := r.decodeObject()
	if bad != nil {
		return *bad
	}
	if bad := keysMissing(body, "count", "ackmode", "encoding"); bad != nil {
		return *bad
	}
	enc, _ := body["encoding"].(string)
	if enc != "auto" && enc != "base64" {
		return badRequest("Unsupported encoding. Please use auto or base64.")
	}
	mode, _ := body["ackmode"].(string)
	var ack, requeue bool
	switch mode {
	case "ack_requeue_true":
		requeue = true
	case "ack_requeue_false":
		ack = true
	case "reject_requeue_true":
		requeue = true
	case "reject_requeue_false":
	default:
		return internalError // rabbit_mgmt_wm_queue_get crashes on another mode (recorded)
	}
	count, okCount := jsonInt(body["count"])
	if !okCount || count < 0 {
		return internalError
	}
	truncate := int64(-1)
	if t, has := body["truncate"]; has {
		n, isInt := jsonInt(t)
		if !isInt {
			return internalError
		}
		truncate = n
	}
	vhost := r.args[0]
	if !r.h.vhostExists(vhost) {
		return notFound
	}
	if !r.canAccessVhost(vhost) {
		return vhostDenied
	}
	if _, err := r.h.b.QueueDetails(vhost, r.args[1]); err != nil {
		return apiError(http.StatusNotFound, "not_found", "NOT_FOUND - no queue '"+r.args[1]+"' in vhost '"+vhost+"'")
	}
	out := []any{}
	err := r.direct(vhost, func(ch *sim.Channel) error {
		var last uint64
		for range count {
			d, got, err := ch.Get(r.args[1], false)
			if err != nil {
				return err
			}
			if !got {
				break
			}
			last = d.DeliveryTag
			out = append(out, messageJSON(d, enc, truncate))
		}
		if last == 0 {
			return nil
		}
		if ack {
			return ch.Ack(last, true)
		}
		return ch.Nack(last, true, requeue)
	})
	if err != nil {
		var perr *sim.Error
		if errors.As(err, &perr) && perr.Code == 404 {
			return apiError(http.StatusNotFound, "not_found", perr.Text)
		}
		return brokerError(err)
	}
	return ok(out)
}

// messageJSON is a got message as the management API shows it: the
// payload as a string when it is UTF-8 and encoding is auto, otherwise in
// base64; truncate (when not negative) cuts the payload, not
// payload_bytes.
func messageJSON(d sim.Delivery, enc string, truncate int64) map[string]any {
	body := d.Body
	if truncate >= 0 && int64(len(body)) > truncate {
		body = body[:truncate]
	}
	payload, payloadEnc := string(body), "string"
	if enc == "base64" || !utf8.Valid(body) {
		payload, payloadEnc = base64.StdEncoding.EncodeToString(body), "base64"
	}
	return map[string]any{"exchange": d.Exchange, "message_count": d.MessageCount, "payload": payload,
		"payload_bytes": len(d.Body), "payload_encoding": payloadEnc, "properties": propertiesJSON(d.Properties),
		"redelivered": d.Redelivered, "routing_key": d.RoutingKey}
}

// propertiesJSON lists the properties a message has, by their AMQP
// names.
func propertiesJSON(p sim.Properties) map[string]any {
	out := map[string]any{}
	set := func(k, v string) {
		if v != "" {
			out[k] = v
		}
	}
	set("content_type", p.ContentType)
	set("content_encoding", p.ContentEncoding)
	set("correlation_id", p.CorrelationID)
	set("reply_to", p.ReplyTo)
	set("expiration", p.Expiration)
	set("message_id", p.MessageID)
	set("type", p.Type)
	set("user_id", p.UserID)
	set("app_id", p.AppID)
	set("cluster_id", p.ClusterID)
	if p.DeliveryMode != 0 {
		out["delivery_mode"] = int(p.DeliveryMode)
	}
	if p.Priority != 0 {
		out["priority"] = int(p.Priority)
	}
	if !p.Timestamp.IsZero() {
		out["timestamp"] = p.Timestamp.Unix()
	}
	if p.Headers != nil {
		out["headers"] = protocol.TableToJSON(p.Headers)
	}
	return out
}

// listedVhosts are the vhosts a listing covers: the one in the path
// (GET /api/exchanges/V), or every vhost the user may access.
func (r *request) listedVhosts() ([]string, *response) {
	switch v, denied := r.optionalVhost(); {
	case denied != nil:
		return nil, denied
	case v != "":
		return []string{v}, nil
	}
	var vhosts []string
	for _, v := range r.h.b.Vhosts() {
		if r.canAccessVhost(v) {
			vhosts = append(vhosts, v)
		}
	}
	return vhosts, nil
}

func (r *request) exchanges() response {
	vhosts, denied := r.listedVhosts()
	if denied != nil {
		return *denied
	}
	out := []any{}
	for _, v := range vhosts {
		xs, _ := r.h.b.Exchanges(v)
		for _, x := range xs {
			out = append(out, exchangeJSON(x, false))
		}
	}
	return ok(out)
}

// exchangeName maps the path's amq.default to the default exchange "".
func exchangeName(s string) string {
	if s == "amq.default" {
		return ""
	}
	return s
}

func (r *request) findExchange() (sim.ExchangeDetails, *response) {
	v, denied := r.vhostArg(0)
	if denied != nil {
		return sim.ExchangeDetails{}, denied
	}
	xs, _ := r.h.b.Exchanges(v)
	name := exchangeName(r.args[1])
	for _, x := range xs {
		if x.Name == name {
			return x, nil
		}
	}
	return sim.ExchangeDetails{}, &notFound
}

func (r *request) exchange() response {
	x, missing := r.findExchange()
	if missing != nil {
		return *missing
	}
	return ok(exchangeJSON(x, true))
}

// putExchange is PUT /api/exchanges/V/X, an exchange.declare on a
// direct connection of the user; the vhost is looked for before the body
// is read, as for a queue.
func (r *request) putExchange() response {
	vhost, name := r.args[0], exchangeName(r.args[1])
	if !r.h.vhostExists(vhost) {
		return apiError(http.StatusNotFound, "not_found", "vhost_not_found")
	}
	body, bad := r.decodeDeclare()
	if bad != nil {
		return *bad
	}
	kind := "direct"
	if t, has := body["type"]; has {
		s, isString := t.(string)
		if !isString {
			return internalError
		}
		kind = s
	}
	// The management plugin checks the type itself, in its own words
	// (recorded), before any declare.
	if !slices.Contains([]string{"direct", "fanout", "topic", "headers"}, kind) {
		return badRequest("invalid exchange type '" + kind + "'")
	}
	var o sim.ExchangeOptions
	args, bad := declareFields(body, []flagField{{"durable", &o.Durable}, {"auto_delete", &o.AutoDelete}, {"internal", &o.Internal}})
	if bad != nil {
		return *bad
	}
	o.Args = args
	_, missing := r.findExchange()
	if err := r.direct(vhost, func(ch *sim.Channel) error { return ch.ExchangeDeclare(name, kind, o) }); err != nil {
		return brokerError(err)
	}
	if missing == nil {
		return noContent
	}
	return response{status: http.StatusCreated}
}

func (r *request) deleteExchange() response {
	x, missing := r.findExchange()
	if missing != nil {
		return *missing
	}
	o := sim.ExchangeDeleteOptions{IfUnused: r.URL.Query().Get("if-unused") == "true"}
	if err := r.direct(x.Vhost, func(ch *sim.Channel) error { return ch.ExchangeDelete(x.Name, o) }); err != nil {
		return brokerError(err)
	}
	return noContent
}

func (r *request) bindings() response {
	vhosts, denied := r.listedVhosts()
	if denied != nil {
		return *denied
	}
	out := []any{}
	for _, v := range vhosts {
		bs, _ := r.h.b.Bindings(v)
		for _, bd := range bs {
			out = append(out, bindingJSON(bd))
		}
	}
	return ok(out)
}

func (r *request) queueBindings() response {
	v, denied := r.vhostArg(0)
	if denied != nil {
		return *denied
	}
	if _, err := r.h.b.QueueDetails(v, r.args[1]); err != nil {
		return notFound
	}
	bs, _ := r.h.b.Bindings(v)
	out := []any{}
	for _, bd := range bs {
		if bd.DestinationType == "queue" && bd.Destination == r.args[1] {
			out = append(out, bindingJSON(bd))
		}
	}
	return ok(out)
}
