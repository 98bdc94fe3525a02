// Package tune chooses a consumer prefetch by simulation: it runs a fleet
// of consumers that the caller describes against the sim broker on a
// virtual clock, once per prefetch value, and recommends the smallest value
// that reaches 95% of the best throughput.
//
// # Usage
//
//	res, err := tune.Sweep(tune.Config{
//		Consumers: 4,
//		Handler:   tune.Constant(5 * time.Millisecond),
//		RTT:       2 * time.Millisecond,
//		Size:      1024,
//		Backlog:   20000,
//		Prefetch:  []int{1, 2, 5, 10, 20, 50, 100, 200, 500},
//	})
//	res.WriteTable(os.Stdout) // or WriteCSV, WriteJSON, SVG
//	fmt.Println(res.Recommended().Prefetch)
//
// From the command line: `amqpsim tune --consumers 4 --handler 5ms --rtt
// 2ms --size 1KiB --backlog 20000 --prefetch 1,2,5,10,20,50,100,200,500`.
//
// # The model
//
// The broker is package sim: credit, round robin, the channel-wide limit
// and settlement are its own, not a formula. Around it, a small
// discrete-event loop on the same virtual clock plays the rest:
//
//   - the broker serves requests (consume, publish, ack) one at a time in
//     arrival order and spends BrokerCost on each delivery, plus
//     UnbatchedCost when nothing else is on its way to that connection
//     (the delivery and its ack then take writes, reads and wake-ups of
//     their own);
//   - each connection carries deliveries at Bandwidth, half an RTT long;
//   - each consumer handles its buffered deliveries one at a time, for
//     ClientCost plus a time drawn from Handler, and acks each (or every AckEvery-th, with
//     multiple), the ack taking half an RTT back;
//   - consumers subscribe one after another, a round trip apart, as a
//     client waiting for each consume-ok does.
//
// Outputs per prefetch value: throughput (messages over the time from the
// first basic.consume to the last handler's end), publish-to-handled latency
// quantiles, the peak messages and bytes held on the clients, each
// consumer's share, and the redelivery blast radius of a consumer crash
// (its unacked deliveries, at worst and on average).
//
// # Determinism
//
// Handler times come from a generator seeded by Config.Seed; the same
// Config gives the same Result, byte for byte in every format, however many
// Workers run the values side by side. Calls into sim are confined to one
// file (simadapter.go).
//
// # Calibration and validation
//
// BrokerCost and UnbatchedCost default to values measured on the
// development machine's RabbitMQ 3.10.8; package measure measures them on
// another broker (`amqpsim tune calibrate --url URL`) and compares this
// package's predictions with real amqp091-go consumers behind a delaying
// proxy. docs/tune.md has the comparison.
package tune
