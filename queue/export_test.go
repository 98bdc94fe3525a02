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

// TimeoutListLen is how many deliveries of c a quorum queue lists for
// its consumer timeout, settled ones it has not dropped yet included.
func TimeoutListLen[T any](q Queue[T], c *consumer.Consumer[T]) int {
	t := q.(*quorum[T]).timings[c]
	return len(t.out) - t.head
}
