// Package modeltest is the harness behind the root package's model-based
// property tests (docs/fidelity.md, "Property tests of the simulator"):
// random sequences of AMQP operations run on the simulator, compared step
// by step with a naive reference model and checked against the invariants
// under Checks below.
//
// The model is RabbitMQ 3.10's: it restates the rules recorded on 3.10.8
// (global qos as a channel-wide limit, the consumer timeout on every
// queue, 3.10's dead-letter headers and quorum returns). Every simulator
// the harness builds is pinned to that release (Release, sim.V3_10),
// whatever sim.DefaultVersion is; a sequence Replay runs must name it
// ("rabbitmq 3.10"), as the regressions kept in the root's testdata/model
// do, and a counterexample is written with it, to be recorded on 3.10.
//
// # Operations
//
// An operation is a scenarios.Op, the step of a scenario file: rapid's
// actions draw complete operations, names included, from the model's
// state. A sequence is therefore a scenario as it stands, and a shrunk
// counterexample is written as the scenario's text, ready to record
// against RabbitMQ. Sequences run on up to 3 open connections (conn1,
// conn2, ...), up to 4 open channels (ch1, ch2, ..., never reused) and 3
// queues (q1-q3) with up to 6 live consumers. Queues may be auto-delete
// and have x-max-priority, x-single-active-consumer, x-message-ttl (0
// too), x-expires, x-max-length and x-max-length-bytes with any x-overflow,
// and dead-letter through the default exchange to another queue, to
// themselves, or nowhere, so chains and cycles happen; messages may have a
// priority and an expiration; the clock advances by 1 ms to 31 minutes.
// About a third of the queues are quorum queues (x-queue-type=quorum,
// durable) with x-delivery-limit 0-2 or none, maybe
// x-single-active-consumer and x-message-ttl, and the same dead-lettering:
// the model (model_quorum.go) restates rabbit_fifo's returns, credit,
// delivery count and limit, head-only expiry and consumer counts from the
// recordings in scenarios/library/quorum-*.txt.
// The broker's own publish (Broker.Publish, no channel) is a publish on
// channel BrokerChannel of connection BrokerConn, opened where first used.
//
// # Checks
//
// After every operation the harness
//
//   - compares everything a client or operator can observe (each
//     consumer's deliveries with their x-death headers, get results,
//     errors, which channels and connections are closed, returns, confirms
//     and their nacks, broker cancels, queue stats, ready lists, channel
//     and consumer stats) with the reference model (model*.go), a
//     re-statement of RabbitMQ's rules with slices and linear scans;
//   - checks invariants 1-7 and 9 from the simulator's observations and
//     its typed trace alone (checker*.go), among them conservation: every
//     routed message is in exactly one place - ready, unacked, or gone as
//     acknowledged, rejected, expired, dropped, refused at publish, purged,
//     deleted, or over a quorum queue's delivery limit with no dead-letter
//     exchange - and a dead-lettered one (reason delivery_limit too)
//     moves on to its next queue; a quorum queue's ready list is checked
//     in its own order (returns first, tail requeues without a delivery
//     limit) and its redelivered flag against the message's returns;
//
// and at the end of a sequence it replays the operations on a fresh broker
// and requires the same trace (invariant 10). Invariant 8 (round robin) is
// checked by the model comparison, which fixes who gets each message.
//
// # Use
//
// The root's sim_test.go is the entry point:
//
//	func TestModel(t *testing.T) { modeltest.Check(t) }
//
// Check runs 1,000 sequences, or AMQPSIM_CHECKS=n (or -rapid.checks=n).
// A failure prints the shrunk sequence, one scenario step per line, and a
// diff of model and simulator, and writes the sequence as a scenario file
// (AMQPSIM_COUNTEREXAMPLES=dir, or =testdata for testdata/counterexamples/)
// with the commands that record it against RabbitMQ and replay it.
// Replay runs a scenario's text through the same checks, which makes a
// counterexample a regression test as soon as it is found.
package modeltest
