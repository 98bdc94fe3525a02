// Package amqpsim is an in-process AMQP 0-9-1 broker simulator for tests. It
// behaves like RabbitMQ 4.3 by default, or another release from 3.10 on
// (sim.Config.Version), on the consumer side — per-consumer and (to 4.2)
// channel-wide prefetch, round-robin dispatch that skips full windows,
// basic.get outside qos, acks, nacks and rejects with RabbitMQ's rules,
// redelivery on channel close, and RabbitMQ's exact errors — runs on a virtual
// clock, and is deterministic: the same calls give the same trace.
//
// The packages, lowest first: each imports only packages listed before it.
//
//   - protocol: AMQP vocabulary: reply codes, method ids, the error type, field tables, properties.
//   - consumer: one consumer's credit window and a queue's rotation of consumers.
//   - queue: classic queues, quorum queues and streams behind one interface, and the rules a release sets.
//   - channel: one channel's delivery tags, unacked ledger, prefetch and channel-wide limiter.
//   - cluster: a cluster's topology: nodes and their states, partitions, reach and majority,
//     how a queue answers a node, leader elections and placement.
//   - definitions: RabbitMQ's definitions file (JSON), the format sim imports and exports.
//   - sim: the broker users call: vhosts, users, exchanges, routing, connections,
//     channels, the virtual clock, release profiles, faults, inspection and the event trace.
//   - wire: the AMQP 0-9-1 codec and a server that turns frames into sim calls.
//   - scenarios: record a conversation on RabbitMQ, replay it on the simulator, the upgrade check.
//   - fuzz: random scenarios recorded on RabbitMQ and replayed on the simulator; divergences shrunk.
//   - mgmt: RabbitMQ's management HTTP API over a sim.Broker.
//   - check: lint rules and properties over a run's typed trace.
//   - amqptest: the httptest-style server for amqp091-go, with faults, waits, checks and reports,
//     and CheckUnderFaults, the one-call property test of a consumer under fault schedules.
//   - tune: prefetch tuning by simulation (tune/measure calibrates and validates it on RabbitMQ).
//   - internal/modeltest: the model-based property tests' harness.
//   - cmd/amqpsim: the command: serve, replay, upgrade-check, record, fuzz, tune.
//
// Beside them: internal/bubble (helpers for tests in a testing/synctest
// bubble, and for the programs that run one), internal/memwatch (the memory watermark sampler that raises the
// memory alarm for serve and amqptest), internal/scratch (the clearing of
// the hot paths' reused scratch slices), wire/internal/gen (generates
// wire's codec from the spec XML), scripts/serve-flood (floods serve and
// reports its memory), scripts/frame-watch (a proxy that reports frames on
// a channel after its close-ok), scripts/scale (measures amqpsim's cost as
// its bindings, queues, consumers and ready messages grow, beside
// RabbitMQ's: docs/benchmarks.md), examples/prefetch (the two-consumer diagram as a
// program), examples/worker (a consumer property-tested against fault
// schedules) and examples/failover (a publisher and a consumer of a
// cluster, property-tested against node loss and partitions). The core
// (consumer, queue, channel, cluster, sim) has no goroutines, no wall clock
// and no I/O.
//
// Start with package amqptest, or sim for the broker without a client. This
// root package holds the model-based property tests of the whole broker
// (sim_test.go) and the tests that keep README.md and docs/ true.
package amqpsim
