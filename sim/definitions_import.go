package sim

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/amqpsim/amqpsim/definitions"
	"github.com/amqpsim/amqpsim/protocol"
)

// importPlan is a validated definitions file, ready to apply without
// failing.
type importPlan struct {
	vhosts []definitions.Vhost
	users  []*user
	perms  []struct {
		vhost, user string
		p           *permission
	}
	topicPerms           []*topicPermission
	globals              []definitions.GlobalParameter
	opPolicies, policies []vhostPolicy
	exchanges            []struct {
		vhost string
		x     *exchange
	}
	queues []struct {
		vhost string
		q     *brokerQueue
	}
	bindings []definitions.Binding
	bindArgs []Table
}

// vhostPolicy is a policy or an operator policy of a vhost.
type vhostPolicy struct {
	vhost string
	p     *policy
}

// ImportDefinitions applies defs, as rabbitmqctl import_definitions does:
// vhosts, users, permissions, topic permissions, parameters (operator
// policies), global parameters, policies, exchanges, queues, bindings.
// Users, permissions and policies in the file replace those of the same
// name; queues and exchanges that exist are left as they are (RabbitMQ
// 3.10.8 does not even compare them). A binding whose source or
// destination exists neither in the broker nor in the file is skipped, as
// RabbitMQ skips it silently.
//
// Unlike RabbitMQ, which imports entry by entry and leaves the ones before
// a bad entry applied (measured: of three queues, the two good ones are
// declared when the middle one's x-message-ttl is -1), the import is
// atomic: every entry is checked first and a bad one fails the whole
// import, changing nothing, with an error naming it, e.g. `queues[1] "q3":
// PRECONDITION_FAILED - invalid arg 'x-message-ttl' ...`.
func (b *Broker) ImportDefinitions(defs *definitions.File) error {
	if defs == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	plan, err := b.planImport(defs)
	if err != nil {
		return fmt.Errorf("sim: definitions: %w", err)
	}
	b.applyImport(plan)
	return nil
}

// errText is a protocol error's reply text, which is what RabbitMQ's
// import reports, or the error.
func errText(err error) string {
	if perr, ok := err.(*protocol.Error); ok {
		return perr.Text
	}
	return err.Error()
}

// sourceKind is the type of an exchange that exists in the broker or the
// plan.
func (b *Broker) sourceKind(p *importPlan, vhost, name string) string {
	if v := b.vhosts[vhost]; v != nil && v.exchanges[name] != nil {
		return v.exchanges[name].kind
	}
	for _, e := range p.exchanges {
		if e.vhost == vhost && e.x.name == name {
			return e.x.kind
		}
	}
	return ""
}

// applyImport applies a validated plan; caller holds the lock.
func (b *Broker) applyImport(p *importPlan) {
	touched := map[string]bool{}
	for _, dv := range p.vhosts {
		b.addVhost(dv.Name)
		if dv.Metadata != nil {
			v := b.vhosts[dv.Name]
			v.description, v.tags = dv.Metadata.Description, normalTags(dv.Metadata.Tags)
		}
	}
	for _, u := range p.users {
		b.users[u.name] = u
	}
	for _, e := range p.perms {
		b.vhosts[e.vhost].perms[e.user] = e.p
	}
	for _, t := range p.topicPerms {
		v := b.vhosts[t.Vhost]
		if v.topicPerms[t.User] == nil {
			v.topicPerms[t.User] = map[string]*topicPermission{}
		}
		v.topicPerms[t.User][t.Exchange] = t
	}
	for _, g := range p.globals {
		if b.globals == nil {
			b.globals = map[string]json.RawMessage{}
		}
		b.globals[g.Name] = slices.Clone(g.Value)
	}
	for _, e := range p.opPolicies {
		b.vhosts[e.vhost].opPolicies[e.p.Name] = e.p
		touched[e.vhost] = true
	}
	for _, e := range p.policies {
		b.vhosts[e.vhost].policies[e.p.Name] = e.p
		touched[e.vhost] = true
	}
	for _, e := range p.exchanges {
		v := b.vhosts[e.vhost]
		e.x.applyPolicy(v.exchangePolicy(e.x.name))
		v.exchanges[e.x.name] = e.x
	}
	for _, e := range p.queues {
		b.addQueue(b.vhosts[e.vhost], e.q, 1) // imported at boot, on the first node
	}
	for i, db := range p.bindings {
		v := b.vhosts[db.Vhost]
		d := destination{x: v.exchanges[db.Destination]}
		if db.DestinationType == "queue" {
			d = destination{q: v.queues[db.Destination]}
		}
		v.exchanges[db.Source].bind(d, db.RoutingKey, p.bindArgs[i])
	}
	for _, n := range slices.Sorted(maps.Keys(touched)) {
		b.applyPolicies(b.vhosts[n])
	}
	b.flush()
}
