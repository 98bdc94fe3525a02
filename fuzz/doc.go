// Package fuzz tests the simulator against real RabbitMQ on scenarios nobody
// wrote: it generates random scenarios in the scenario grammar (package
// scenarios), records each on real brokers, replays every release's answers
// on that release's profile, in process and over the wire, sets aside what
// RabbitMQ itself answers differently from one recording to the next (a
// race inside the broker), and shrinks each divergence to the smallest
// scenario that still diverges, re-recording every candidate, into a file
// ready for the scenario library. SQLancer's and CockroachDB's differential
// tests against PostgreSQL are its models.
//
// # Generating
//
// Generate(seed, Options) returns the same scenario for the same seed and
// options: connections and channels, queues of the three types with their
// arguments, exchanges of every type and their bindings (exchange to
// exchange, alternate exchanges, topic and headers patterns with their edge
// cases), publishes with properties, headers, confirms, mandatory and CC/BCC,
// consumers, gets, settlements, recover, transactions, policies, users and
// permissions, time, and the odd sequences clients send (unknown tags,
// redeclares with other arguments, methods after a close). The generator
// asks the simulator what each client holds after every step, so that most
// settlements name real deliveries; a scenario is a pure function of the
// seed, the options and the simulator's answers.
//
// # Race-free by construction
//
// A real broker offers no barrier, so the recorder waits after each step
// until the broker has been quiet for a window, and that real time is time
// the simulator's virtual clock does not see. Every timer a scenario starts
// (a message TTL, a queue's expiry) therefore has two clocks: the
// simulator's, which moves only with advance steps, and the broker's, which
// also moves during every step. The generator keeps each timer's deadline
// outside the window where the two could disagree: before a step could
// bring the broker within a margin of a deadline the simulator has not
// reached, it inserts the advance that takes both past it, and it chooses
// that advance so that no other deadline falls between the two clocks.
//
// Where RabbitMQ races anyway (two recordings of the same scenario answer
// differently), Run sets the scenario aside as a measured race rather than
// a divergence.
package fuzz
