// Package queue is the queue-type seam: the one interface the broker uses
// for a queue of any type (Queue), what a queue needs from the broker in
// return (Env), the message record they share, and queue arguments with
// RabbitMQ's validation. Each queue type is its own implementation behind
// Queue. The classic queue (RabbitMQ 3.10's rabbit_amqqueue_process with
// rabbit_variable_queue) keeps ready messages in sequence order, puts a
// requeued message back in its original place, and has priority levels,
// message TTL at the head, length limits, and dispatch that hands the head
// message to the consumer the rotation picks. The quorum queue
// (x-queue-type=quorum, RabbitMQ 3.10's rabbit_fifo) serves returned
// messages first, counts deliveries (x-delivery-count, x-delivery-limit),
// gives consumers simple_prefetch credit, and can dead-letter at least
// once (x-dead-letter-strategy). The stream
// (x-queue-type=stream, RabbitMQ 3.10's rabbit_stream_queue on osiris) is
// an append-only log each consumer reads from its own offset, acks only
// returning credit, with retention by whole segments.
//
// # Each type answers for its own rules
//
// The broker never asks a queue which Type it is to decide what to do.
// It asks the queue, as RabbitMQ's channel asks rabbit_queue_type, and the
// type answers with its rule or RabbitMQ's refusal (a *protocol.Error with
// RabbitMQ's text): Consume checks a basic.consume's arguments, the
// channel's prefetch and global qos and the exclusive flag in the type's
// order, then registers the consumer; Get is basic.get or its refusal
// (a stream, a quorum single active consumer queue); CheckSettle says
// whether a settlement (basic.ack, nack, reject, recover) is one the type
// takes; CheckDelete applies queue.delete's if-unused and if-empty, Purge
// is queue.purge, Delete empties a queue the broker deletes; Restart is
// what a broker restart keeps; Caps are the type's fixed answers as data
// (whether the channel's consumer timeout and its channel-wide limiter
// apply to the queue's deliveries, when it confirms, whether it is
// replicated on a cluster, ...); Stats is what inspection shows. Before
// a queue exists, CheckServerNamed and DefinitionArgs answer for the type
// a declaration names. What differs between releases is data, in Rules:
// no type compares versions.
//
// A queue knows nothing of channels, delivery tags or routing: it asks Env
// whether a consumer's channel may take a message, hands deliveries and
// dead letters to Env, and asks Env for its timers.
package queue

import (
	"time"

	"github.com/amqpsim/amqpsim/consumer"
	"github.com/amqpsim/amqpsim/protocol"
)

// Message is one message in one queue. A message routed to several queues is
// one Message per queue; they share ID, Body and Properties, which are never
// modified.
type Message struct {
	ID         uint64 // the broker's identity of the published message
	Seq        uint64 // enqueue order in this queue; a requeue keeps it
	Exchange   string
	RoutingKey string
	Properties *protocol.Properties // nil when the publisher set none
	Body       []byte
	// Expiry is when the message expires, on the broker's clock
	// (Env.Now), when Expires is set. It is set at enqueue and kept across
	// requeues.
	Expiry int64
	// Delivered is set once the message has been fetched (delivered or got)
	// from this queue, or in 4.3 when a classic queue stores it with
	// failed deliveries (Rules.ClassicDeliveryCount): the next fetch has
	// redelivered=true.
	Delivered bool
	Expires   bool
	// Dead is set on a message the broker dead-lettered: its x-death
	// header is the broker's own, not a publisher's (RabbitMQ 4.0 reads
	// only its own).
	Dead bool
	// PropertiesSize is the encoded size of the properties RabbitMQ
	// stores the message with, when they are not Properties: a
	// dead-lettered message is stored with the properties it was
	// published with (4.x keeps its deaths as annotations,
	// rabbit_dead_letter:publish/5). 0 means Properties'
	// (StoredPropertiesSize). An int32, like size, so that both fit in
	// the padding beside the flags: a content header fits in a frame.
	PropertiesSize int32
	// Failures is the message's delivery-count annotation, AMQP 1.0's
	// count of failed deliveries, which a dead letter carries to its next
	// queue. In 4.3 basic.reject (with requeue or without) and a channel
	// that closed holding it count one, basic.nack does not: a classic
	// queue counts them (Rules.ClassicDeliveryCount), a quorum queue
	// keeps them in its delivery_count (Rules.SplitDeliveryCount). From
	// 4.0 a quorum queue reads it at enqueue and, before 4.3, counts its
	// closed channels' returns in it (Rules.QuorumReadsDeliveryCount).
	Failures int64
	priority uint8
	// size is what a quorum queue counts of the message against
	// x-max-length-bytes, fixed when it enqueues it (quorumSize); a
	// body is at most 512 MiB (the broker's MaxMessageSizeCap).
	size int32
	// deliveryCount is a quorum queue's count of returns (rabbit_fifo's
	// delivery_count message header); plain is the publisher's
	// properties when Properties carries the x-delivery-count header a
	// quorum queue adds to a delivery.
	deliveryCount int64
	// acquiredCount is 4.3's count of every return (Rules.SplitDeliveryCount),
	// when deliveryCount counts failed deliveries only.
	acquiredCount int64
	plain         *protocol.Properties
	hasPlain      bool
}

// StoredPropertiesSize returns the encoded size of the properties
// RabbitMQ stores m with (protocol.Properties.EncodedSize): PropertiesSize
// when set, else that of Properties.
func (m *Message) StoredPropertiesSize() int32 {
	if m.PropertiesSize > 0 {
		return m.PropertiesSize
	}
	return int32(m.Properties.EncodedSize())
}

// Options are the queue.declare settings that make a queue what it is,
// and what the broker being simulated gives a new queue.
type Options struct {
	Durable    bool
	Exclusive  bool
	AutoDelete bool
	Args       protocol.Table
	// Rules are the release's rules the queue follows; the zero value is
	// RabbitMQ 3.10's.
	Rules Rules

	// The fields below are not part of the declaration: a redeclaration
	// does not compare them.

	// Epoch is the wall-clock time at Env.Now() == 0. A stream stamps its
	// chunks with it, for consumers starting at a timestamp
	// (x-stream-offset).
	Epoch time.Time
}

// Settlement is what a channel does with deliveries it settles.
type Settlement uint8

const (
	// Ack forgets the messages (basic.ack).
	Ack Settlement = iota
	// Requeue returns them to the queue (nack or reject with requeue,
	// basic.recover).
	Requeue
	// Reject dead-letters them with reason "rejected" (nack or reject
	// without requeue).
	Reject
	// RequeueFailed is basic.reject with requeue: Requeue, except that
	// where Rules.SplitDeliveryCount holds (4.3) it counts as a failed
	// delivery towards a quorum queue's delivery limit.
	RequeueFailed
	// RejectFailed is basic.reject without requeue: Reject, except that
	// in 4.3 it counts as a failed delivery, which the dead-lettered
	// message carries (Message.Failures).
	RejectFailed
)

// Requeues reports whether the settlement returns the messages.
func (s Settlement) Requeues() bool { return s == Requeue || s == RequeueFailed }

// failed reports whether the settlement is basic.reject, which 4.3 counts
// as a failed delivery (basic.nack is not).
func (s Settlement) failed() bool { return s == RequeueFailed || s == RejectFailed }

// Settled is one delivery a channel settles: the message, and the consumer
// it went to (nil for basic.get).
type Settled[T any] struct {
	Message  *Message
	Consumer *consumer.Consumer[T]
	// Tag is the delivery tag the channel gave it: the order of a
	// consumer's deliveries.
	Tag uint64
}

// Timer names a queue's timers on the broker's clock.
type Timer uint8

const (
	// TTLTimer fires when the head message expires (x-message-ttl,
	// expiration).
	TTLTimer Timer = iota
	// ExpiresTimer fires when an unused queue expires (x-expires).
	ExpiresTimer
	// RetentionTimer fires when a stream evaluates its retention again
	// (x-max-age).
	RetentionTimer
	// DeadLetterTimer fires when a quorum queue forwards its unconfirmed
	// at-least-once dead letters again.
	DeadLetterTimer
	// ConsumerTimeoutTimer fires when a quorum queue's first checked-out
	// message is due back (Rules.QuorumConsumerTimeout).
	ConsumerTimeoutTimer
)

// Env is what a queue needs from the broker. T is the broker's record of a
// consumer. Every method is called with the broker's lock held.
type Env[T any] interface {
	// Now is the broker's clock: nanoseconds since it started, so that
	// no expiry overflows however long the clock runs.
	Now() int64
	// CanSend is the channel-wide limiter's can_send for c's channel.
	CanSend(c *consumer.Consumer[T]) bool
	// Deliver hands m to consumer c: the broker gives it a delivery tag,
	// records it unless no-ack, and pushes basic.deliver.
	Deliver(c *consumer.Consumer[T], m *Message, redelivered bool)
	// DeadLetter republishes m, which left the queue for reason
	// ("rejected", "expired", "maxlen"), to the queue's dead-letter
	// exchange, or drops it when there is none.
	DeadLetter(m *Message, reason string)
	// ForwardDeadLetter dead-letters m at least once (a quorum queue's
	// x-dead-letter-strategy at-least-once): it republishes m, which left
	// the queue for reason, to the queues the dead-letter exchange routes
	// it to, skipping those named in took, adds to took the name of each
	// queue that takes it, and reports whether all did. No exchange or no
	// route reports false: the queue keeps m and tries again later.
	ForwardDeadLetter(m *Message, reason string, took map[string]bool) bool
	// Refused tells that the queue did not take m: reason "rejected"
	// (x-overflow reject-publish) or "discarded" (x-message-ttl 0).
	Refused(m *Message, reason string)
	// Crash tells that the channel of consumer c crashed while its queue
	// served it: RabbitMQ closes the channel's connection with 541
	// INTERNAL_ERROR.
	Crash(c *consumer.Consumer[T])
	// ConsumerTimeout is the broker's consumer_timeout on the Now clock;
	// ok is false for none.
	ConsumerTimeout() (d int64, ok bool)
	// TimedOut tells that the queue timed out and took back ds, the
	// deliveries of one consumer, or one basic.get delivery (Consumer
	// nil), which their channel still holds (Rules.QuorumConsumerTimeout).
	TimedOut(ds []Settled[T])
	// SetTimer (re)schedules a timer to fire at due (on the Now clock);
	// StopTimer cancels it. The broker calls Queue.TimerFired.
	SetTimer(t Timer, due int64)
	StopTimer(t Timer)
}

// Queue is the broker's view of one queue, of any type. T is the broker's
// record of a consumer.
type Queue[T any] interface {
	// Name and Vhost identify the queue (ResourceName names it as
	// RabbitMQ's error texts do).
	Name() string
	Vhost() string
	// Type is the queue's type, for names (the management API, a
	// definitions export); the broker asks the methods below for the
	// type's rules, never the type.
	Type() Type
	// Options returns the settings it was declared with.
	Options() Options
	// Limits returns its TTL, length and dead-letter settings.
	Limits() Limits
	// Equivalent checks a redeclaration, with RabbitMQ's "inequivalent
	// arg" error for the first difference.
	Equivalent(o Options) error
	// ApplyPolicy makes the definition of the policy that now applies to
	// the queue (nil for none) take effect at once, as RabbitMQ does when
	// a policy is set, changed or cleared.
	ApplyPolicy(definition protocol.Table)

	// Ready returns the ready messages (queue.declare-ok's count),
	// ReadyBytes their bytes as the queue counts them against
	// x-max-length-bytes (bodies; a 4.3 quorum queue adds their
	// properties, Rules.QuorumCountsProperties), Unacked the messages
	// delivered and not yet settled, and Messages the ready ones in the
	// order they would be fetched.
	Ready() int
	ReadyBytes() int64
	Unacked() int
	Messages() []*Message

	// ConsumerCount counts consumers, blocked and waiting ones included;
	// HadConsumer reports whether it ever had one (auto-delete).
	ConsumerCount() int
	HadConsumer() bool
	// Consumers returns them in registration order; ActiveConsumer the
	// single active consumer, if the queue has one.
	Consumers() []*consumer.Consumer[T]
	ActiveConsumer() *consumer.Consumer[T]
	// Consume is basic.consume: it checks the request as the queue's type
	// does, in its order (the consumer arguments, x-priority, the
	// channel's prefetch and channel-wide limit, a stream's offset,
	// whether the consumer may join), and returns RabbitMQ's refusal of
	// the first that fails; otherwise it calls join once with the
	// consumer's x-priority, for the broker to make the consumer, and
	// registers the consumer join returns.
	Consume(r ConsumeRequest, join func(priority int) *consumer.Consumer[T]) error
	// RemoveConsumer unregisters a consumer (basic.cancel, channel close).
	RemoveConsumer(c *consumer.Consumer[T])
	// Resume lifts the suspension of a channel's consumers of this queue
	// (the channel-wide limit has room again).
	Resume(g *consumer.Group[T])

	// Publish takes a routed message whose own TTL (expiration) is ttl,
	// when hasTTL. It reports false when the queue refused it
	// (reject-publish), which makes a publisher confirm a nack.
	Publish(m *Message, ttl int64, hasTTL bool) bool
	// Dispatch hands ready messages to consumers while one can take them,
	// returning how many it delivered.
	Dispatch() int
	// Get is basic.get, or the type's refusal of it: it takes the head
	// message, counting it unacked when ackRequired, and hands it to got
	// before anything else happens (a basic.get is a delivery of one). It
	// reports false when the queue has no ready message.
	Get(ackRequired bool, got func(m *Message, redelivered bool)) (bool, error)
	// CheckSettle reports whether the type takes a settlement of its
	// deliveries by method m (basic.ack, nack, reject, recover or
	// recover-async), with RabbitMQ's error when it does not. The
	// channel asks before it settles anything, if the type may refuse
	// (Caps.RefusesSettlements).
	CheckSettle(m protocol.Method, how Settlement) error
	// Settle applies a channel's settlement of one group of deliveries
	// from this queue and gives their consumers credit back.
	Settle(ds []Settled[T], how Settlement)
	// Return takes back the unacked messages of a channel that closed.
	Return(ms []*Message)
	// Purge is queue.purge: it removes the ready messages and returns how
	// many there were, or the type's refusal. Unacked messages stay.
	Purge() (int, error)
	// CheckDelete is queue.delete's check of if-unused and if-empty as
	// the type makes it: RabbitMQ's refusal, or the message count
	// delete-ok reports. The broker then deletes the queue.
	CheckDelete(ifUnused, ifEmpty bool) (int, error)
	// Delete empties a queue the broker deletes, for any reason.
	Delete()
	// Restart drops the ready messages a broker restart does not keep of
	// a durable queue, keeping the others in their order: a classic queue
	// keeps the persistent ones (delivery mode 2), a quorum queue and a
	// stream keep all. crashed says the node was killed, not stopped: a
	// classic queue's messages are then possibly delivered.
	Restart(crashed bool)
	// Caps are the queue's answers about what its type does, fixed at
	// declare: the broker reads them instead of testing the type.
	Caps() Caps
	// Stats is what inspection shows beyond the counts above.
	Stats() Stats
	// Touch restarts the x-expires clock: a client used the queue
	// (declare, consume, cancel, get, channel close).
	Touch()
	// TimerFired runs the work of a timer that fell due. It reports
	// whether the queue expired (x-expires) and must be deleted.
	TimerFired(t Timer) (expired bool)
}

// New makes a queue of the type its x-queue-type argument names, after
// validating its arguments as RabbitMQ does. env is the broker's side of
// it.
func New[T any](env Env[T], vhost, name string, o Options) (Queue[T], error) {
	d := declared{vhost: vhost, name: name, opts: o}
	t, typeName, ok := parseType(o.Args)
	switch {
	case !ok:
		if err := d.validate(); err != nil {
			return nil, err
		}
		return nil, protocol.Errorf(protocol.NotImplemented, protocol.QueueDeclare, "amqpsim simulates classic, quorum and stream queues only, not x-queue-type '%s'", typeName)
	case t == Quorum:
		// A quorum queue checks the values of its own arguments only:
		// RabbitMQ 3.10.8 refuses x-max-priority=300 on a quorum queue
		// as an argument of another queue type, not as a bad value
		// (quorum-declare-checks.txt).
		return newQuorum(env, d)
	case t == Stream:
		// A stream too checks the values of its own arguments only
		// (stream-declare-refused.txt: x-message-ttl=abc is an argument
		// of another type).
		return newStream(env, d)
	}
	if err := d.validate(); err != nil {
		return nil, err
	}
	return newClassic(env, d)
}
