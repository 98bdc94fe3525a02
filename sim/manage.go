package sim

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// The views below are what an operator's tools read (the management API in
// package mgmt): every exchange, binding, queue and connection with its
// settings, copied out under the lock.

// ExchangeDetails is one exchange as RabbitMQ's management API lists it.
type ExchangeDetails struct {
	Vhost, Name, Type             string
	Durable, AutoDelete, Internal bool
	Args                          Table
	Policy                        string // the policy that applies, "" for none
}

// Exchanges returns a vhost's exchanges sorted by name, the default
// exchange ("") first.
func (b *Broker) Exchanges(vhostName string) ([]ExchangeDetails, error) {
	b.mu.Lock()
	defer b.mu.unlockView()
	v, err := b.lookupVhost(vhostName)
	if err != nil {
		return nil, err
	}
	var out []ExchangeDetails
	for _, x := range sortedExchanges(v) {
		d := ExchangeDetails{Vhost: v.name, Name: x.name, Type: x.kind, Durable: x.durable, AutoDelete: x.autoDelete,
			Internal: x.internal, Args: x.args}
		if p := v.bestExchangePolicy(x.name); p != nil {
			d.Policy = p.Name
		}
		out = append(out, d)
	}
	return out, nil
}

// BindingDetails is one binding. DestinationType is "queue" or
// "exchange".
type BindingDetails struct {
	Vhost, Source, Destination, DestinationType, RoutingKey string
	Args                                                    Table
}

// Bindings returns a vhost's bindings, the default exchange's implicit
// binding of every queue (by the queue's name) included, sorted by source,
// destination type, destination and routing key, as the management API
// lists them.
func (b *Broker) Bindings(vhostName string) ([]BindingDetails, error) {
	b.mu.Lock()
	defer b.mu.unlockView()
	v, err := b.lookupVhost(vhostName)
	if err != nil {
		return nil, err
	}
	var out []BindingDetails
	for _, n := range slices.Sorted(maps.Keys(v.queues)) {
		out = append(out, BindingDetails{Vhost: v.name, Destination: n, DestinationType: "queue", RoutingKey: n, Args: Table{}})
	}
	for _, x := range sortedExchanges(v) {
		for _, bd := range x.bindings.sorted() {
			d := BindingDetails{Vhost: v.name, Source: x.name, RoutingKey: bd.key(), Args: bd.args}
			if bd.dest().q != nil {
				d.Destination, d.DestinationType = bd.dest().q.Name(), "queue"
			} else {
				d.Destination, d.DestinationType = bd.dest().x.name, "exchange"
			}
			if d.Args == nil {
				d.Args = Table{}
			}
			out = append(out, d)
		}
	}
	slices.SortStableFunc(out, func(a, c BindingDetails) int {
		return cmp.Or(strings.Compare(a.Source, c.Source), strings.Compare(a.DestinationType, c.DestinationType),
			strings.Compare(a.Destination, c.Destination), strings.Compare(a.RoutingKey, c.RoutingKey))
	})
	return out, nil
}

// QueueDetails is one queue with its settings, counts and consumers.
type QueueDetails struct {
	QueueStats
	Type                           string // the queue type: "classic", "quorum" or "stream"
	Durable, Exclusive, AutoDelete bool
	Args                           Table
	// Policy and OperatorPolicy name the policy and operator policy that
	// apply ("" for none); PolicyDefinition is their merged definition,
	// the one in effect.
	Policy, OperatorPolicy string
	PolicyDefinition       Table
	// OwnerID is the number (ConnectionInfo.ID) of the connection that
	// owns an exclusive queue, 0 for others.
	OwnerID uint64
	// ConsumerList are its consumers in registration order; ActiveTag is
	// the single active consumer's tag, when the queue has one.
	ConsumerList []QueueConsumer
	ActiveTag    string
	// Persistent and PersistentBytes count the ready messages published
	// persistent (delivery mode 2) and their body bytes.
	Persistent      int
	PersistentBytes int64
	// Leader, Members and Online are, in a cluster (Config.Nodes), the
	// names of the node that leads the queue (a classic queue's home),
	// of the nodes with a member of it, and of those of them that run,
	// as `rabbitmqctl list_queues leader members online` shows them;
	// empty for a broker of one node.
	Leader          string
	Members, Online []string
}

// QueueConsumer is a consumer as a queue's details list it, with its
// connection's number (ConnectionInfo.ID).
type QueueConsumer struct {
	ConsumerStats
	ConnectionID uint64
}

// QueueDetails returns one queue's details.
func (b *Broker) QueueDetails(vhostName, name string) (QueueDetails, error) {
	b.mu.Lock()
	defer b.mu.unlockView()
	v, err := b.lookupVhost(vhostName)
	if err != nil {
		return QueueDetails{}, err
	}
	q, ok := v.queues[name]
	if !ok {
		return QueueDetails{}, fmt.Errorf("%w %q in vhost %q", ErrNoQueue, name, vhostName)
	}
	return queueDetails(v, q), nil
}

// AllQueueDetails returns every queue's details, sorted by vhost and name.
func (b *Broker) AllQueueDetails() []QueueDetails {
	b.mu.Lock()
	defer b.mu.unlockView()
	var out []QueueDetails
	for _, vn := range slices.Sorted(maps.Keys(b.vhosts)) {
		v := b.vhosts[vn]
		for _, n := range slices.Sorted(maps.Keys(v.queues)) {
			out = append(out, queueDetails(v, v.queues[n]))
		}
	}
	return out
}

func queueDetails(v *vhost, q *brokerQueue) QueueDetails {
	o := q.Options()
	d := QueueDetails{QueueStats: queueStats(q), Type: q.Type().String(), Durable: o.Durable, Exclusive: o.Exclusive,
		AutoDelete: o.AutoDelete, Args: o.Args}
	if p := v.bestPolicy(q); p != nil {
		d.Policy = p.Name
	}
	if p := v.bestOperatorPolicy(q); p != nil {
		d.OperatorPolicy = p.Name
	}
	d.PolicyDefinition = v.queuePolicy(q)
	if q.owner != nil {
		d.OwnerID = q.owner.id
	}
	for _, m := range q.Messages() {
		if m.Properties != nil && m.Properties.DeliveryMode == 2 {
			d.Persistent++
			d.PersistentBytes += int64(len(m.Body))
		}
	}
	if b := q.b; b.clustered() {
		d.Leader, d.Members = b.queueNodes(q)
		for n := 1; n <= b.topo.Len(); n++ {
			// A member that never started is not online (rabbitmqctl
			// list_queues online, on the 4.3.6 cluster, after a declare
			// during a cut: quorum_status says noproc).
			if name := b.topo.Name(n); slices.Contains(d.Members, name) && b.topo.Running(n) && !q.memberAbsent(n) {
				d.Online = append(d.Online, name)
			}
		}
	}
	for _, c := range q.Consumers() {
		cs := c.Owner()
		d.ConsumerList = append(d.ConsumerList, QueueConsumer{ConsumerStats: cs.stats(), ConnectionID: cs.ch.conn.id})
	}
	if q.caps.SingleActive {
		if a := q.ActiveConsumer(); a != nil {
			d.ActiveTag = a.Tag
		}
	}
	return d
}

// ConnectionInfo describes an open connection: what its client announced
// and the shell reported (ConnectOptions), and its state.
type ConnectionInfo struct {
	ID                 uint64 // 1, 2, ... in connect order
	Name, Vhost, User  string
	ClientProperties   Table
	PeerName, SockName string
	AuthMechanism      string
	FrameMax           uint32
	ChannelMax         uint16
	Heartbeat          time.Duration
	Direct             bool
	Channels           int       // open channels
	ConnectedAt        time.Time // virtual time
	Blocked            bool      // an alarm holds its publishes
}

// Info returns the connection's description.
func (c *Connection) Info() ConnectionInfo {
	c.b.mu.Lock()
	defer c.b.mu.unlockView()
	n := 0
	for _, ch := range c.channels {
		if ch.closed == nil {
			n++
		}
	}
	o := c.opts
	return ConnectionInfo{ID: c.id, Name: c.name, Vhost: c.vhost.name, User: c.user, ClientProperties: o.ClientProperties,
		PeerName: o.PeerName, SockName: o.SockName, AuthMechanism: o.AuthMechanism, FrameMax: o.FrameMax,
		ChannelMax: o.ChannelMax, Heartbeat: o.Heartbeat, Direct: o.Direct, Channels: n, ConnectedAt: c.connectedAt,
		Blocked: c.blocked && c.closed == nil}
}
