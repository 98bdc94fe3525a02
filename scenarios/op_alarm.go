package scenarios

import (
	"strings"

	"github.com/amqpsim/amqpsim/sim"
)

// Alarm raises a node's resource alarm ("alarm memory", "alarm disk") or
// clears one or both ("alarm clear memory", "alarm clear"). While an
// alarm is raised, RabbitMQ blocks each connection as it publishes: the
// client is told connection.blocked and the node reads nothing more from
// it until the last alarm clears, so only steps that wait for no reply
// (publish, ack, nack, reject) may follow on a blocked connection until
// then. On a broker the recorder raises the alarms with rabbitmqctl
// (set_vm_memory_high_watermark 0.0000001, set_disk_free_limit
// 1000000GB) and clears them by restoring the values it read first.
type Alarm struct {
	Resource string // "memory" or "disk"; "" with Clear: both
	Clear    bool
}

func (Alarm) isOp() {}

// String returns the Alarm step line.
func (o Alarm) String() string {
	if o.Clear {
		return line("alarm", "clear", o.Resource)
	}
	return line("alarm", o.Resource)
}

// alarms returns the sim alarms the step names.
func (o Alarm) alarms() sim.Alarm {
	switch o.Resource {
	case "memory":
		return sim.AlarmMemory
	case "disk":
		return sim.AlarmDisk
	}
	return sim.AlarmMemory | sim.AlarmDisk
}

func init() {
	register(&verb{name: "alarm", usage: "alarm memory|disk | alarm clear [memory|disk]", minPos: 1, maxPos: 2, build: buildAlarm})
}

func buildAlarm(a *argSet) (Op, error) {
	resource := func(i int) (string, error) {
		if r := a.str(i); r == "memory" || r == "disk" {
			return r, nil
		}
		return "", a.errAt(a.pos[i], "expected memory or disk, got %q", a.str(i))
	}
	if a.str(0) == "clear" {
		if len(a.pos) == 1 {
			return Alarm{Clear: true}, nil
		}
		r, err := resource(1)
		return Alarm{Resource: r, Clear: true}, err
	}
	if len(a.pos) > 1 {
		return nil, a.errAt(a.pos[1], "unexpected %q (usage: alarm memory|disk | alarm clear [memory|disk])", a.str(1))
	}
	r, err := resource(0)
	return Alarm{Resource: r}, err
}

func (o Alarm) run(r *runner, _ *rchan) ([]string, reply, error) { return nil, reply{}, r.d.alarm(o) }

// set applies an alarm step to a simulator.
func (o Alarm) set(b *sim.Broker) { b.SetAlarm(o.alarms(), !o.Clear) }

// alarm runs an alarm step on the in-process simulator, whose connections
// hold their calls while an alarm blocks them
// (sim.ShellOptions.HoldWhenBlocked) and apply them when it clears.
func (d *simDriver) alarm(o Alarm) error {
	o.set(d.b)
	return nil
}

// alarm runs an alarm step on the simulator behind the wire (whose
// server holds blocked clients' frames itself) or on a broker through
// rabbitmqctl.
func (d *amqpDriver) alarm(o Alarm) error {
	if d.sim != nil {
		o.set(d.sim.b)
		return nil
	}
	if d.restore == nil {
		// Read the node's settings before the first change, to restore
		// exactly those.
		mem, err := d.rabbitmqctlOut("eval", "vm_memory_monitor:get_vm_memory_high_watermark().")
		if err != nil {
			return err
		}
		disk, err := d.rabbitmqctlOut("eval", "rabbit_disk_monitor:get_disk_free_limit().")
		if err != nil {
			return err
		}
		d.restore = map[string][]string{
			"memory": append([]string{"set_vm_memory_high_watermark"}, settingArgs(mem)...),
			"disk":   append([]string{"set_disk_free_limit"}, settingArgs(disk)...),
		}
		d.raised = map[string]bool{}
	}
	resources := []string{o.Resource}
	if o.Resource == "" {
		resources = []string{"memory", "disk"}
	}
	for _, r := range resources {
		args := d.restore[r]
		if !o.Clear {
			args = map[string][]string{"memory": {"set_vm_memory_high_watermark", "0.0000001"}, "disk": {"set_disk_free_limit", "1000000GB"}}[r]
		}
		if err := d.rabbitmqctl(args...); err != nil {
			return err
		}
		d.raised[r] = !o.Clear
	}
	return nil
}

// clearAlarms restores the settings an unfinished scenario left changed.
func (d *amqpDriver) clearAlarms() error {
	var first error
	for _, r := range []string{"memory", "disk"} {
		if d.raised[r] {
			if err := d.rabbitmqctl(d.restore[r]...); err != nil && first == nil {
				first = err
			}
			d.raised[r] = false
		}
	}
	return first
}

// settingArgs turns a setting rabbitmqctl eval printed (0.4, 50000000,
// {absolute,1073741824}, {mem_relative,1.5}) into the set command's
// arguments.
func settingArgs(term string) []string {
	term = strings.TrimSpace(term)
	if strings.HasPrefix(term, "{") && strings.HasSuffix(term, "}") {
		kind, value, _ := strings.Cut(strings.Trim(term, "{}"), ",")
		return []string{strings.TrimSpace(kind), strings.TrimSpace(value)}
	}
	return []string{term}
}
