package sim

// ShellOptions are how RabbitMQ treats a client across a socket, whose
// frames arrive in reads and whose pushes wait for a writer: the options
// of a connection (ConnectOptions.Shell) that a shell sets. The wire
// server sets them all; in process they are off unless set, because there
// the test plays the client and reads the outbox itself. Each means the
// same in both uses, and they are the only differences between them.
type ShellOptions struct {
	// Notify, when set, is called whenever the connection's outbox goes
	// from empty to not empty, under the broker's lock: it must neither
	// block nor call back into the broker. A shell uses it to wake the
	// goroutine that drains the outbox with Drain. It changes nothing
	// else: the broker behaves the same whoever reads.
	Notify func()
	// AwaitCloseOk: the client answers the broker's channel.close with
	// channel.close-ok (Channel.CloseOk), as AMQP clients do; until then
	// the channel's number stays taken, a channel.open of it is a second
	// open (504), and its methods are dropped. Without it the client
	// answers at once.
	AwaitCloseOk bool
	// Batched: the shell calls Idle whenever the client's frames run out;
	// publisher confirms, and what queues push in reaction to the calls,
	// wait for it (Connection.Idle). Without it each call is its own
	// batch.
	Batched bool
	// MaxUnsent bounds the deliveries the connection holds unsent (see
	// SentWhenWritten): at the bound its consumers get nothing more and
	// the messages stay queued, as RabbitMQ stops delivering to a channel
	// whose writer is blocked (flow.go). A shell sets DefaultMaxUnsent,
	// RabbitMQ's number; 0 or negative means no bound.
	MaxUnsent int
	// SentWhenWritten: a delivery counts as sent when the shell reports
	// it written to the socket (Written), not when it is taken from the
	// outbox (Drain, Consumer.Next): a shell takes pushes to write them
	// later.
	SentWhenWritten bool
	// Replies: the replies of the channel's methods are pushed to the
	// outbox too, in order with the rest (Push), as a shell writes them;
	// the methods return their results as without it. A method the
	// channel queues (ErrQueued) pushes its reply either way, when it is
	// applied.
	Replies bool
	// HoldWhenBlocked: the connection's calls wait while an alarm blocks
	// it, as those of a client RabbitMQ stops reading (see
	// Broker.SetAlarm): the first publish with a body after an alarm is
	// raised blocks it (one with an empty body goes through and blocks it
	// behind), and it and every later call on the connection return
	// ErrQueued, to be applied in order when the last alarm clears. A
	// shell that stops reading its socket (the wire server) leaves it off
	// and asks BlockOnPublish instead; an in-process client that plays
	// one (the scenarios' simulator driver) sets it.
	HoldWhenBlocked bool
}
