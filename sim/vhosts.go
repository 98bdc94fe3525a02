package sim

import (
	"fmt"
	"maps"
	"slices"

	"github.com/amqpsim/amqpsim/protocol"
)

// VhostInfo is a virtual host and its metadata, as a definitions file and
// the management API carry it.
type VhostInfo struct {
	Name        string
	Description string
	Tags        []string
}

// DefaultVhostDescription is the description RabbitMQ gives the default
// vhost it creates at first boot (measured on 3.10.8).
const DefaultVhostDescription = "Default virtual host"

// PutVhost creates a vhost, with the predeclared exchanges, or updates an
// existing one's metadata.
func (b *Broker) PutVhost(info VhostInfo) error {
	if info.Name == "" {
		return fmt.Errorf("sim: a vhost needs a name")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.addVhost(info.Name)
	v := b.vhosts[info.Name]
	v.description, v.tags = info.Description, normalTags(info.Tags)
	return nil
}

// VhostInfos returns every vhost with its metadata, by name.
func (b *Broker) VhostInfos() []VhostInfo {
	b.mu.Lock()
	defer b.mu.unlockView()
	out := make([]VhostInfo, 0, len(b.vhosts))
	for _, n := range slices.Sorted(maps.Keys(b.vhosts)) {
		v := b.vhosts[n]
		out = append(out, VhostInfo{Name: n, Description: v.description, Tags: slices.Clone(v.tags)})
	}
	return out
}

// DeleteVhost deletes a vhost, as rabbitmqctl delete_vhost does: its
// connections are closed with 320 CONNECTION_FORCED "vhost 'v' is
// deleted" (measured on 3.10.8), then its queues, with their messages,
// its exchanges, policies and permissions go. Deleting a missing vhost is
// an error wrapping ErrNoVhost.
func (b *Broker) DeleteVhost(name string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	v, err := b.lookupVhost(name)
	if err != nil {
		return err
	}
	cerr := protocol.Errorf(protocol.ConnectionForced, protocol.Method{}, "vhost '%s' is deleted", name)
	for _, c := range slices.Clone(b.conns) {
		if c.vhost == v {
			c.fail(cerr)
		}
	}
	b.flush()
	for _, n := range slices.Sorted(maps.Keys(v.queues)) {
		b.deleteQueue(v.queues[n])
	}
	b.flush()
	delete(b.vhosts, name)
	b.lastVhost = nil
	return nil
}
