package queue

import "github.com/amqpsim/amqpsim/consumer"

// Streamer is a stream with the attach the tests call to start a
// consumer at an offset without basic.consume's checks.
type Streamer[T any] interface {
	Queue[T]
	Attach(c *consumer.Consumer[T], from Offset, filter *Filter)
}

// Attach is attach, for the tests.
func (s *stream[T]) Attach(c *consumer.Consumer[T], from Offset, filter *Filter) {
	s.attach(c, from, filter)
}
