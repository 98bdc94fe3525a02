package scenarios

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"
)

// A broker takes the steps AMQP 0-9-1 cannot take (policies, users,
// permissions, alarms) through rabbitmqctl, which must run on the
// broker's machine (RecordOptions.Rabbitmqctl names it if it is not on
// the PATH).

// rabbitmqctl runs rabbitmqctl for its effect.
func (d *amqpDriver) rabbitmqctl(args ...string) error {
	_, err := d.rabbitmqctlOut(args...)
	return err
}

// rabbitmqctlOut runs rabbitmqctl and returns what it printed; a failure's
// error carries what it printed, stderr included.
func (d *amqpDriver) rabbitmqctlOut(args ...string) (string, error) {
	cmd := strings.Fields(d.ctl)
	if d.cluster != nil {
		cmd = strings.Fields(d.cluster.ctl(d.cluster.view.firstUp()))
	}
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
