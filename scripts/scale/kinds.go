package main

import (
	"fmt"
	"slices"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// kind is a dimension a broker grows in: setup makes n of its items, and
// measure returns the rate at which the broker then takes msgs messages.
type kind struct {
	name, items, metric string
	// memory: the memory per item is measured at the largest size.
	memory bool
	// metadata: the items are the broker's metadata (RabbitMQ 4.3
	// writes each to its Khepri store), which the target may limit.
	metadata bool
	setup    func(s *session, n int) error
	measure  func(s *session, msgs int) (float64, error)
}

var kinds = []kind{
	{name: "bindings", items: "topic bindings", metric: "publish, routed by a topic exchange to one queue", memory: true, metadata: true,
		setup: setupBindings, measure: publishOnly},
	{name: "queues", items: "queues", metric: "publish to one of them, by the default exchange", metadata: true,
		setup: setupQueues, measure: publishOnly},
	{name: "consumers", items: "consumers", metric: "publish, deliver, ack; the other consumers' windows are full",
		setup: setupConsumers, measure: publishAndConsume},
	{name: "ready", items: "ready messages", metric: "publish, deliver and ack; the queue keeps its depth", memory: true,
		setup: setupReady, measure: publishAndConsume},
}

// spread is how the measurements pick their routing keys among n items:
// a stride prime to any size here, so that each run visits many.
func spread(i, n int) int { return (i * 7919) % n }

// setupBindings binds one exclusive queue to a topic exchange with n keys
// "k<i>.*"; a publish with "k<j>.x" matches one of them.
func setupBindings(s *session, n int) error {
	s.exchange, s.queue = s.prefix+"x", s.prefix+"q"
	if err := s.sch.ExchangeDeclare(s.exchange, "topic", false, true, false, false, nil); err != nil {
		return err
	}
	if _, err := s.sch.QueueDeclare(s.queue, false, false, true, false, nil); err != nil {
		return err
	}
	for i := range n {
		if err := s.sch.QueueBind(s.queue, fmt.Sprintf("k%d.*", i), s.exchange, true, nil); err != nil {
			return err
		}
	}
	s.key = func(i int) string { return fmt.Sprintf("k%d.x", spread(i, n)) }
	return s.sync()
}

// setupQueues declares n exclusive queues; a publish goes to one of them.
func setupQueues(s *session, n int) error {
	for i := range n {
		if _, err := s.sch.QueueDeclare(fmt.Sprintf("%sq%d", s.prefix, i), false, false, true, true, nil); err != nil {
			return err
		}
	}
	s.key = func(i int) string { return fmt.Sprintf("%sq%d", s.prefix, spread(i, n)) }
	return s.sync()
}

// consumersPerChannel spreads setupConsumers' consumers over channels.
const consumersPerChannel = 1000

// setupConsumers puts n - 1 consumers of prefetch 1 on one exclusive
// queue, each holding one unacknowledged message, so that their windows
// are full; measure's consumer is the n-th.
func setupConsumers(s *session, n int) error {
	s.queue = s.prefix + "q"
	if _, err := s.sch.QueueDeclare(s.queue, false, false, true, false, nil); err != nil {
		return err
	}
	if err := s.publish(n-1, "", func(int) string { return s.queue }, nil); err != nil {
		return err
	}
	var ch *amqp.Channel
	for i := range n - 1 {
		if i%consumersPerChannel == 0 {
			var err error
			if ch, err = s.setup.Channel(); err != nil {
				return err
			}
			if err := ch.Qos(1, 0, false); err != nil {
				return err
			}
		}
		if _, err := ch.Consume(s.queue, fmt.Sprintf("c%d", i), false, false, false, true, nil); err != nil {
			return err
		}
	}
	s.key = func(int) string { return s.queue }
	// Every consumer holds its message once none is left ready.
	deadline := time.Now().Add(timeout)
	for {
		q, err := s.sch.QueueDeclarePassive(s.queue, false, false, true, false, nil)
		if err != nil {
			return err
		}
		if q.Messages == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d messages still ready after %v", q.Messages, timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// setupReady publishes n messages to one exclusive queue.
func setupReady(s *session, n int) error {
	s.queue = s.prefix + "q"
	if _, err := s.sch.QueueDeclare(s.queue, false, false, true, false, nil); err != nil {
		return err
	}
	s.key = func(int) string { return s.queue }
	return s.publish(n, "", s.key, nil)
}

// sync returns once the broker has applied the setup channel's methods
// sent without waiting.
func (s *session) sync() error {
	_, err := s.sch.QueueDeclare(s.prefix+"sync", false, true, true, false, nil)
	return err
}

// publish publishes msgs 128-byte messages on the probe channel, at most
// 100 unconfirmed, and waits for their confirms.
func (s *session) publish(msgs int, exchange string, key func(int) string, headers amqp.Table) error {
	body := make([]byte, 128)
	window := make([]*amqp.DeferredConfirmation, 0, 100)
	flush := func() error {
		for _, dc := range window {
			if err := wait(dc); err != nil {
				return err
			}
		}
		window = window[:0]
		return nil
	}
	for i := range msgs {
		dc, err := s.pch.PublishWithDeferredConfirm(exchange, key(i), false, false, amqp.Publishing{Headers: headers, Body: body})
		if err != nil {
			return err
		}
		if window = append(window, dc); len(window) == cap(window) {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}

// publishOnly is the rate of publishing msgs messages with confirms; a
// queue that holds them is purged after.
func publishOnly(s *session, msgs int) (float64, error) {
	start := time.Now()
	if err := s.publish(msgs, s.exchange, s.key, nil); err != nil {
		return 0, err
	}
	rate := float64(msgs) / time.Since(start).Seconds()
	if s.queue != "" {
		if _, err := s.sch.QueuePurge(s.queue, false); err != nil {
			return 0, err
		}
	}
	return rate, nil
}

// publishAndConsume is the rate of publishing msgs messages while a
// consumer of prefetch 100 on a channel of its own (of the setup
// connection, which owns the exclusive queue) takes and acks as many;
// closing the channel requeues what it was sent beyond them.
func publishAndConsume(s *session, msgs int) (float64, error) {
	ch, err := s.setup.Channel()
	if err != nil {
		return 0, err
	}
	defer ch.Close()
	if err := ch.Qos(100, 0, false); err != nil {
		return 0, err
	}
	start := time.Now()
	ds, err := ch.Consume(s.queue, "", false, false, false, false, nil)
	if err != nil {
		return 0, err
	}
	done := make(chan error, 1)
	go func() { done <- s.publish(msgs, "", s.key, nil) }()
	published := done
	for acked := 0; acked < msgs || published != nil; {
		select {
		case d := <-ds:
			if err := d.Ack(false); err != nil {
				return 0, err
			}
			acked++
		case err := <-published:
			if err != nil {
				return 0, err
			}
			published = nil
		case <-time.After(timeout):
			return 0, fmt.Errorf("no delivery for %v (%d of %d acked)", timeout, acked, msgs)
		}
	}
	return float64(msgs) / time.Since(start).Seconds(), nil
}

// measureCC times one publish whose CC header holds o.ccKeys routing keys
// over o.ccBinds topic bindings, each to a queue of its own (the median
// of o.repeat).
func measureCC(t target, o options) (time.Duration, error) {
	s, err := t.open()
	if err != nil {
		return 0, err
	}
	defer s.close()
	x := s.prefix + "x"
	if err := s.sch.ExchangeDeclare(x, "topic", false, true, false, false, nil); err != nil {
		return 0, err
	}
	for i := range o.ccBinds {
		q := fmt.Sprintf("%sq%d", s.prefix, i)
		if _, err := s.sch.QueueDeclare(q, false, false, true, true, nil); err != nil {
			return 0, err
		}
		if err := s.sch.QueueBind(q, fmt.Sprintf("k%d.*", i), x, true, nil); err != nil {
			return 0, err
		}
	}
	if err := s.sync(); err != nil {
		return 0, err
	}
	cc := make([]any, o.ccKeys)
	for i := range cc {
		cc[i] = fmt.Sprintf("k%d.x", i%o.ccBinds)
	}
	var took []time.Duration
	for range o.repeat {
		start := time.Now()
		if err := s.publish(1, x, func(int) string { return "none" }, amqp.Table{"CC": cc}); err != nil {
			return 0, err
		}
		took = append(took, time.Since(start))
	}
	return medianDuration(took), nil
}

func medianDuration(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	return ds[len(ds)/2]
}
