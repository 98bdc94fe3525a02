// Package sim is a simulated RabbitMQ broker for tests: the whole broker in
// memory, driven by plain method calls, with a virtual clock and no
// goroutines.
//
// # Usage
//
// A test makes a broker, connects, and calls AMQP methods on channels. Each
// method returns what RabbitMQ replies, or the *Error RabbitMQ closes the
// channel or connection with:
//
//	b := sim.New(sim.Config{})
//	ch, _ := b.Connect("app").Channel()
//	ch.QueueDeclare("orders", sim.QueueOptions{})
//	ch.Qos(2, 0, false)
//	c, _ := ch.Consume("orders", sim.ConsumeOptions{})
//	b.Publish("/", "", "orders", sim.Message{Body: []byte("m1")})
//	d, _ := c.Next() // what the broker pushed, in order
//	ch.Ack(d.DeliveryTag, false)
//
// # Outputs
//
// The broker never calls out. Everything it sends a client but the plain
// replies a method returns (queue.declare-ok and its kind) is appended, in
// order, to its connection's outbox, one log whoever reads it:
// basic.deliver, basic.return, publisher confirms, basic.cancel,
// channel.close, connection.close, connection.blocked and unblocked, and
// the replies that carry content or follow pushes of their own call
// (basic.get-ok and get-empty, tx.commit-ok). The plain replies go there
// too where the connection asks (ShellOptions.Replies, as a shell
// does), and always for a method the channel queued (ErrQueued: it waits
// in a call, and answers the method once the call ends). By the time
// Publish returns, the message sits in a consumer's outbox or in the
// queue.
//
// There are two ways to read it, views of the same log: Connection.Drain
// takes everything in order, as a shell (the wire server) writes it to a
// socket, after each call it makes and whenever ShellOptions.Notify
// says there is more; and the in-process readers each take their kind:
// Consumer.Next and Deliveries a consumer's deliveries, Channel.Returns,
// Confirms and Cancels a channel's. What one took, the other does not
// see. Get and TxCommit also return their reply, which waits in the
// outbox too, for Drain.
//
// RabbitMQ's rules on what the outbox holds are the same in both uses:
// what a queue pushes in reaction to a method follows what the channel
// sends for it, and the options a client across a socket needs are
// explicit, with one meaning wherever they are set (ConnectOptions.Shell,
// ShellOptions: AwaitCloseOk, Batched with Connection.Idle, MaxUnsent,
// SentWhenWritten with Connection.Written, Replies). The wire server sets
// them all; an in-process connection none unless asked. They are the only
// differences, beside one that is the caller's: an alarm holds a publish
// only where a reader can stop reading, so a shell asks BlockOnPublish,
// while an in-process Publish returns at once unless the connection
// holds its calls as a socket's reader would (HoldWhenBlocked).
//
// # Trace
//
// Trace lists every client call, every push and every change the broker
// made on its own (dead-lettering, expiry, deletion) as typed Events with
// their virtual time. Read their fields; their String is for people.
//
// # Names
//
// Channel methods are named as amqp091-go names them (Qos, Consume,
// Cancel, Confirm, Publish, Get, Ack); what the broker pushes is a noun
// (Delivery, Return, Confirmation, Cancellation, Push). A method that takes
// flags beside its names takes an options struct (QueueOptions,
// QueueDeleteOptions, ExchangeDeleteOptions, ...). Broker-level methods
// that name a queue or an exchange take the vhost first. Counts are named
// as the management API names them (Ready, Unacked, Consumers). Inspection
// fails with errors that wrap ErrNoVhost, ErrNoQueue or ErrNoExchange.
//
// # Users and permissions
//
// A fresh broker has RabbitMQ's defaults: the vhost "/" and the user
// guest/guest with full permissions there, who may log in only over
// loopback (Config.DefaultUser and its neighbours change them). Connect
// and Dial without a User trust the default user; Dial with a User and
// Password logs in as connection.start-ok does (Authenticate). AddUser,
// SetPermissions and SetTopicPermissions grant more; every channel method
// then checks the user's configure, write or read expression as
// rabbit_channel does, with its 403 texts. A definitions file carries all
// of it in RabbitMQ's JSON: package definitions holds the format
// (definitions.Parse), and Config.Definitions, ImportDefinitions and
// ExportDefinitions move it into and out of the broker.
//
// # Fidelity
//
// The behaviour follows RabbitMQ's classic and quorum queues and streams
// as 3.10 has them, with each later release's changes as its Profile says
// (see RabbitMQ versions below), read from the broker's source and checked
// against running brokers: see the package docs of consumer, queue and
// channel for the rules each models. A stream (x-queue-type=stream) is a log each consumer
// reads from its x-stream-offset, with the offset in each delivery's
// headers; acks only return credit; QueueStats.Stream describes the log. Publisher confirms are sent
// as RabbitMQ 3.10.8 sends them: a message that reached no queue is
// confirmed at once, the others when the connection is idle
// (ShellOptions.Batched, Connection.Idle), coalesced as RabbitMQ's
// channel coalesces them, classic queues' before those of quorum queues,
// streams and persistent messages in durable queues.
//
// # Queue types
//
// The broker holds each queue as a queue.Queue and never tests its type:
// what basic.consume, basic.get, a settlement, queue.purge, queue.delete's
// flags, the consumer-timeout tick, a restart and inspection mean for a
// queue, and RabbitMQ's refusals with their texts, are the type's answers
// to the broker's questions (queue.Queue's Consume, Get, CheckSettle,
// Purge, CheckDelete, Restart, Stats), or its fixed answers as data
// (queue.Caps: consumer timeout, channel-wide limit, late confirms,
// replicated, ...), as RabbitMQ's channel asks rabbit_queue_type. A new queue type,
// or a release's rule for one, changes package queue only; a test
// (TestSimDoesNotTestQueueTypes) fails if sim's code compares or asserts
// a queue's type, or writes a type's name or error text.
//
// # Clusters
//
// Config.Nodes makes the broker a cluster of that many nodes, as RabbitMQ
// 4.3 runs one (cluster.go; measured on a real 3-node cluster,
// docs/cluster.md): each connection is on a node (ConnectOptions.Node),
// each queue has a leader node (a classic queue's home; a quorum queue's
// or stream's Raft leader, with a member on every node), and StopNode,
// KillNode, StartNode, Partition, Heal and RecoverAfter are the faults.
// What clients then see (closes, cancellations, nacks, held confirms,
// elections after LeaderElection, errors at once or after a timeout, calls
// that wait) follows the measurements, on the virtual clock. A channel
// that waits in a call queues the methods called on it meanwhile
// (ErrQueued), as RabbitMQ's channel process leaves them in its mailbox,
// and applies them in order when the call ends, their replies pushed
// then (mailbox.go). The topology itself (which nodes reach which, where
// the majority is, how a queue answers a node, who leads after a change
// and when, where a new queue goes) is package cluster's, pure and tested
// by tables; sim keeps the reactions. Every change of the nodes is also
// an output, NodeEvents, which the wire server's listeners follow.
// A broker of one node has none of it.
//
// # RabbitMQ versions
//
// Config.Version picks the release simulated: V3_10, V3_12, V3_13, V4_0,
// V4_1, V4_2 or V4_3 (DefaultVersion, the newest recorded; 3.10, 4.0 and
// 4.3 are measured, the library recorded on each). Each is a Profile,
// its differences as data with the rabbitmq-server source each follows;
// Broker.Profile returns it, and the rest of the broker asks it instead
// of comparing versions. Config.Permit permits deprecated features a
// release denies (4.3's global_qos).
//
// # Time
//
// The broker has one clock, virtual, starting at Config.Start (Epoch() by
// default). It moves only by Advance, which fires due timers in (due time,
// creation) order, each at its own time: consumer-timeout ticks (a 4.3
// quorum queue's deliveries each at its own timeout), message TTLs at
// the queue heads, queue expiry (x-expires), and a stream's hourly
// retention check (x-max-age). A stream's declare-ok count follows
// RabbitMQ's 5 s metrics tick on this clock.
//
// Or, with Config.Clock set, the same clock follows a time the caller
// supplies, and Advance is refused: every call first moves the clock up to
// Clock(), firing what fell due, and a shell wakes an idle broker at
// NextTimer with Sync. Config{Clock: time.Now} under an amqptest server
// (which wakes the broker) makes a sleep in the code under test, inside a
// testing/synctest bubble, fire the broker's timers; sim itself never
// reads the time.
//
// # Waiting
//
// WaitFor blocks until a condition over the broker holds, woken by a
// condition variable after every call that may have changed the broker
// (Changes counts them), never by polling; a context bounds it.
//
// # Determinism
//
// One lock serialises every call; below it the broker is single-threaded.
// Generated names and the few choices RabbitMQ makes at random come from one
// generator seeded by Config.Seed. The same calls with the same seed give the
// same Trace.
package sim
