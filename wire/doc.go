// Package wire is the AMQP 0-9-1 wire codec of amqpsim, in RabbitMQ's dialect.
//
// It holds:
//
//   - framing: [Frame], [FrameReader] (protocol header, frame size limit,
//     frame-end check) and [FrameWriter];
//   - the methods: one struct per AMQP method ([BasicPublish], [QueueDeclare],
//     ...), generated from the specification XML that ships with
//     github.com/rabbitmq/amqp091-go, all implementing [Method], with
//     [DecodeMethod] and [AppendMethod];
//   - content: the content header ([Header], the 14 basic properties as
//     [protocol.Properties]) and the splitting of bodies into body frames;
//   - field tables and arrays with RabbitMQ's type tags ([AppendTable],
//     [DecodeTable]), mapped to the Go types documented on [protocol.Table].
//
// Decoding never panics on bad input: it returns an [*Error] carrying the
// reply code (501 FRAME_ERROR, 502 SYNTAX_ERROR, 503 COMMAND_INVALID, 505
// UNEXPECTED_FRAME) a RabbitMQ server would close the connection with.
// Decoded strings, byte slices and tables never alias the input.
//
// [Server] speaks the protocol to clients the way the simulated RabbitMQ
// release does (sim.Profile; 4.3 by default) and translates every method
// into a call on a [sim.Broker], then writes the connection's outbox
// (sim.Connection.Drain) to the socket, the replies among the rest: it
// holds no method back, as a channel that waits queues them itself
// (sim.ErrQueued). The rules of a client across a socket (awaiting
// close-ok, batched reads, the 200-unsent bound, replies in the outbox)
// are the broker's options, which it sets (sim.ShellOptions). On a
// cluster it is the one place that knows a node is down: it refuses a
// dial to it ([Server.Refused]) and closes its listener
// ([Server.ListenNodes]), following the broker's node events. [Pipe] is
// the in-memory transport it is usually served over (see package
// amqptest).
// methods_gen.go is regenerated with "go generate ./wire/".
//
//go:generate go run ./internal/gen
package wire
