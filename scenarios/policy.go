package scenarios

import (
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strings"

	"github.com/amqpsim/amqpsim/protocol"
)

// policy runs a policy step against a broker through rabbitmqctl (AMQP
// 0-9-1 cannot set policies), which must run on the broker's machine
// (RecordOptions.Rabbitmqctl names it if it is not on the PATH). Names get the run's
// prefix, the pattern after its ^.
func (d *amqpDriver) policy(op Op) error {
	switch o := op.(type) {
	case SetPolicy:
		d.policies = append(d.policies, d.p(o.Name))
		return d.setPolicy("set_policy", o, "^"+regexp.QuoteMeta(d.prefix)+strings.TrimPrefix(o.Pattern, "^"))
	case ClearPolicy:
		return d.rabbitmqctl("clear_policy", "-p", "/", d.p(o.Name))
	}
	return fmt.Errorf("not a policy step: %v", op)
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

// rabbitmqctl runs rabbitmqctl for its effect.
func (d *amqpDriver) rabbitmqctl(args ...string) error {
	_, err := d.rabbitmqctlOut(args...)
	return err
}

// rabbitmqctlOut runs rabbitmqctl and returns what it printed; a failure's
// error carries what it printed, stderr included.
func (d *amqpDriver) rabbitmqctlOut(args ...string) (string, error) {
	cmd := strings.Fields(d.ctl)
	if len(cmd) == 0 {
		cmd = []string{"rabbitmqctl"}
	}
	out, err := exec.Command(cmd[0], append(append(cmd[1:], "-q"), args...)...).Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			out = append(out, exit.Stderr...)
		}
		return "", fmt.Errorf("rabbitmqctl %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}
