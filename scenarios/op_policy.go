package scenarios

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// The policy steps: a policy or an operator policy of the vhost "/", set
// in one shape of words and cleared by name. AMQP 0-9-1 cannot set them:
// on a broker the recorder runs rabbitmqctl.

// SetPolicy sets a policy of the vhost "/": "policy p1 ^orders$
// arg.max-length=2 apply-to=queues priority=1". The definition's keys are
// RabbitMQ's policy keys (no x- prefix), written as arg.KEY=VALUE; the
// pattern must start with ^ (the recorder prefixes names after it).
type SetPolicy struct {
	Name, Pattern, ApplyTo string
	Priority               int
	Definition             protocol.Table
}

// ClearPolicy clears a policy: "clear-policy p1".
type ClearPolicy struct{ Name string }

// SetOperatorPolicy sets an operator policy of "/", in the policy step's
// words: "operator-policy cap ^ arg.max-length=2 apply-to=queues".
type SetOperatorPolicy struct {
	Name, Pattern, ApplyTo string
	Priority               int
	Definition             protocol.Table
}

// ClearOperatorPolicy clears an operator policy:
// "clear-operator-policy cap".
type ClearOperatorPolicy struct{ Name string }

func init() {
	register(
		policyVerb("policy", "a policy", func(p SetPolicy) Op { return p }),
		&verb{name: "clear-policy", usage: "clear-policy NAME", minPos: 1, maxPos: 1, what: "clearing a policy",
			build: func(a *argSet) (Op, error) { return ClearPolicy{Name: a.str(0)}, nil }},
		policyVerb("operator-policy", "", func(p SetPolicy) Op { return SetOperatorPolicy(p) }),
		&verb{name: "clear-operator-policy", usage: "clear-operator-policy NAME", minPos: 1, maxPos: 1,
			build: func(a *argSet) (Op, error) { return ClearOperatorPolicy{Name: a.str(0)}, nil }},
	)
}

// policyVerb is the verb of a policy step, which op makes of its words.
func policyVerb(name, what string, op func(SetPolicy) Op) *verb {
	return &verb{name: name, usage: name + " NAME ^PATTERN [apply-to=queues|exchanges|all] [priority=N] arg.KEY=V...", minPos: 2, maxPos: 2,
		options: []string{"apply-to", "priority"}, args: true, what: what,
		build: func(a *argSet) (Op, error) {
			p := SetPolicy{Name: a.str(0), Pattern: a.str(1), ApplyTo: a.opts["apply-to"].val, Definition: a.args}
			if !strings.HasPrefix(p.Pattern, "^") {
				return nil, a.errAt(a.pos[1], "expected a pattern that starts with ^")
			}
			if pr, ok := a.opt("priority"); ok {
				n, err := strconv.Atoi(pr.val)
				if err != nil {
					return nil, a.errAt(pr, "expected an integer priority")
				}
				p.Priority = n
			}
			for k := range p.Definition {
				if strings.HasPrefix(k, "x-") {
					return nil, a.errAt(a.pos[0], "policy keys have no x- prefix: write arg.%s", strings.TrimPrefix(k, "x-"))
				}
			}
			return op(p), nil
		}}
}

func (SetPolicy) isOp()           {}
func (ClearPolicy) isOp()         {}
func (SetOperatorPolicy) isOp()   {}
func (ClearOperatorPolicy) isOp() {}

// String returns the SetPolicy step line.
func (o SetPolicy) String() string {
	w := []string{"policy", word(o.Name), word(o.Pattern)}
	if o.ApplyTo != "" {
		w = append(w, "apply-to="+optWord(o.ApplyTo))
	}
	if o.Priority != 0 {
		w = append(w, fmt.Sprintf("priority=%d", o.Priority))
	}
	return line(append(w, formatArgs(o.Definition)...)...)
}

// String returns the ClearPolicy step line.
func (o ClearPolicy) String() string { return line("clear-policy", word(o.Name)) }

// String returns the SetOperatorPolicy step line.
func (o SetOperatorPolicy) String() string {
	s := SetPolicy(o).String()
	return "operator-" + s
}

// String returns the ClearOperatorPolicy step line.
func (o ClearOperatorPolicy) String() string { return line("clear-operator-policy", word(o.Name)) }

func (o SetPolicy) runSim(b *sim.Broker) error {
	return b.SetPolicy("/", sim.Policy{Name: o.Name, Pattern: o.Pattern, ApplyTo: o.ApplyTo, Priority: o.Priority, Definition: o.Definition})
}

func (o ClearPolicy) runSim(b *sim.Broker) error { return b.ClearPolicy("/", o.Name) }

func (o SetOperatorPolicy) runSim(b *sim.Broker) error {
	return b.SetOperatorPolicy("/", sim.Policy{Name: o.Name, Pattern: o.Pattern, ApplyTo: o.ApplyTo, Priority: o.Priority, Definition: o.Definition})
}

func (o ClearOperatorPolicy) runSim(b *sim.Broker) error { return b.ClearOperatorPolicy("/", o.Name) }

// runCtl sets the policy with the run's prefix on its name, and on the
// pattern after its ^.
func (o SetPolicy) runCtl(d *amqpDriver) error {
	d.policies = append(d.policies, d.p(o.Name))
	return d.setPolicy("set_policy", o, "^"+regexp.QuoteMeta(d.prefix)+strings.TrimPrefix(o.Pattern, "^"))
}

func (o ClearPolicy) runCtl(d *amqpDriver) error {
	return d.rabbitmqctl("clear_policy", "-p", "/", d.p(o.Name))
}

func (o SetOperatorPolicy) runCtl(d *amqpDriver) error {
	d.opPolicies = append(d.opPolicies, d.p(o.Name))
	return d.setPolicy("set_operator_policy", SetPolicy(o), d.pattern(o.Pattern))
}

func (o ClearOperatorPolicy) runCtl(d *amqpDriver) error {
	return d.rabbitmqctl("clear_operator_policy", "-p", "/", d.p(o.Name))
}

// setPolicy sets a policy (cmd set_policy) or an operator policy
// (set_operator_policy) of "/" through rabbitmqctl, with the run's prefix
// on its name and on the names its definition refers to.
func (d *amqpDriver) setPolicy(cmd string, o SetPolicy, pattern string) error {
	def, err := json.Marshal(d.policyDefinition(o.Definition))
	if err != nil {
		return err
	}
	args := []string{cmd, "-p", "/"}
	if o.ApplyTo != "" {
		args = append(args, "--apply-to", o.ApplyTo)
	}
	if o.Priority != 0 {
		args = append(args, "--priority", fmt.Sprint(o.Priority))
	}
	return d.rabbitmqctl(append(args, d.p(o.Name), pattern, string(def))...)
}

// policyDefinition converts a definition for rabbitmqctl's JSON, prefixing
// the names it refers to as queueArgs does.
func (d *amqpDriver) policyDefinition(def protocol.Table) map[string]any {
	out := map[string]any{}
	for k, v := range def {
		out[k] = v
	}
	if x, ok := out["dead-letter-exchange"].(string); ok {
		out["dead-letter-exchange"] = d.p(x)
		if k, ok := out["dead-letter-routing-key"].(string); ok && x == "" {
			out["dead-letter-routing-key"] = d.p(k)
		}
	}
	if x, ok := out["alternate-exchange"].(string); ok {
		out["alternate-exchange"] = d.p(x)
	}
	return out
}
