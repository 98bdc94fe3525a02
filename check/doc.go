// Package check reads the typed trace of a test run (sim.Broker.Trace, or
// amqptest's broker behind a real client) and says what the client did
// wrong or whether it behaved.
//
// # Lint
//
// Lint reports the mistakes RabbitMQ users learn about the hard way, each
// with the trace events that show it and its consequence in one sentence:
//
//	findings := check.Lint(b.Trace(), check.Options{})
//	for _, f := range findings {
//		t.Error(f)
//	}
//
// Rules are named (Rule) and can be switched off with Options.Disable.
// They follow RabbitMQ's behaviour as the simulator models it: a
// basic.qos applies only to consumers created after it, a manual-ack
// consumer without a prefetch limit is pushed the whole queue, closing a
// channel requeues everything it holds, and so on.
//
// # Properties
//
// MaxUnacked, AtMostDeliveries and NoLoss check a trace against
// properties a consumer should keep whatever happens, for plain tests and
// for property tests with pgregory.net/rapid: each returns an error that
// names the events that break it, or nil. amqptest.CheckUnderFaults runs
// them and Lint over every run of a consumer under drawn fault schedules.
// (This package reads traces only, and imports sim alone: amqptest, which
// serves the broker, imports it, never the other way round.)
package check
