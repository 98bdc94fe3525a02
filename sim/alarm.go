package sim

import (
	"strings"
	"time"

	"github.com/amqpsim/amqpsim/protocol"
)

// Alarm is a RabbitMQ node's resource alarm.
type Alarm uint8

const (
	// AlarmDisk: free disk space below disk_free_limit ("rabbitmqctl
	// set_disk_free_limit" raises it on a real node).
	AlarmDisk Alarm = 1 << iota
	// AlarmMemory: memory use above vm_memory_high_watermark
	// ("rabbitmqctl set_vm_memory_high_watermark").
	AlarmMemory
)

// reason is connection.blocked's reason for the raised alarms, as
// RabbitMQ 3.10.8 words it (measured): "low on disk", "low on memory",
// "low on disk & memory".
func (a Alarm) reason() string {
	var names []string
	if a&AlarmDisk != 0 {
		names = append(names, "disk")
	}
	if a&AlarmMemory != 0 {
		names = append(names, "memory")
	}
	return "low on " + strings.Join(names, " & ")
}

// SetAlarm raises (on) or clears a resource alarm. While any alarm is
// raised, RabbitMQ blocks each connection the moment it publishes: the
// node stops reading its socket after the publish's content header (so a
// publish with a body waits for the alarm to clear, one with an empty
// body goes through), and tells clients that announced the
// connection.blocked capability with connection.blocked and the reason.
// Connections that only consume are not blocked, and nothing is sent to
// anyone when the alarm is raised. When the last alarm clears, every
// blocked connection is unblocked (connection.unblocked to those told)
// and its held frames are read. Measured on RabbitMQ 3.10.8.
//
// The blocking is the shell's (the wire server asks BlockOnPublish and
// stops reading); publishes through the in-process API are not held,
// unless the connection asks to be (ShellOptions.HoldWhenBlocked: its
// calls then wait in order and are applied when the alarm clears).
//
// The broker measures no memory and no disk: a caller raises the alarms.
// `amqpsim serve --memory-high-watermark` and amqptest.WithMemoryWatermark
// run a monitor of the process's Go heap that raises and clears
// AlarmMemory, as RabbitMQ's vm_memory_monitor does.
func (b *Broker) SetAlarm(a Alarm, on bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stopAlarmClear(a)
	b.setAlarm(a, on)
}

// SetAlarmFor raises alarm a now and clears it once d has passed on the
// broker's clock, as a node's alarm clears when its memory use or free
// disk space recovers: a fault with an end, for schedules. A later
// SetAlarm or SetAlarmFor of the same alarm replaces the pending clear.
func (b *Broker) SetAlarmFor(a Alarm, d time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stopAlarmClear(a)
	b.setAlarm(a, true)
	for _, one := range []Alarm{AlarmDisk, AlarmMemory} {
		if a&one == 0 {
			continue
		}
		if b.alarmClears == nil {
			b.alarmClears = map[Alarm]*timer{}
		}
		t := b.alarmClears[one]
		if t == nil {
			t = newTimer(func() { b.setAlarm(one, false) })
			b.alarmClears[one] = t
		}
		b.schedule(t, b.now.Add(max(d, 0)))
	}
}

// stopAlarmClear cancels the pending clears of a's alarms; caller holds
// the lock.
func (b *Broker) stopAlarmClear(a Alarm) {
	for one, t := range b.alarmClears {
		if a&one != 0 {
			b.stop(t)
		}
	}
}

// setAlarm is SetAlarm; caller holds the lock.
func (b *Broker) setAlarm(a Alarm, on bool) {
	was := Alarm(b.alarms.Load())
	now := was
	if on {
		now |= a
	} else {
		now &^= a
	}
	b.alarms.Store(uint32(now))
	if was == 0 || now != 0 {
		return
	}
	for _, c := range b.conns {
		if !c.blocked {
			continue
		}
		c.blocked = false
		b.record(connEvent(EventUnblocked, c, 0))
		if !c.opts.NoBlockedNotify {
			c.push(Push{Method: protocol.ConnectionUnblock})
		}
		if len(c.held) > 0 {
			b.unblocked = append(b.unblocked, c)
			b.mu.due = true
		}
	}
}

// Alarms returns the raised alarms.
func (b *Broker) Alarms() Alarm {
	b.mu.Lock()
	defer b.mu.unlockView()
	return Alarm(b.alarms.Load())
}

// BlockOnPublish is called by a shell when a basic.publish's content
// header has arrived: it reports whether the connection is now blocked by
// an alarm, in which case the shell reads nothing more from the client
// until Blocked reports false (or the connection closes). The first
// block of an alarm pushes connection.blocked to clients that announced
// the capability.
func (c *Connection) BlockOnPublish() bool {
	if c.b.alarms.Load() == 0 { // the publish path without an alarm takes no lock
		return false
	}
	c.b.mu.Lock()
	defer c.b.mu.Unlock()
	return c.blockOnPublish()
}

// holdsPublish reports whether a publish of a body of size bytes waits
// with its connection, which holds its calls while an alarm blocks it
// (ShellOptions.HoldWhenBlocked): RabbitMQ stops reading after the
// publish's content header, so a publish with an empty body goes through
// and the connection blocks behind it. Caller holds the lock.
func (c *Connection) holdsPublish(size uint64) bool {
	return c.opts.Shell.HoldWhenBlocked && c.b.alarms.Load() != 0 && c.blockOnPublish() && size > 0
}

// blockOnPublish is BlockOnPublish; caller holds the lock.
func (c *Connection) blockOnPublish() bool {
	alarms := Alarm(c.b.alarms.Load())
	if alarms == 0 || c.closed != nil {
		return false
	}
	if !c.blocked {
		c.blocked = true
		e := connEvent(EventBlocked, c, 0)
		e.Reason = alarms.reason()
		c.b.record(e)
		if !c.opts.NoBlockedNotify {
			c.push(Push{Method: protocol.ConnectionBlocked, ReplyText: e.Reason})
		}
	}
	return true
}

// Blocked reports whether an alarm blocks the connection's publishes.
func (c *Connection) Blocked() bool {
	c.b.mu.Lock()
	defer c.b.mu.unlockView()
	return c.blocked && c.closed == nil
}
