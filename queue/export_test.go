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

// joiner is a queue's admission and registration of a consumer, which
// Consume makes after its checks.
type joiner[T any] interface {
	AdmitConsumer(exclusive bool) error
	AddConsumer(c *consumer.Consumer[T])
}

// AdmitConsumer is q's, for the tests.
func AdmitConsumer[T any](q Queue[T], exclusive bool) error {
	return q.(joiner[T]).AdmitConsumer(exclusive)
}

// AddConsumer is q's, for the tests: a consumer registered without
// basic.consume's checks.
func AddConsumer[T any](q Queue[T], c *consumer.Consumer[T]) { q.(joiner[T]).AddConsumer(c) }
