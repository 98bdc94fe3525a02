package sim

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"github.com/amqpsim/amqpsim/definitions"
)

// ExportDefinitions returns the broker's definitions as rabbitmqctl
// export_definitions on RabbitMQ 3.10.8 writes them: users with their
// password hashes, vhosts, permissions, topic permissions, operator
// policies (as parameters of component operator_policy), global
// parameters, policies, the queues that are not exclusive (durable
// or not), the exchanges that are neither predeclared nor internal, and
// the bindings between them, each list sorted.
//
// Unlike RabbitMQ 3.10.8, which exports an operator policy's definition as
// a list of [key, value] pairs that its own import then refuses
// ("definition must be a dictionary", measured), amqpsim exports it as an
// object, which both import; ImportDefinitions reads both forms.
func (b *Broker) ExportDefinitions() *definitions.File {
	b.mu.Lock()
	defer b.mu.unlockView()
	d := &definitions.File{RabbitVersion: b.profile.ServerVersion, RabbitMQVersion: b.profile.ServerVersion,
		Users: []definitions.User{}, Vhosts: []definitions.Vhost{}, Permissions: []definitions.Permission{}, TopicPermissions: []definitions.TopicPermission{},
		Parameters: []definitions.Parameter{}, GlobalParameters: []definitions.GlobalParameter{}, Policies: []definitions.Policy{},
		Queues: []definitions.Queue{}, Exchanges: []definitions.Exchange{}, Bindings: []definitions.Binding{}}
	for _, n := range slices.Sorted(maps.Keys(b.users)) {
		u := b.users[n].public()
		d.Users = append(d.Users, definitions.User{Name: u.Name, PasswordHash: u.PasswordHash, HashingAlgorithm: u.HashingAlgorithm,
			Tags: definitions.Tags(u.Tags), Limits: map[string]any{}})
	}
	for _, n := range slices.Sorted(maps.Keys(b.globals)) {
		d.GlobalParameters = append(d.GlobalParameters, definitions.GlobalParameter{Name: n, Value: slices.Clone(b.globals[n])})
	}
	for _, vn := range slices.Sorted(maps.Keys(b.vhosts)) {
		v := b.vhosts[vn]
		d.Vhosts = append(d.Vhosts, definitions.Vhost{Name: vn, Limits: []any{}, Metadata: &definitions.VhostMetadata{Description: v.description, Tags: definitions.Tags(slices.Clone(v.tags))}})
		for _, un := range slices.Sorted(maps.Keys(v.perms)) {
			p := v.perms[un]
			d.Permissions = append(d.Permissions, definitions.Permission{User: un, Vhost: vn, Configure: p.Configure, Write: p.Write, Read: p.Read})
		}
		for _, un := range slices.Sorted(maps.Keys(v.topicPerms)) {
			for _, xn := range slices.Sorted(maps.Keys(v.topicPerms[un])) {
				d.TopicPermissions = append(d.TopicPermissions, definitions.TopicPermission(v.topicPerms[un][xn].TopicPermissions))
			}
		}
		for _, p := range sortedPolicies(v.opPolicies) {
			value, _ := json.Marshal(map[string]any{"pattern": p.Pattern, "apply-to": p.ApplyTo, "priority": p.Priority, "definition": p.Definition})
			d.Parameters = append(d.Parameters, definitions.Parameter{Vhost: vn, Component: "operator_policy", Name: p.Name, Value: value})
		}
		for _, p := range sortedPolicies(v.policies) {
			d.Policies = append(d.Policies, definitions.Policy{Vhost: vn, Name: p.Name, Pattern: p.Pattern, ApplyTo: p.ApplyTo, Priority: p.Priority,
				Definition: map[string]any(maps.Clone(p.Definition))})
		}
		for _, qn := range slices.Sorted(maps.Keys(v.queues)) {
			q := v.queues[qn]
			o := q.Options()
			if o.Exclusive {
				continue
			}
			args := map[string]any(maps.Clone(o.Args))
			if args == nil {
				args = map[string]any{}
			}
			d.Queues = append(d.Queues, definitions.Queue{Name: qn, Vhost: vn, Durable: o.Durable, AutoDelete: o.AutoDelete, Arguments: args, Type: q.Type().String()})
		}
		for _, x := range sortedExchanges(v) {
			if x.name != "" && !strings.HasPrefix(x.name, "amq.") && !x.internal {
				args := map[string]any(maps.Clone(x.args))
				if args == nil {
					args = map[string]any{}
				}
				d.Exchanges = append(d.Exchanges, definitions.Exchange{Name: x.name, Vhost: vn, Type: x.kind, Durable: x.durable, AutoDelete: x.autoDelete, Arguments: args})
			}
			for _, bd := range x.bindings.sorted() {
				db := definitions.Binding{Source: x.name, Vhost: vn, RoutingKey: bd.key(), Arguments: map[string]any(maps.Clone(bd.args))}
				if db.Arguments == nil {
					db.Arguments = map[string]any{}
				}
				if bd.dest().q != nil {
					if bd.dest().q.Options().Exclusive {
						continue
					}
					db.Destination, db.DestinationType = bd.dest().q.Name(), "queue"
				} else {
					db.Destination, db.DestinationType = bd.dest().x.name, "exchange"
				}
				d.Bindings = append(d.Bindings, db)
			}
		}
	}
	return d
}
