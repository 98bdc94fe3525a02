package sim

import (
	"fmt"
	"slices"
	"strings"

	"github.com/amqpsim/amqpsim/definitions"
	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/queue"
)

// planner validates a definitions file against the broker into an
// importPlan, section by section in the import's order, each section
// seeing what the broker and the sections before it have: vhosts, users,
// and the exchanges and queues the file adds.
type planner struct {
	b                 *Broker
	p                 *importPlan
	vhosts, users     map[string]bool
	exchanges, queues map[[2]string]bool // added by the file, by vhost and name
}

// planImport validates defs against the broker; caller holds the lock.
func (b *Broker) planImport(defs *definitions.File) (*importPlan, error) {
	pl := &planner{b: b, p: &importPlan{}, vhosts: map[string]bool{}, users: map[string]bool{},
		exchanges: map[[2]string]bool{}, queues: map[[2]string]bool{}}
	for n := range b.vhosts {
		pl.vhosts[n] = true
	}
	for n := range b.users {
		pl.users[n] = true
	}
	for _, section := range []func(*definitions.File) error{pl.planVhosts, pl.planUsers, pl.planPermissions,
		pl.planTopicPermissions, pl.planParameters, pl.planGlobals, pl.planPolicies, pl.planExchanges,
		pl.planQueues, pl.planBindings} {
		if err := section(defs); err != nil {
			return nil, err
		}
	}
	return pl.p, nil
}

// needVhost refuses an entry of a vhost neither the broker nor the file
// has.
func (pl *planner) needVhost(what string, i int, name, vhost string) error {
	if !pl.vhosts[vhost] {
		return fmt.Errorf("%s[%d] %q: vhost '%s' does not exist", what, i, name, vhost)
	}
	return nil
}

// needUser refuses a permission of a user neither the broker nor the file
// has.
func (pl *planner) needUser(what string, i int, user string) error {
	if !pl.users[user] {
		return fmt.Errorf("%s[%d] %q: no such user", what, i, user)
	}
	return nil
}

// simError is an error of package sim's, for an entry's message.
func simError(err error) string { return strings.TrimPrefix(err.Error(), "sim: ") }

// arguments converts an entry's arguments to a field table RabbitMQ
// takes.
func arguments(m map[string]any) (Table, error) {
	args, err := protocol.TableFromJSON(m)
	if err == nil {
		err = args.Validate()
	}
	return args, err
}

func (pl *planner) planVhosts(defs *definitions.File) error {
	for i, v := range defs.Vhosts {
		if v.Name == "" {
			return fmt.Errorf("vhosts[%d]: no name", i)
		}
		pl.vhosts[v.Name] = true
		pl.p.vhosts = append(pl.p.vhosts, v)
	}
	return nil
}

func (pl *planner) planUsers(defs *definitions.File) error {
	for i, du := range defs.Users {
		u, err := pl.b.newUser(User{Name: du.Name, Password: du.Password, PasswordHash: du.PasswordHash, HashingAlgorithm: du.HashingAlgorithm, Tags: du.Tags})
		if err != nil {
			return fmt.Errorf("users[%d] %q: %v", i, du.Name, simError(err))
		}
		pl.users[du.Name] = true
		pl.p.users = append(pl.p.users, u)
	}
	return nil
}

func (pl *planner) planPermissions(defs *definitions.File) error {
	for i, dp := range defs.Permissions {
		if err := pl.needVhost("permissions", i, dp.User, dp.Vhost); err != nil {
			return err
		}
		if err := pl.needUser("permissions", i, dp.User); err != nil {
			return err
		}
		cp, err := compilePermission(Permissions{Configure: dp.Configure, Write: dp.Write, Read: dp.Read})
		if err != nil {
			return fmt.Errorf("permissions[%d] %q: %v", i, dp.User, simError(err))
		}
		pl.p.perms = append(pl.p.perms, struct {
			vhost, user string
			p           *permission
		}{dp.Vhost, dp.User, cp})
	}
	return nil
}

func (pl *planner) planTopicPermissions(defs *definitions.File) error {
	for i, dt := range defs.TopicPermissions {
		if err := pl.needVhost("topic_permissions", i, dt.User, dt.Vhost); err != nil {
			return err
		}
		if err := pl.needUser("topic_permissions", i, dt.User); err != nil {
			return err
		}
		ct, err := compileTopicPermission(TopicPermissions(dt))
		if err != nil {
			return fmt.Errorf("topic_permissions[%d] %q: %v", i, dt.User, simError(err))
		}
		// 4.3 imports the exchanges first, then sets the topic
		// permissions as rabbitmqctl does, refusing a missing exchange
		// (Profile.TopicPermissionsNeedExchange; rabbitmqctl
		// import_definitions on 4.3.6: "{no_such_exchange,<<"X">>}").
		if pl.b.profile.TopicPermissionsNeedExchange && !pl.fileOrBrokerExchange(defs, dt.Vhost, dt.Exchange) {
			return fmt.Errorf("topic_permissions[%d] %q: {no_such_exchange,<<\"%s\">>}", i, dt.User, dt.Exchange)
		}
		pl.p.topicPerms = append(pl.p.topicPerms, ct)
	}
	return nil
}

// fileOrBrokerExchange reports whether the broker has the exchange, or the
// file adds it or the vhost it creates has it from the start; it answers
// before planExchanges has seen the file's exchanges.
func (pl *planner) fileOrBrokerExchange(defs *definitions.File, vhost, name string) bool {
	if pl.hasExchange(vhost, name) {
		return true
	}
	if pl.b.vhosts[vhost] == nil && slices.ContainsFunc(standardExchanges, func(x struct{ name, kind string }) bool { return x.name == name }) {
		return true
	}
	return slices.ContainsFunc(defs.Exchanges, func(x definitions.Exchange) bool { return x.Vhost == vhost && x.Name == name })
}

// planParameters takes the operator policies, the only component amqpsim
// has.
func (pl *planner) planParameters(defs *definitions.File) error {
	for i, dp := range defs.Parameters {
		if dp.Component != "operator_policy" {
			// RabbitMQ 3.10.8 without the plugin that owns the component:
			// "Validation failed\n\ncomponent federation-upstream not found".
			return fmt.Errorf("parameters[%d] %q: component %s not found", i, dp.Name, dp.Component)
		}
		if err := pl.needVhost("parameters", i, dp.Name, dp.Vhost); err != nil {
			return err
		}
		op, err := dp.OperatorPolicy()
		if err != nil {
			return fmt.Errorf("parameters[%d] %q: %v", i, dp.Name, err)
		}
		pol := Policy{Name: dp.Name, Pattern: op.Pattern, ApplyTo: op.ApplyTo, Priority: op.Priority, Definition: op.Definition}
		cp, err := pl.b.compilePolicy(pol, operatorPolicyChecks, "operator policy")
		if err != nil {
			return fmt.Errorf("parameters[%d] %q: %v", i, dp.Name, simError(err))
		}
		pl.p.opPolicies = append(pl.p.opPolicies, vhostPolicy{dp.Vhost, cp})
	}
	return nil
}

func (pl *planner) planGlobals(defs *definitions.File) error {
	for i, g := range defs.GlobalParameters {
		if g.Name == "" {
			return fmt.Errorf("global_parameters[%d]: no name", i)
		}
		pl.p.globals = append(pl.p.globals, g)
	}
	return nil
}

func (pl *planner) planPolicies(defs *definitions.File) error {
	for i, dp := range defs.Policies {
		if err := pl.needVhost("policies", i, dp.Name, dp.Vhost); err != nil {
			return err
		}
		def, err := protocol.TableFromJSON(dp.Definition)
		if err != nil {
			return fmt.Errorf("policies[%d] %q: definition: %v", i, dp.Name, err)
		}
		cp, err := pl.b.compilePolicy(Policy{Name: dp.Name, Pattern: dp.Pattern, ApplyTo: dp.ApplyTo, Priority: dp.Priority, Definition: def}, policyChecks, "policy")
		if err != nil {
			return fmt.Errorf("policies[%d] %q: %v", i, dp.Name, simError(err))
		}
		pl.p.policies = append(pl.p.policies, vhostPolicy{dp.Vhost, cp})
	}
	return nil
}

// planExchanges takes the exchanges the broker does not have (one that
// exists is left as it is, not even compared, as RabbitMQ 3.10.8 does).
func (pl *planner) planExchanges(defs *definitions.File) error {
	for i, dx := range defs.Exchanges {
		if err := pl.needVhost("exchanges", i, dx.Name, dx.Vhost); err != nil {
			return err
		}
		if dx.Name == "" {
			return fmt.Errorf("exchanges[%d]: no name", i)
		}
		if !exchangeKinds[dx.Type] {
			return fmt.Errorf("exchanges[%d] %q: unknown exchange type '%s'", i, dx.Name, dx.Type)
		}
		args, err := arguments(dx.Arguments)
		if err != nil {
			return fmt.Errorf("exchanges[%d] %q: arguments: %v", i, dx.Name, err)
		}
		if ae, ok := args["alternate-exchange"]; ok {
			if _, isString := ae.(string); !isString {
				return fmt.Errorf("exchanges[%d] %q: invalid type '%s' for arg 'alternate-exchange'", i, dx.Name, protocol.TypeName(ae))
			}
		}
		if pl.hasExchange(dx.Vhost, dx.Name) {
			continue
		}
		pl.exchanges[[2]string{dx.Vhost, dx.Name}] = true
		x := newExchange(dx.Name, dx.Type, ExchangeOptions{Durable: dx.Durable, AutoDelete: dx.AutoDelete, Internal: dx.Internal, Args: args})
		pl.p.exchanges = append(pl.p.exchanges, struct {
			vhost string
			x     *exchange
		}{dx.Vhost, x})
	}
	return nil
}

// planQueues takes the queues the broker does not have, each checked as a
// declaration is (one that exists is left as it is).
func (pl *planner) planQueues(defs *definitions.File) error {
	for i, dq := range defs.Queues {
		if err := pl.needVhost("queues", i, dq.Name, dq.Vhost); err != nil {
			return err
		}
		if dq.Name == "" {
			return fmt.Errorf("queues[%d]: no name", i)
		}
		args, err := arguments(dq.Arguments)
		if err != nil {
			return fmt.Errorf("queues[%d] %q: arguments: %v", i, dq.Name, err)
		}
		args = queue.DefinitionArgs(args, dq.Type)
		q, err := pl.b.newQueue(dq.Vhost, dq.Name, queue.Options{Durable: dq.Durable, AutoDelete: dq.AutoDelete, Args: args})
		if err != nil {
			return fmt.Errorf("queues[%d] %q: %s", i, dq.Name, errText(err))
		}
		if pl.hasQueue(dq.Vhost, dq.Name) {
			continue
		}
		pl.queues[[2]string{dq.Vhost, dq.Name}] = true
		pl.p.queues = append(pl.p.queues, struct {
			vhost string
			q     *brokerQueue
		}{dq.Vhost, q})
	}
	return nil
}

// hasExchange and hasQueue report whether the broker or the file has the
// exchange or queue.
func (pl *planner) hasExchange(vhost, name string) bool {
	v := pl.b.vhosts[vhost]
	return v != nil && v.exchanges[name] != nil || pl.exchanges[[2]string{vhost, name}]
}

func (pl *planner) hasQueue(vhost, name string) bool {
	v := pl.b.vhosts[vhost]
	return v != nil && v.queues[name] != nil || pl.queues[[2]string{vhost, name}]
}

// planBindings takes the bindings whose source and destination the broker
// or the file has; RabbitMQ skips the others silently.
func (pl *planner) planBindings(defs *definitions.File) error {
	for i, db := range defs.Bindings {
		if err := pl.needVhost("bindings", i, db.Source, db.Vhost); err != nil {
			return err
		}
		var destExists bool
		switch db.DestinationType {
		case "queue":
			destExists = pl.hasQueue(db.Vhost, db.Destination)
		case "exchange":
			destExists = db.Destination != "" && pl.hasExchange(db.Vhost, db.Destination)
		default:
			return fmt.Errorf("bindings[%d] %q: destination_type %q is not queue or exchange", i, db.Source, db.DestinationType)
		}
		args, err := arguments(db.Arguments)
		if err != nil {
			return fmt.Errorf("bindings[%d] %q: arguments: %v", i, db.Source, err)
		}
		if !destExists || db.Source == "" || !pl.hasExchange(db.Vhost, db.Source) {
			continue
		}
		if err := pl.b.validateBinding(pl.b.sourceKind(pl.p, db.Vhost, db.Source), db.RoutingKey, args, protocol.QueueBind); err != nil {
			return fmt.Errorf("bindings[%d] %q: %s", i, db.Source, errText(err))
		}
		pl.p.bindings = append(pl.p.bindings, db)
		pl.p.bindArgs = append(pl.p.bindArgs, args)
	}
	return nil
}
