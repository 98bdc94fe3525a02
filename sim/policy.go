package sim

import (
	"cmp"
	"fmt"
	"maps"
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
	// dead-letter-exchange, dead-letter-routing-key, delivery-limit,
	// consumer-timeout (3.12+) (queues) and alternate-exchange
	// (exchanges).
	Definition Table
}

type policy struct {
	Policy
	re *pattern
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
	// Streams' retention (rabbit_stream_queue reads them with
	// policy_precedence: the policy wins; stream-policy.txt).
	"max-age": func(v any) bool {
		s, ok := v.(string)
		if !ok {
			return false
		}
		_, err := queue.ParseMaxAge(s)
		return err == nil
	},
	"stream-max-segment-size-bytes": func(v any) bool { n, ok := protocol.Int(v); return ok && n >= 0 },
	"delivery-limit":                nonNegative,
}

func nonNegative(v any) bool { n, ok := protocol.Int(v); return ok && n >= 0 }

// operatorPolicyChecks are the keys an operator policy may set in RabbitMQ
// 3.10 (rabbit_policies, operator_policy_validator), with their checks.
// max-in-memory-length and max-in-memory-bytes bound a quorum queue's
// memory, which amqpsim does not model: they are accepted and have no
// effect.
var operatorPolicyChecks = map[string]func(v any) bool{
	"expires":              policyChecks["expires"],
	"message-ttl":          policyChecks["message-ttl"],
	"max-length":           nonNegative,
	"max-length-bytes":     nonNegative,
	"delivery-limit":       nonNegative,
	"max-in-memory-length": nonNegative,
	"max-in-memory-bytes":  nonNegative,
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
	cp, err := b.compilePolicy(p, policyChecks, "policy")
	if err != nil {
		return err
	}
	v.policies[p.Name] = cp
	b.applyPolicies(v)
	return nil
}

// compilePolicy validates p against checks, the keys its kind ("policy"
// or "operator policy") may set, and compiles its pattern.
func (b *Broker) compilePolicy(p Policy, checks map[string]func(any) bool, kind string) (*policy, error) {
	if p.ApplyTo == "" {
		p.ApplyTo = "all"
	}
	if !slices.Contains([]string{"queues", "exchanges", "all"}, p.ApplyTo) {
		return nil, fmt.Errorf("sim: %s %q: apply-to %q is not queues, exchanges or all", kind, p.Name, p.ApplyTo)
	}
	re, err := compilePattern(p.Pattern) // rabbit_policy:matches/4 runs re over the name's bytes
	if err != nil {
		return nil, fmt.Errorf("sim: %s %q: pattern: %w", kind, p.Name, err)
	}
	if len(p.Definition) == 0 {
		return nil, fmt.Errorf("sim: %s %q: an empty definition", kind, p.Name)
	}
	for k, val := range p.Definition {
		check, known := checks[k]
		switch {
		case k == "consumer-timeout" && kind == "policy" && b.profile.QueueConsumerTimeout:
			// 3.12+ (Profile.QueueConsumerTimeout): rabbit_policies
			// validates a non-negative integer.
			check, known = nonNegative, true
		case k == "delivery-limit":
			// Quorum queues' delivery limit: a non-negative integer, any
			// integer from 4.0, where a negative one disables the
			// default (queue.Rules.DefaultDeliveryLimit).
			negativeOK := b.profile.Queue.DefaultDeliveryLimit != 0
			check, known = func(v any) bool { n, ok := protocol.Int(v); return ok && (n >= 0 || negativeOK) }, true
		}
		switch {
		case !known:
			return nil, fmt.Errorf("sim: %s %q: %q is not a %s key amqpsim models", kind, p.Name, k, kind)
		case !check(val):
			return nil, fmt.Errorf("sim: %s %q: invalid value %v for %q", kind, p.Name, val, k)
		}
	}
	return &policy{Policy: p, re: re}, nil
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
	defer b.mu.unlockView()
	v, ok := b.vhosts[vhostName]
	if !ok {
		return nil
	}
	return sortedPolicies(v.policies)
}

// queuePolicy returns the definition of the policy that applies to queue
// q, or nil, with the operator policy that applies, if any, merged in:
// rabbit_policy:merge_operator_definitions takes, for a key both set, the
// smaller value (every operator policy key is a limit), and an operator
// key alone as it is. A policy that sets a key q's type does not support
// does not apply to it (queue.Caps.TakesPolicy).
func (v *vhost) queuePolicy(q *brokerQueue) Table {
	var def Table
	if p := v.bestPolicy(q); p != nil {
		def = p.Definition
	}
	op := v.bestOperatorPolicy(q)
	if op == nil {
		return def
	}
	merged := maps.Clone(def)
	if merged == nil {
		merged = Table{}
	}
	for k, ov := range op.Definition {
		pv, has := merged[k]
		pn, pok := protocol.Int(pv)
		on, ook := protocol.Int(ov)
		if !has || !pok || !ook || on < pn {
			merged[k] = ov
		}
	}
	return merged
}

// exchangePolicy returns the definition of the policy that applies to the
// exchange name, or nil.
func (v *vhost) exchangePolicy(name string) Table {
	if p := bestOf(v.policies, name, "exchanges", nil); p != nil {
		return p.Definition
	}
	return nil
}

// bestPolicy returns the (user) policy that applies to queue q, or nil;
// bestOperatorPolicy the operator policy; bestExchangePolicy the policy
// that applies to the exchange name.
func (v *vhost) bestPolicy(q *brokerQueue) *policy {
	return bestOf(v.policies, q.Name(), "queues", q.Caps().TakesPolicy)
}

func (v *vhost) bestOperatorPolicy(q *brokerQueue) *policy {
	return bestOf(v.opPolicies, q.Name(), "queues", q.Caps().TakesPolicy)
}

func (v *vhost) bestExchangePolicy(name string) *policy {
	return bestOf(v.policies, name, "exchanges", nil)
}

// bestOf returns the highest-priority policy of policies that applies to
// name and whose definition takes accepts (nil: any), or nil. RabbitMQ
// filters the policies that cannot apply before it sorts by priority, so a
// lower-priority policy applies where a higher one cannot
// (rabbit_policy:match_all/2).
func bestOf(policies map[string]*policy, name, kind string, takes func(Table) bool) *policy {
	var best *policy
	for _, p := range policies {
		if (p.ApplyTo != "all" && p.ApplyTo != kind) || !p.re.match(name) || takes != nil && !takes(p.Definition) {
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
		q.ApplyPolicy(v.queuePolicy(q))
		b.markDirty(q)
	}
	for _, x := range sortedExchanges(v) {
		x.applyPolicy(v.exchangePolicy(x.name))
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

// SetOperatorPolicy sets (or replaces) an operator policy of vhost, as
// rabbitmqctl set_operator_policy does: a policy an operator imposes over
// the users' own. Its keys (expires, message-ttl, max-length,
// max-length-bytes, delivery-limit, max-in-memory-length,
// max-in-memory-bytes) are limits: where the user's policy or the queue's
// argument sets one too, the smallest value applies. Of the operator
// policies that match a queue, the highest Priority applies, alone. It
// applies at once to the matching queues.
func (b *Broker) SetOperatorPolicy(vhostName string, p Policy) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	v, err := b.lookupVhost(vhostName)
	if err != nil {
		return err
	}
	cp, err := b.compilePolicy(p, operatorPolicyChecks, "operator policy")
	if err != nil {
		return err
	}
	v.opPolicies[p.Name] = cp
	b.applyPolicies(v)
	return nil
}

// ClearOperatorPolicy removes an operator policy; clearing a missing one
// is an error.
func (b *Broker) ClearOperatorPolicy(vhostName, name string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	v, err := b.lookupVhost(vhostName)
	if err != nil {
		return err
	}
	if _, ok := v.opPolicies[name]; !ok {
		return fmt.Errorf("sim: no operator policy %q in vhost %q", name, vhostName)
	}
	delete(v.opPolicies, name)
	b.applyPolicies(v)
	return nil
}

// OperatorPolicies returns a vhost's operator policies by name.
func (b *Broker) OperatorPolicies(vhostName string) []Policy {
	b.mu.Lock()
	defer b.mu.unlockView()
	v, ok := b.vhosts[vhostName]
	if !ok {
		return nil
	}
	return sortedPolicies(v.opPolicies)
}

func sortedPolicies(ps map[string]*policy) []Policy {
	var out []Policy
	for _, p := range ps {
		out = append(out, p.Policy)
	}
	slices.SortFunc(out, func(a, c Policy) int { return cmp.Compare(a.Name, c.Name) })
	return out
}
