// Package amqpsim is an in-process AMQP 0-9-1 broker simulator for tests. It
// behaves like RabbitMQ 4.3 by default, or another release from 3.10 on
// (sim.Config.Version), on the consumer side — per-consumer and (to 4.2)
// channel-wide prefetch, round-robin dispatch that skips full windows,
// basic.get outside qos, acks, nacks and rejects with RabbitMQ's rules,
// redelivery on channel close, and RabbitMQ's exact errors — runs on a virtual
// clock, and is deterministic: the same calls give the same trace.
//
// The packages, bottom to top:
//
//   - protocol: reply codes, method ids, the error type, field tables, properties.
//   - definitions: RabbitMQ's definitions file (JSON), the format sim imports and exports.
//   - consumer: one consumer's credit window and a queue's rotation of consumers.
//   - queue: one classic queue's ready messages, unacked count, arguments and dispatch.
//   - channel: one channel's delivery tags, unacked ledger, prefetch and channel-wide limiter.
//   - sim: the broker users call: vhosts, exchanges, routing, connections,
//     channels, the virtual clock, inspection and the event trace.
//
// Start with package sim. This root package holds the model-based property
// tests of the whole broker (sim_test.go).
package amqpsim
