package mgmt

import (
	"cmp"
	"encoding/base64"
	"fmt"
	"hash/fnv"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// The JSON shapes below are RabbitMQ 3.10.8's, key for key (see
// testdata/rabbitmq). Statistics amqpsim does not keep (memory,
// reductions, garbage collection, byte counters, rates) are there with
// neutral values, so that tools decoding them find them.

// node is the name the handler gives the broker's node.
const node = "rabbit@amqpsim"

var (
	rate      = map[string]any{"rate": 0.0}
	gcStats   = map[string]any{"fullsweep_after": 65535, "max_heap_size": 0, "min_bin_vheap_size": 46422, "min_heap_size": 233, "minor_gcs": 0}
	noStats   = map[string]any{}
	emptyList = []any{}
)

// timestamp formats a virtual time as RabbitMQ's idle_since does.
func timestamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000+00:00") }

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func queueJSON(q sim.QueueDetails, now time.Time, detail bool, conns map[uint64]connRef) map[string]any {
	args := q.Args
	if args == nil {
		args = sim.Table{}
	}
	policyDef := map[string]any{}
	if q.PolicyDefinition != nil {
		policyDef = protocol.TableToJSON(q.PolicyDefinition)
	}
	var exclusiveTag any
	for _, c := range q.ConsumerList {
		if c.Exclusive {
			exclusiveTag = c.Tag
		}
	}
	capacity := 0.0
	if q.Consumers > 0 {
		capacity = 1.0
	}
	m := map[string]any{
		"arguments": protocol.TableToJSON(args), "auto_delete": q.AutoDelete, "durable": q.Durable, "exclusive": q.Exclusive,
		"name": q.Name, "vhost": q.Vhost, "node": cmp.Or(q.Leader, node), "type": q.Type, "state": "running",
		"backing_queue_status": map[string]any{"avg_ack_egress_rate": 0.0, "avg_ack_ingress_rate": 0.0,
			"avg_egress_rate": 0.0, "avg_ingress_rate": 0.0, "len": q.Ready, "mode": "default",
			"target_ram_count": "infinity", "version": 1},
		"consumer_capacity": capacity, "consumer_utilisation": capacity, "consumers": q.Consumers,
		"effective_policy_definition": policyDef, "policy": nullable(q.Policy), "operator_policy": nullable(q.OperatorPolicy),
		"exclusive_consumer_tag": exclusiveTag, "single_active_consumer_tag": nullable(q.ActiveTag),
		"garbage_collection": gcStats, "head_message_timestamp": nil, "idle_since": timestamp(now),
		"memory": 0, "reductions": 0, "reductions_details": rate, "recoverable_slaves": nil,
		"message_stats": noStats,
		"messages":      q.Ready + q.Unacked, "messages_details": rate,
		"messages_ready": q.Ready, "messages_ready_details": rate,
		"messages_unacknowledged": q.Unacked, "messages_unacknowledged_details": rate,
		"messages_ram": q.Ready + q.Unacked, "messages_ready_ram": q.Ready, "messages_unacknowledged_ram": q.Unacked,
		"messages_paged_out": 0, "message_bytes_paged_out": 0,
		"message_bytes_ready": q.Bytes,
	}
	// The unacked messages' bytes and persistence are not kept by the
	// queue: the byte and persistence totals are given only when there
	// are none, when the ready ones are all.
	if q.Unacked == 0 {
		m["message_bytes"], m["message_bytes_ram"], m["message_bytes_unacknowledged"] = q.Bytes, q.Bytes, 0
		m["messages_persistent"], m["message_bytes_persistent"] = q.Persistent, q.PersistentBytes
	}
	if q.Type == "quorum" {
		// A quorum queue is a Raft cluster of one node here (recorded
		// shape; single_active_consumer_ctag is its spelling).
		for _, k := range []string{"backing_queue_status", "exclusive_consumer_tag", "head_message_timestamp",
			"idle_since", "messages_paged_out", "message_bytes_paged_out", "recoverable_slaves",
			"messages_ready_ram", "messages_unacknowledged_ram", "single_active_consumer_tag"} {
			delete(m, k)
		}
		m["leader"], m["members"], m["online"] = node, []string{node}, []string{node}
		if q.Leader != "" {
			m["leader"], m["members"], m["online"] = q.Leader, q.Members, q.Online
		}
		m["open_files"] = map[string]any{node: 0}
		m["messages_dlx"], m["message_bytes_dlx"] = 0, 0
		m["single_active_consumer_ctag"] = nullable(q.ActiveTag)
	}
	if q.OwnerID != 0 {
		if c, found := conns[q.OwnerID]; found {
			m["owner_pid_details"] = map[string]any{"name": c.name, "peer_host": c.peerHost, "peer_port": c.peerPort}
		}
	}
	if detail {
		consumers := []any{}
		for _, c := range q.ConsumerList {
			consumers = append(consumers, consumerJSON(c.ConsumerStats, q.Vhost, conns[c.ConnectionID]))
		}
		m["consumer_details"], m["deliveries"], m["incoming"] = consumers, emptyList, emptyList
	}
	return m
}

func exchangeJSON(x sim.ExchangeDetails, detail bool) map[string]any {
	args := x.Args
	if args == nil {
		args = sim.Table{}
	}
	by := "rmq-internal"
	if x.Name != "" && !strings.HasPrefix(x.Name, "amq.") {
		// amqpsim does not keep who declared an exchange.
		by = "amqpsim"
	}
	m := map[string]any{"arguments": protocol.TableToJSON(args), "auto_delete": x.AutoDelete, "durable": x.Durable,
		"internal": x.Internal, "name": x.Name, "type": x.Type, "user_who_performed_action": by, "vhost": x.Vhost,
		"message_stats": noStats}
	if x.Policy != "" {
		m["policy"] = x.Policy
	}
	if detail {
		m["incoming"], m["outgoing"] = emptyList, emptyList
	}
	return m
}

func bindingJSON(bd sim.BindingDetails) map[string]any {
	return map[string]any{"arguments": protocol.TableToJSON(bd.Args), "destination": bd.Destination,
		"destination_type": bd.DestinationType, "properties_key": propertiesKey(bd.RoutingKey, bd.Args),
		"routing_key": bd.RoutingKey, "source": bd.Source, "vhost": bd.Vhost}
}

// propertiesKey names a binding in URLs as rabbit_mgmt_format does: the
// routing key with "~" escaped, then, when it has arguments, "~" and a
// hash of them. RabbitMQ hashes the Erlang term; amqpsim hashes the
// arguments' text, so the suffix differs.
func propertiesKey(key string, args sim.Table) string {
	k := strings.ReplaceAll(key, "~", "%7E")
	if len(args) == 0 {
		return k
	}
	h := fnv.New32a()
	keys := make([]string, 0, len(args))
	for a := range args {
		keys = append(keys, a)
	}
	slices.Sort(keys)
	for _, a := range keys {
		fmt.Fprintf(h, "%s=%v;", a, args[a])
	}
	return k + "~" + base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

// connRef is what channel and consumer objects repeat of their
// connection.
type connRef struct {
	name, user, peerHost string
	peerPort             int
}

func refOf(ci sim.ConnectionInfo) connRef {
	name, peerHost, peerPort, _, _ := apiName(ci)
	return connRef{name: name, user: ci.User, peerHost: peerHost, peerPort: peerPort}
}

// apiName is RabbitMQ's name of a network connection, "PEER -> SOCK"
// ("127.0.0.1:54321 -> 127.0.0.1:5672"). A connection without socket
// addresses (in process) or over the in-memory transport gets its
// connection number as the peer's port and 0 as its own
// ("client:3 -> server:0"), so that names stay unique and of one shape.
func apiName(ci sim.ConnectionInfo) (name, peerHost string, peerPort int, host string, port int) {
	ph, pp, err := net.SplitHostPort(ci.PeerName)
	sh, sp, err2 := net.SplitHostPort(ci.SockName)
	if err != nil || err2 != nil {
		peer, sock := ci.PeerName, ci.SockName
		if peer == "" {
			peer, sock = "in-process", "amqpsim"
		}
		return fmt.Sprintf("%s:%d -> %s:0", peer, ci.ID, sock), peer, int(ci.ID), sock, 0
	}
	ppn, _ := strconv.Atoi(pp)
	spn, _ := strconv.Atoi(sp)
	return ci.PeerName + " -> " + ci.SockName, ph, ppn, sh, spn
}

func connectionJSON(ci sim.ConnectionInfo, detail bool) map[string]any {
	name, peerHost, peerPort, host, port := apiName(ci)
	props := map[string]any{}
	if ci.ClientProperties != nil {
		props = protocol.TableToJSON(ci.ClientProperties)
	}
	var noTLS any // null in a list, "" in one connection's details (recorded)
	if detail {
		noTLS = ""
	}
	state := "running"
	if ci.Blocked {
		state = "blocked"
	}
	mech := ci.AuthMechanism
	if mech == "" {
		mech = "PLAIN"
	}
	m := map[string]any{
		"auth_mechanism": mech, "channel_max": int(ci.ChannelMax), "channels": ci.Channels,
		"client_properties": props, "connected_at": ci.ConnectedAt.UnixMilli(), "frame_max": int(ci.FrameMax),
		"garbage_collection": gcStats, "host": host, "name": name, "node": node,
		"peer_cert_issuer": noTLS, "peer_cert_subject": noTLS, "peer_cert_validity": noTLS,
		"peer_host": peerHost, "peer_port": peerPort, "port": port, "protocol": "AMQP 0-9-1",
		"recv_cnt": 0, "recv_oct": 0, "recv_oct_details": rate, "reductions": 0, "reductions_details": rate,
		"send_cnt": 0, "send_oct": 0, "send_oct_details": rate, "send_pend": 0,
		"ssl": false, "ssl_cipher": noTLS, "ssl_hash": noTLS, "ssl_key_exchange": noTLS, "ssl_protocol": noTLS,
		"state": state, "timeout": int(ci.Heartbeat / time.Second), "type": "network", "user": ci.User,
		"user_who_performed_action": ci.User, "vhost": ci.Vhost,
	}
	if n, ok := ci.ClientProperties["connection_name"].(string); ok {
		m["user_provided_name"] = n
	}
	return m
}

func channelJSON(st sim.ChannelStats, ci sim.ConnectionInfo, now time.Time) map[string]any {
	name, peerHost, peerPort, _, _ := apiName(ci)
	unconfirmed := 0
	return map[string]any{
		"acks_uncommitted": 0, "confirm": st.Confirming,
		"connection_details": map[string]any{"name": name, "peer_host": peerHost, "peer_port": peerPort},
		"consumer_count":     len(st.Consumers), "garbage_collection": gcStats, "global_prefetch_count": st.GlobalLimit,
		"idle_since": timestamp(now), "messages_unacknowledged": st.Unacked, "messages_uncommitted": 0,
		"messages_unconfirmed": unconfirmed, "name": fmt.Sprintf("%s (%d)", name, st.Channel), "node": node,
		"number": int(st.Channel), "pending_raft_commands": 0, "prefetch_count": st.Prefetch,
		"reductions": 0, "reductions_details": rate, "state": "running", "transactional": st.Transactional,
		"user": ci.User, "user_who_performed_action": ci.User, "vhost": ci.Vhost,
	}
}

func consumerJSON(c sim.ConsumerStats, vhost string, conn connRef) map[string]any {
	args := c.Args
	if args == nil {
		args = sim.Table{}
	}
	status := "up"
	if !c.Active {
		status = "waiting" // a single-active-consumer queue's waiting consumer
	}
	return map[string]any{
		"ack_required": !c.NoAck, "active": c.Active, "activity_status": status, "arguments": protocol.TableToJSON(args),
		"channel_details": map[string]any{"connection_name": conn.name, "name": fmt.Sprintf("%s (%d)", conn.name, c.Channel),
			"node": node, "number": int(c.Channel), "peer_host": conn.peerHost, "peer_port": conn.peerPort, "user": conn.user},
		"consumer_tag": c.Tag, "exclusive": c.Exclusive, "prefetch_count": c.Prefetch,
		"queue": map[string]any{"name": c.Queue, "vhost": vhost},
	}
}

func policyJSON(vhost string, p sim.Policy) map[string]any {
	applyTo := p.ApplyTo
	if applyTo == "" {
		applyTo = "all"
	}
	return map[string]any{"apply-to": applyTo, "definition": protocol.TableToJSON(p.Definition), "name": p.Name,
		"pattern": p.Pattern, "priority": p.Priority, "vhost": vhost}
}

func userJSON(u sim.User) map[string]any {
	alg := u.HashingAlgorithm
	if alg == "" {
		alg = sim.HashSHA256
	}
	tags := u.Tags
	if tags == nil {
		tags = []string{}
	}
	return map[string]any{"hashing_algorithm": alg, "limits": noStats, "name": u.Name,
		"password_hash": u.PasswordHash, "tags": tags}
}

func permissionJSON(vhost, user string, p sim.Permissions) map[string]any {
	return map[string]any{"configure": p.Configure, "read": p.Read, "user": user, "vhost": vhost, "write": p.Write}
}
