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
// to a consumer or basic.get-ok. Body is shared with the broker and must not
// be modified.
type Delivery struct {
	ConsumerTag string // "" for basic.get
	DeliveryTag uint64
	Redelivered bool
	Exchange    string
	RoutingKey  string
	// MessageCount is, for basic.get-ok, the number of ready messages left
	// in the queue after this one was taken.
	MessageCount int
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
// name), its ready messages and its consumers.
type QueueInfo struct {
	Name      string
	Messages  int
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

// PublishOptions are basic.publish's flags. immediate is not supported by
// RabbitMQ either (it closes the connection with 540).
type PublishOptions struct {
	Mandatory bool
	Immediate bool
}

// Push is something the broker sends a client without being asked:
// Deliver, Return, Confirm, Cancel, ChannelClose or ConnectionClose.
type Push interface{ isPush() }

// Deliver is basic.deliver to a consumer.
type Deliver struct {
	Channel uint16
	Delivery
}

// Return is basic.return of an unroutable mandatory message.
type Return struct {
	Channel    uint16
	ReplyCode  int
	ReplyText  string
	Exchange   string
	RoutingKey string
	Message
}

// Confirm is a publisher confirm: basic.ack, or basic.nack when Nack is set.
type Confirm struct {
	Channel     uint16
	DeliveryTag uint64
	Multiple    bool
	Nack        bool
}

// Cancel is the broker's basic.cancel of a consumer whose queue was deleted,
// sent only to clients that announce the consumer_cancel_notify capability.
type Cancel struct {
	Channel     uint16
	ConsumerTag string
}

// ChannelClose is the broker closing a channel after an error.
type ChannelClose struct {
	Channel uint16
	Err     *Error
}

// ConnectionClose is the broker closing a connection after a hard error or
// on request (CloseConnection).
type ConnectionClose struct {
	Err *Error
}

func (Deliver) isPush()         {}
func (Return) isPush()          {}
func (Confirm) isPush()         {}
func (Cancel) isPush()          {}
func (ChannelClose) isPush()    {}
func (ConnectionClose) isPush() {}

// QueueStats is what RabbitMQ's management API shows of a queue.
type QueueStats struct {
	Vhost     string
	Name      string
	Ready     int   // messages_ready
	Unacked   int   // messages_unacknowledged
	Consumers int   // consumers, blocked and waiting ones included
	Bytes     int64 // body bytes of the ready messages
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
	Active      bool // false for a waiting single-active-consumer
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
}

// Epoch is where the virtual clock starts unless Config.Start says otherwise.
var Epoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
