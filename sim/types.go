package sim

import (
	"errors"
	"fmt"
	"time"

	"github.com/amqpsim/amqpsim/protocol"
)

// Table, Properties and Error are the protocol package's types, repeated here
// so that most tests need to import only sim.
type (
	// Table is an AMQP field table; see protocol.Table for the value types.
	Table = protocol.Table
	// Properties are the basic content properties.
	Properties = protocol.Properties
	// Error is a protocol error with RabbitMQ's reply code and text.
	Error = protocol.Error
)

// Message is what a publisher sends: properties and a body.
type Message struct {
	Properties
	Body []byte
}

// Delivery is a message as the broker hands it to a client, by basic.deliver
// to a consumer or basic.get-ok. Body and the Headers table are shared with
// the broker, and with other deliveries, and must not be modified.
type Delivery struct {
	ConsumerTag string // "" for basic.get
	DeliveryTag uint64
	Redelivered bool
	Exchange    string
	RoutingKey  string
	// MessageCount is, for basic.get-ok, the number of ready messages left
	// in the queue after this one was taken.
	MessageCount int
	// Queue is the queue the message came from. RabbitMQ does not send it;
	// the simulator knows it.
	Queue string
	// MessageID identifies the message across redeliveries (see
	// Event.MessageID). RabbitMQ does not send it either.
	MessageID uint64
	Message
}

// ErrClosed is wrapped by every error returned for a call on a closed
// channel or connection; errors.As with *Error gives the reason it closed,
// when a protocol error closed it.
var ErrClosed = errors.New("closed")

// closedError says what is closed and why.
type closedError struct {
	what  string
	cause error
}

func (e *closedError) Error() string {
	if e.cause == nil {
		return fmt.Sprintf("sim: %s is closed", e.what)
	}
	return fmt.Sprintf("sim: %s is closed: %v", e.what, e.cause)
}

func (e *closedError) Unwrap() []error {
	if e.cause == nil {
		return []error{ErrClosed}
	}
	return []error{ErrClosed, e.cause}
}

// QueueOptions are queue.declare's flags and arguments.
type QueueOptions struct {
	Passive    bool
	Durable    bool
	Exclusive  bool
	AutoDelete bool
	Args       Table
}

// QueueInfo is queue.declare-ok: the queue's name (generated for an empty
// name), its ready messages (message_count) and its consumers. Counts are
// named as QueueStats names them.
type QueueInfo struct {
	Name      string
	Ready     int
	Consumers int
}

// ExchangeOptions are exchange.declare's flags and arguments.
type ExchangeOptions struct {
	Passive    bool
	Durable    bool
	AutoDelete bool
	Internal   bool
	Args       Table
}

// ConsumeOptions are basic.consume's settings. Args may carry "x-priority".
type ConsumeOptions struct {
	Tag       string // "" lets the broker generate "amq.ctag-…"
	NoAck     bool
	Exclusive bool
	Args      Table
}

// QueueDeleteOptions are queue.delete's conditions.
type QueueDeleteOptions struct {
	IfUnused bool
	IfEmpty  bool
}

// ExchangeDeleteOptions are exchange.delete's conditions.
type ExchangeDeleteOptions struct {
	IfUnused bool
}

// PublishOptions are basic.publish's flags. immediate is not supported by
// RabbitMQ either (it closes the connection with 540).
type PublishOptions struct {
	Mandatory bool
	Immediate bool
}

// QueueStats is what RabbitMQ's management API shows of a queue.
type QueueStats struct {
	Vhost   string
	Name    string
	Ready   int // messages_ready
	Unacked int // messages_unacknowledged
	// Consumers is RabbitMQ's consumer count (queue.declare-ok's, the
	// management API's): every consumer, blocked and waiting ones
	// included. A quorum queue, as rabbit_fifo's query_stat/1, counts
	// only the active one of single-active consumers, but also each
	// cancelled consumer until it has settled the messages it holds,
	// and each unsettled basic.get, so after a basic.cancel
	// the count falls only once those are acked, nacked, rejected or
	// their channel closed (QueueDetails.ConsumerList lists the
	// registered consumers alone).
	Consumers int
	// Bytes is RabbitMQ's message_bytes_ready: the bytes of the ready
	// messages as the queue counts them against x-max-length-bytes, the
	// bodies, and from 4.3 a quorum queue's encoded properties too
	// (queue.Rules.QuorumCountsProperties).
	Bytes int64
	// TimedOut counts the deliveries a 4.3 quorum queue timed out and
	// took back that their channels still hold (the client may still
	// settle their tags): RabbitMQ counts them in its channels'
	// messages_unacknowledged, not in the queue's (Unacked).
	TimedOut int
	// Stream describes a stream's log; nil for other queue types. For a
	// stream, Ready is what queue.declare-ok reports (RabbitMQ's count,
	// refreshed every 5 s), Bytes the retained bodies, and Consumers its
	// consumers (queue.declare-ok always says 0).
	Stream *StreamStats
}

// StreamStats describe a stream's log.
type StreamStats struct {
	// FirstOffset is the offset of the oldest retained chunk and
	// NextOffset the one the next publish gets.
	FirstOffset, NextOffset int64
	// Messages counts the retained messages now (Ready lags behind).
	Messages int
	// Segments counts the log's segment files; Bytes is their size as
	// amqpsim estimates it (retention by x-max-length-bytes reads it).
	Segments int
	Bytes    int64
}

// ConsumerStats is one consumer's credit window.
type ConsumerStats struct {
	Tag         string
	Queue       string
	Channel     uint16
	Prefetch    int // 0: unlimited
	Outstanding int // unsettled deliveries
	NoAck       bool
	Priority    int
	Blocked     bool // out of the rotation until credit returns
	// TimedOut is set while a 4.3 quorum queue that timed out some of
	// its deliveries gives it nothing, until the client has settled them.
	TimedOut  bool
	Active    bool // false for a waiting single-active-consumer
	Exclusive bool
	Args      Table // basic.consume's arguments
}

// ChannelStats is one channel's delivery state.
type ChannelStats struct {
	Channel        uint16
	Prefetch       int // for consumers created from now on
	GlobalLimit    int // 0: none
	GlobalVolume   int // RabbitMQ's limiter volume
	Unacked        int
	Consumers      []ConsumerStats
	NextTag        uint64 // tag of the next deliver or get-ok; 1 on a new channel
	Confirming     bool
	LastPublishTag uint64
	Transactional  bool // tx.select was called
}

// Epoch returns where the virtual clock starts unless Config.Start says
// otherwise: 2024-01-01 00:00:00 UTC.
func Epoch() time.Time { return time.Unix(epochUnix, 0).UTC() }

const epochUnix = 1704067200 // 2024-01-01T00:00:00Z

// Errors of the inspection methods (Broker.QueueStats, QueueMessages, ...),
// for errors.Is.
var (
	ErrNoVhost    = errors.New("sim: no such vhost")
	ErrNoQueue    = errors.New("sim: no such queue")
	ErrNoExchange = errors.New("sim: no such exchange")
)
