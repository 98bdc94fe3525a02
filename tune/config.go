package tune

import (
	"errors"
	"fmt"
	"time"

	"github.com/amqpsim/amqpsim/sim"
)

// DefaultBrokerCost is the broker's time per message (deliver and ack) on
// the development machine's RabbitMQ 3.10.8 with amqp091-go consumers on the
// same two cores, from `amqpsim tune calibrate` (30.8 µs on 2026-12-01,
// load average 4). Pass your own with --broker-cost.
const DefaultBrokerCost = 30 * time.Microsecond

// DefaultUnbatchedCost is the extra time per delivery that travels alone
// (see Config.UnbatchedCost), from the same calibration (50.9 µs).
const DefaultUnbatchedCost = 50 * time.Microsecond

// frameOverhead is what a delivery adds to its body on the wire:
// basic.deliver's method frame (with a short consumer tag and routing key),
// the content header and the body frame's header and end byte.
const frameOverhead = 90

// Config describes a fleet of consumers and its traffic. The zero value of
// an optional field takes the default its comment names.
type Config struct {
	// Consumers is how many consumers share the queue (default 1).
	Consumers int
	// ConsumersPerChannel is how many consumers share a channel (default
	// 1); they share its delivery tags and, with Global, its limit.
	ConsumersPerChannel int
	// ChannelsPerConnection is how many channels share a connection
	// (default 1); they share its bandwidth and its reader.
	ChannelsPerConnection int

	// Handler is the handler's time per message.
	Handler Dist
	// RTT is the network's round-trip time between clients and broker.
	RTT time.Duration
	// Bandwidth is each connection's broker-to-client bandwidth in bytes
	// per second; 0 means unlimited.
	Bandwidth float64
	// Size is the message body size in bytes.
	Size int

	// Backlog is how many messages wait in the queue when the consumers
	// start.
	Backlog int
	// Rate, when positive, publishes Messages more messages at this many
	// per second, evenly spaced, after the backlog.
	Rate     float64
	Messages int

	// AckEvery is how many messages a consumer handles before it acks: 1
	// (default) acks each one, k > 1 acks every k-th with multiple=true.
	AckEvery int
	// BrokerCost is the broker's time per message, spent one message at a
	// time; 0 means DefaultBrokerCost, negative means none.
	BrokerCost time.Duration
	// UnbatchedCost is the broker host's extra time for a delivery that
	// travels alone: when nothing else is on its way to the connection,
	// the delivery and its ack each take their own socket writes, reads and
	// process wake-ups instead of sharing them with a batch. 0 means
	// DefaultUnbatchedCost, negative means none.
	UnbatchedCost time.Duration
	// ClientCost is a consumer's own time per message besides its
	// handler's: taking the delivery from the client library and writing
	// the ack. It is spent one message at a time, like the handler.
	// Calibrate's broker costs already include amqp091-go's; this is for
	// a client library slower than the one calibrated with.
	ClientCost time.Duration

	// Prefetch lists the values to sweep (0: unlimited).
	Prefetch []int
	// Global applies each prefetch value to the channel (basic.qos
	// global=true, RabbitMQ's channel-wide limit) instead of to each
	// consumer. From 4.3 RabbitMQ denies global_qos and takes global=true
	// per consumer, so Global needs a Version of 4.2 or older.
	Global bool
	// Version is the RabbitMQ release simulated (sim.Config.Version);
	// zero means sim.DefaultVersion.
	Version sim.Version
	// Seed seeds the handler times; the same Config gives the same Result.
	Seed uint64
	// Workers is how many prefetch values run at once (default 1): each
	// run is independent and deterministic, so the result does not depend
	// on it.
	Workers int
}

// Validate reports why Sweep would refuse c, a description that makes no
// sense (negative counts, a publish rate without messages, no prefetch
// values, ...), or nil.
func (c Config) Validate() error {
	_, err := c.withDefaults()
	return err
}

// withDefaults returns c with defaults filled in, or an error for a
// description that makes no sense.
func (c Config) withDefaults() (Config, error) {
	if c.Consumers == 0 {
		c.Consumers = 1
	}
	if c.ConsumersPerChannel == 0 {
		c.ConsumersPerChannel = 1
	}
	if c.ChannelsPerConnection == 0 {
		c.ChannelsPerConnection = 1
	}
	if c.AckEvery == 0 {
		c.AckEvery = 1
	}
	if c.BrokerCost == 0 {
		c.BrokerCost = DefaultBrokerCost
	}
	if c.BrokerCost < 0 {
		c.BrokerCost = 0
	}
	if c.UnbatchedCost == 0 {
		c.UnbatchedCost = DefaultUnbatchedCost
	}
	if c.UnbatchedCost < 0 {
		c.UnbatchedCost = 0
	}
	if c.ClientCost < 0 {
		c.ClientCost = 0
	}
	if c.Workers <= 0 {
		c.Workers = 1
	}
	switch {
	case c.Consumers < 0 || c.ConsumersPerChannel < 0 || c.ChannelsPerConnection < 0:
		return c, errors.New("consumer, channel and connection counts must be positive")
	case c.Consumers > 10000:
		return c, errors.New("at most 10000 consumers")
	case c.AckEvery < 0:
		return c, errors.New("ack-every must be positive")
	case c.AckEvery > 1 && c.ConsumersPerChannel > 1:
		// multiple=true acks every earlier tag on the channel, other
		// consumers' unhandled deliveries too; RabbitMQ then closes the
		// channel when those consumers ack tags it no longer knows.
		return c, errors.New("ack-every > 1 (multiple acks) needs one consumer per channel")
	case c.RTT < 0 || c.Bandwidth < 0 || c.Size < 0:
		return c, errors.New("rtt, bandwidth and size must not be negative")
	case c.Backlog < 0 || c.Messages < 0 || c.Rate < 0:
		return c, errors.New("backlog, messages and rate must not be negative")
	case c.Rate == 0 && c.Messages > 0:
		return c, errors.New("messages beyond the backlog need a publish rate")
	case c.Rate > 0 && c.Messages == 0:
		return c, errors.New("a publish rate needs a number of messages to publish")
	case c.Backlog+c.Messages == 0:
		return c, errors.New("nothing to consume: set a backlog or a publish rate and messages")
	case c.Backlog+c.Messages > 10_000_000:
		return c, errors.New("at most 10,000,000 messages")
	case len(c.Prefetch) == 0:
		return c, errors.New("no prefetch values to sweep")
	case c.Global && globalQosDenied(c.Version):
		return c, fmt.Errorf("global: RabbitMQ %s denies global_qos and takes basic.qos global=true per consumer; simulate 4.2 or older for a channel-wide limit", c.Version)
	}
	for _, p := range c.Prefetch {
		if p < 0 || p > 65535 {
			return c, fmt.Errorf("prefetch %d: want 0 (unlimited) to 65535", p)
		}
	}
	return c, nil
}
