package tune

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/amqpsim/amqpsim/sim"
)

// This file is the only one that calls package sim: the rest of tune sees
// the broker through these few types, so a change to sim's API is fixed
// here.

// simBroker is the simulated RabbitMQ the tuner's consumers talk to.
type simBroker struct {
	b     *sim.Broker
	now   time.Duration // virtual time since the run started
	queue string
	body  []byte // scratch for publish: sim copies the body
}

// simConn is one client connection.
type simConn struct {
	c *sim.Connection
}

// simChannel is one consumer channel.
type simChannel struct {
	ch *sim.Channel
}

// simConsumer is one consumer on a simChannel.
type simConsumer struct {
	c *sim.Consumer
}

// newSimBroker makes a broker with its trace off and its consumer timeout
// disabled (a long simulated drain must not be cut by RabbitMQ's 30
// minutes), and declares the queue the run consumes from.
func newSimBroker(seed uint64, v sim.Version, queue string) (*simBroker, error) {
	b := sim.New(sim.Config{Seed: seed, Version: v, NoTrace: true, ConsumerTimeout: -1})
	ch, err := b.Connect("tune-setup").Channel()
	if err != nil {
		return nil, err
	}
	if _, err := ch.QueueDeclare(queue, sim.QueueOptions{}); err != nil {
		return nil, err
	}
	if err := ch.Close(); err != nil {
		return nil, err
	}
	return &simBroker{b: b, queue: queue, body: make([]byte, 4)}, nil
}

// advanceTo moves the broker's virtual clock to t, firing its timers.
func (s *simBroker) advanceTo(t time.Duration) {
	if t > s.now {
		s.b.Advance(t - s.now)
		s.now = t
	}
}

// publish puts message number id on the queue. The body carries only the
// id: the message size is the model's, so a sweep of large messages costs
// no memory.
func (s *simBroker) publish(id int) error {
	binary.LittleEndian.PutUint32(s.body, uint32(id))
	return s.b.Publish("/", "", s.queue, sim.Message{Body: s.body})
}

// connection opens a client connection.
func (s *simBroker) connection(name string) *simConn {
	return &simConn{c: s.b.Connect(name)}
}

// channel opens a channel on conn with the given qos.
func (s *simBroker) channel(conn *simConn, prefetch int, global bool) (*simChannel, error) {
	ch, err := conn.c.Channel()
	if err != nil {
		return nil, err
	}
	if err := ch.Qos(prefetch, 0, global); err != nil {
		return nil, err
	}
	return &simChannel{ch: ch}, nil
}

// consume starts a consumer on the broker's queue.
func (c *simChannel) consume(s *simBroker, tag string) (*simConsumer, error) {
	sc, err := c.ch.Consume(s.queue, sim.ConsumeOptions{Tag: tag})
	if err != nil {
		return nil, err
	}
	return &simConsumer{c: sc}, nil
}

// ack settles a delivery (and, with multiple, every earlier one on the
// channel).
func (c *simChannel) ack(tag uint64, multiple bool) error {
	return c.ch.Ack(tag, multiple)
}

// next returns the oldest delivery the broker pushed and the client has not
// taken: its tag and message id.
func (c *simConsumer) next() (tag uint64, id int, ok bool) {
	d, ok := c.c.Next()
	if !ok {
		return 0, 0, false
	}
	if len(d.Body) != 4 {
		panic(fmt.Sprintf("tune: a delivery of %d bytes: only tune publishes to its queue", len(d.Body)))
	}
	return d.DeliveryTag, int(binary.LittleEndian.Uint32(d.Body)), true
}

// globalQosDenied reports whether release v denies global_qos, taking
// basic.qos global=true per consumer (sim.Profile.GlobalQosDenied).
func globalQosDenied(v sim.Version) bool { return v.Profile().GlobalQosDenied }
