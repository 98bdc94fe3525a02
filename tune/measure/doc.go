// Package measure runs the workloads of package tune on a real RabbitMQ,
// with amqp091-go consumers whose handlers sleep per a tune.Dist, behind an
// optional Proxy that adds a network delay. It calibrates tune's broker
// costs (`amqpsim tune calibrate`) and validates tune's predictions
// (TestValidate, on demand).
//
// Unlike package tune, it runs on the wall clock: it measures. A run
// declares a queue with a unique name and deletes it afterwards.
//
// # Precise sleeps
//
// A handler that must take 250 µs cannot use time.Sleep, which rounds
// short sleeps up to about a millisecond; see Sleeper.
package measure
