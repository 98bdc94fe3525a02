package sim

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/amqpsim/amqpsim/definitions"
	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/queue"
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
	topicPerms []*topicPermission
	globals    []definitions.GlobalParameter
	opPolicies []struct {
		vhost string
		p     *policy
	}
	policies []struct {
		vhost string
		p     *policy
	}
	exchanges []struct {
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

// planImport validates defs against the broker; caller holds the lock.
func (b *Broker) planImport(defs *definitions.File) (*importPlan, error) {
	p := &importPlan{}
	vhosts := map[string]bool{}
	for n := range b.vhosts {
		vhosts[n] = true
	}
	for i, v := range defs.Vhosts {
		if v.Name == "" {
			return nil, fmt.Errorf("vhosts[%d]: no name", i)
		}
		vhosts[v.Name] = true
		p.vhosts = append(p.vhosts, v)
	}
	needVhost := func(what string, i int, name, vhost string) error {
		if !vhosts[vhost] {
			return fmt.Errorf("%s[%d] %q: vhost '%s' does not exist", what, i, name, vhost)
		}
		return nil
	}
	users := map[string]bool{}
	for n := range b.users {
		users[n] = true
	}
	for i, du := range defs.Users {
		u, err := b.newUser(User{Name: du.Name, Password: du.Password, PasswordHash: du.PasswordHash, HashingAlgorithm: du.HashingAlgorithm, Tags: du.Tags})
		if err != nil {
			return nil, fmt.Errorf("users[%d] %q: %v", i, du.Name, strings.TrimPrefix(err.Error(), "sim: "))
		}
		users[du.Name] = true
		p.users = append(p.users, u)
	}
	for i, dp := range defs.Permissions {
		if err := needVhost("permissions", i, dp.User, dp.Vhost); err != nil {
			return nil, err
		}
		if !users[dp.User] {
			return nil, fmt.Errorf("permissions[%d] %q: no such user", i, dp.User)
		}
		cp, err := compilePermission(Permissions{Configure: dp.Configure, Write: dp.Write, Read: dp.Read})
		if err != nil {
			return nil, fmt.Errorf("permissions[%d] %q: %v", i, dp.User, strings.TrimPrefix(err.Error(), "sim: "))
		}
		p.perms = append(p.perms, struct {
			vhost, user string
			p           *permission
		}{dp.Vhost, dp.User, cp})
	}
	for i, dt := range defs.TopicPermissions {
		if err := needVhost("topic_permissions", i, dt.User, dt.Vhost); err != nil {
			return nil, err
		}
		if !users[dt.User] {
			return nil, fmt.Errorf("topic_permissions[%d] %q: no such user", i, dt.User)
		}
		ct, err := compileTopicPermission(TopicPermissions(dt))
		if err != nil {
			return nil, fmt.Errorf("topic_permissions[%d] %q: %v", i, dt.User, strings.TrimPrefix(err.Error(), "sim: "))
		}
		p.topicPerms = append(p.topicPerms, ct)
	}
	for i, dp := range defs.Parameters {
		if dp.Component != "operator_policy" {
			// RabbitMQ 3.10.8 without the plugin that owns the component:
			// "Validation failed\n\ncomponent federation-upstream not found".
			return nil, fmt.Errorf("parameters[%d] %q: component %s not found", i, dp.Name, dp.Component)
		}
		if err := needVhost("parameters", i, dp.Name, dp.Vhost); err != nil {
			return nil, err
		}
		op, err := dp.OperatorPolicy()
		if err != nil {
			return nil, fmt.Errorf("parameters[%d] %q: %v", i, dp.Name, err)
		}
		pol := Policy{Name: dp.Name, Pattern: op.Pattern, ApplyTo: op.ApplyTo, Priority: op.Priority, Definition: op.Definition}
		cp, err := b.compilePolicy(pol, operatorPolicyChecks, "operator policy")
		if err != nil {
			return nil, fmt.Errorf("parameters[%d] %q: %v", i, dp.Name, strings.TrimPrefix(err.Error(), "sim: "))
		}
		p.opPolicies = append(p.opPolicies, struct {
			vhost string
			p     *policy
		}{dp.Vhost, cp})
	}
	for i, g := range defs.GlobalParameters {
		if g.Name == "" {
			return nil, fmt.Errorf("global_parameters[%d]: no name", i)
		}
		p.globals = append(p.globals, g)
	}
	for i, dp := range defs.Policies {
		if err := needVhost("policies", i, dp.Name, dp.Vhost); err != nil {
			return nil, err
		}
		def, err := definitions.FieldTable(dp.Definition)
		if err != nil {
			return nil, fmt.Errorf("policies[%d] %q: definition: %v", i, dp.Name, err)
		}
		cp, err := b.compilePolicy(Policy{Name: dp.Name, Pattern: dp.Pattern, ApplyTo: dp.ApplyTo, Priority: dp.Priority, Definition: def}, policyChecks, "policy")
		if err != nil {
			return nil, fmt.Errorf("policies[%d] %q: %v", i, dp.Name, strings.TrimPrefix(err.Error(), "sim: "))
		}
		p.policies = append(p.policies, struct {
			vhost string
			p     *policy
		}{dp.Vhost, cp})
	}
	// exists reports whether the broker or the file has the queue or
	// exchange.
	fileExchanges, fileQueues := map[[2]string]bool{}, map[[2]string]bool{}
	for i, dx := range defs.Exchanges {
		if err := needVhost("exchanges", i, dx.Name, dx.Vhost); err != nil {
			return nil, err
		}
		if dx.Name == "" {
			return nil, fmt.Errorf("exchanges[%d]: no name", i)
		}
		if !exchangeKinds[dx.Type] {
			return nil, fmt.Errorf("exchanges[%d] %q: unknown exchange type '%s'", i, dx.Name, dx.Type)
		}
		args, err := definitions.FieldTable(dx.Arguments)
		if err == nil {
			err = args.Validate()
		}
		if err != nil {
			return nil, fmt.Errorf("exchanges[%d] %q: arguments: %v", i, dx.Name, err)
		}
		if ae, ok := args["alternate-exchange"]; ok {
			if _, isString := ae.(string); !isString {
				return nil, fmt.Errorf("exchanges[%d] %q: invalid type '%s' for arg 'alternate-exchange'", i, dx.Name, protocol.TypeName(ae))
			}
		}
		key := [2]string{dx.Vhost, dx.Name}
		if v := b.vhosts[dx.Vhost]; (v != nil && v.exchanges[dx.Name] != nil) || fileExchanges[key] {
			continue
		}
		fileExchanges[key] = true
		x := newExchange(dx.Name, dx.Type, ExchangeOptions{Durable: dx.Durable, AutoDelete: dx.AutoDelete, Internal: dx.Internal, Args: args})
		p.exchanges = append(p.exchanges, struct {
			vhost string
			x     *exchange
		}{dx.Vhost, x})
	}
	for i, dq := range defs.Queues {
		if err := needVhost("queues", i, dq.Name, dq.Vhost); err != nil {
			return nil, err
		}
		if dq.Name == "" {
			return nil, fmt.Errorf("queues[%d]: no name", i)
		}
		args, err := definitions.FieldTable(dq.Arguments)
		if err == nil {
			err = args.Validate()
		}
		if err != nil {
			return nil, fmt.Errorf("queues[%d] %q: arguments: %v", i, dq.Name, err)
		}
		args = queue.DefinitionArgs(args, dq.Type)
		q, err := b.newQueue(dq.Vhost, dq.Name, queue.Options{Durable: dq.Durable, AutoDelete: dq.AutoDelete, Args: args})
		if err != nil {
			return nil, fmt.Errorf("queues[%d] %q: %s", i, dq.Name, errText(err))
		}
		key := [2]string{dq.Vhost, dq.Name}
		if v := b.vhosts[dq.Vhost]; (v != nil && v.queues[dq.Name] != nil) || fileQueues[key] {
			continue
		}
		fileQueues[key] = true
		p.queues = append(p.queues, struct {
			vhost string
			q     *brokerQueue
		}{dq.Vhost, q})
	}
	hasExchange := func(vhost, name string) bool {
		v := b.vhosts[vhost]
		return name != "" && (v != nil && v.exchanges[name] != nil || fileExchanges[[2]string{vhost, name}])
	}
	for i, db := range defs.Bindings {
		if err := needVhost("bindings", i, db.Source, db.Vhost); err != nil {
			return nil, err
		}
		var destExists bool
		switch db.DestinationType {
		case "queue":
			v := b.vhosts[db.Vhost]
			destExists = v != nil && v.queues[db.Destination] != nil || fileQueues[[2]string{db.Vhost, db.Destination}]
		case "exchange":
			destExists = hasExchange(db.Vhost, db.Destination)
		default:
			return nil, fmt.Errorf("bindings[%d] %q: destination_type %q is not queue or exchange", i, db.Source, db.DestinationType)
		}
		args, err := definitions.FieldTable(db.Arguments)
		if err == nil {
			err = args.Validate()
		}
		if err != nil {
			return nil, fmt.Errorf("bindings[%d] %q: arguments: %v", i, db.Source, err)
		}
		if !destExists || !hasExchange(db.Vhost, db.Source) {
			continue
		}
		if err := b.validateBinding(b.sourceKind(p, db.Vhost, db.Source), db.RoutingKey, args, protocol.QueueBind); err != nil {
			return nil, fmt.Errorf("bindings[%d] %q: %s", i, db.Source, errText(err))
		}
		p.bindings = append(p.bindings, db)
		p.bindArgs = append(p.bindArgs, args)
	}
	return p, nil
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
		e.x.applyPolicy(v.policyFor(e.x.name, "exchanges"))
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
