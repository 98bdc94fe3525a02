package sim

import (
	"cmp"
	"fmt"
	"maps"
	"regexp"
	"slices"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/queue"
)

// Policy is a RabbitMQ policy: a definition applied to the queues and
// exchanges of a vhost whose names match Pattern. Of the policies that
// match, the one with the highest Priority applies, alone; see
// queue.EffectiveLimits for how its keys combine with a queue's own
// arguments. Unlike RabbitMQ, which leaves a tie to the order of its
// policy table (a hash order: either policy, measured on 3.10.8), amqpsim
// applies the first by name.
type Policy struct {
	Name     string
	Pattern  string // a regular expression, matched against the name
	ApplyTo  string // "queues", "exchanges" or "all"; "" means "all"
	Priority int
	// Definition holds policy keys, without the x- prefix: message-ttl,
	// expires, max-length, max-length-bytes, overflow,
	// dead-letter-exchange, dead-letter-routing-key (queues) and
	// alternate-exchange (exchanges).
	Definition Table
}

type policy struct {
	Policy
	re *regexp.Regexp
}

// policyChecks validate a definition's keys as rabbit_policy_validator
// does for the keys amqpsim models.
var policyChecks = map[string]func(v any) bool{
	"message-ttl":      func(v any) bool { n, ok := protocol.Int(v); return ok && n >= 0 && n <= queue.MaxTimeout },
	"expires":          func(v any) bool { n, ok := protocol.Int(v); return ok && n > 0 && n <= queue.MaxTimeout },
	"max-length":       func(v any) bool { n, ok := protocol.Int(v); return ok && n >= 0 },
	"max-length-bytes": func(v any) bool { n, ok := protocol.Int(v); return ok && n >= 0 },
	"overflow": func(v any) bool {
		return slices.Contains([]any{queue.DropHead, queue.RejectPublish, queue.RejectPublishDLX}, v)
	},
	"dead-letter-exchange":    func(v any) bool { _, ok := v.(string); return ok },
	"dead-letter-routing-key": func(v any) bool { _, ok := v.(string); return ok },
	"alternate-exchange":      func(v any) bool { _, ok := v.(string); return ok },
}

// SetPolicy sets (or replaces) a policy of vhost; it applies at once to the
// queues and exchanges whose names it matches, as in RabbitMQ. It fails,
// changing nothing, for a missing vhost, a bad pattern, apply-to or
// definition.
func (b *Broker) SetPolicy(vhostName string, p Policy) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	v, err := b.lookupVhost(vhostName)
	if err != nil {
		return err
	}
	if p.ApplyTo == "" {
		p.ApplyTo = "all"
	}
	if !slices.Contains([]string{"queues", "exchanges", "all"}, p.ApplyTo) {
		return fmt.Errorf("sim: policy %q: apply-to %q is not queues, exchanges or all", p.Name, p.ApplyTo)
	}
	re, err := regexp.Compile(p.Pattern)
	if err != nil {
		return fmt.Errorf("sim: policy %q: pattern: %w", p.Name, err)
	}
	if len(p.Definition) == 0 {
		return fmt.Errorf("sim: policy %q: an empty definition", p.Name)
	}
	for k, val := range p.Definition {
		check, known := policyChecks[k]
		switch {
		case !known:
			return fmt.Errorf("sim: policy %q: %q is not a policy key amqpsim models", p.Name, k)
		case !check(val):
			return fmt.Errorf("sim: policy %q: invalid value %v for %q", p.Name, val, k)
		}
	}
	v.policies[p.Name] = &policy{Policy: p, re: re}
	b.applyPolicies(v)
	return nil
}

// ClearPolicy removes a policy; what it set no longer applies. Clearing a
// missing policy is an error, as rabbitmqctl clear_policy reports it.
func (b *Broker) ClearPolicy(vhostName, name string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	v, err := b.lookupVhost(vhostName)
	if err != nil {
		return err
	}
	if _, ok := v.policies[name]; !ok {
		return fmt.Errorf("sim: no policy %q in vhost %q", name, vhostName)
	}
	delete(v.policies, name)
	b.applyPolicies(v)
	return nil
}

// Policies returns a vhost's policies by name.
func (b *Broker) Policies(vhostName string) []Policy {
	b.mu.Lock()
	defer b.mu.Unlock()
	v, ok := b.vhosts[vhostName]
	if !ok {
		return nil
	}
	var out []Policy
	for _, p := range v.policies {
		out = append(out, p.Policy)
	}
	slices.SortFunc(out, func(a, c Policy) int { return cmp.Compare(a.Name, c.Name) })
	return out
}

// policyFor returns the definition of the policy that applies to the
// queue or exchange name (kind "queues" or "exchanges"), or nil.
func (v *vhost) policyFor(name, kind string) Table {
	if p := v.bestPolicy(name, kind); p != nil {
		return p.Definition
	}
	return nil
}

// bestPolicy returns the policy that applies to the queue or exchange
// name, or nil.
func (v *vhost) bestPolicy(name, kind string) *policy {
	var best *policy
	for _, p := range v.policies {
		if (p.ApplyTo != "all" && p.ApplyTo != kind) || !p.re.MatchString(name) {
			continue
		}
		if best == nil || p.Priority > best.Priority || p.Priority == best.Priority && p.Name < best.Name {
			best = p
		}
	}
	return best
}

// applyPolicies makes the vhost's policies take effect on its queues and
// exchanges, in name order; caller holds the lock.
func (b *Broker) applyPolicies(v *vhost) {
	for _, n := range slices.Sorted(maps.Keys(v.queues)) {
		q := v.queues[n]
		q.ApplyPolicy(v.policyFor(n, "queues"))
		b.markDirty(q)
	}
	for _, x := range sortedExchanges(v) {
		x.applyPolicy(v.policyFor(x.name, "exchanges"))
	}
	b.flush()
}

// applyPolicy sets the exchange's alternate exchange from its argument or,
// without one, the policy (rabbit_policy:get_arg: the argument wins).
func (x *exchange) applyPolicy(definition Table) {
	x.alternate, x.hasAlternate = x.args["alternate-exchange"].(string)
	if !x.hasAlternate {
		x.alternate, x.hasAlternate = definition["alternate-exchange"].(string)
	}
}
