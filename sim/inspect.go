package sim

import (
	"fmt"
	"slices"
	"strings"
)

// QueueStats returns a queue's counts as RabbitMQ's management API shows
// them.
func (b *Broker) QueueStats(vhost, name string) (QueueStats, error) {
	b.mu.Lock()
	defer b.mu.unlockView()
	v, err := b.lookupVhost(vhost)
	if err != nil {
		return QueueStats{}, err
	}
	q, ok := v.queues[name]
	if !ok {
		return QueueStats{}, fmt.Errorf("%w %q in vhost %q", ErrNoQueue, name, vhost)
	}
	return queueStats(q), nil
}

// Queues returns every queue's stats, sorted by vhost and name.
func (b *Broker) Queues() []QueueStats {
	b.mu.Lock()
	defer b.mu.unlockView()
	var out []QueueStats
	for _, v := range b.vhosts {
		for _, q := range v.queues {
			out = append(out, queueStats(q))
		}
	}
	slices.SortFunc(out, func(a, c QueueStats) int {
		if a.Vhost != c.Vhost {
			return strings.Compare(a.Vhost, c.Vhost)
		}
		return strings.Compare(a.Name, c.Name)
	})
	return out
}

func queueStats(q *brokerQueue) QueueStats {
	qs := q.Stats()
	st := QueueStats{Vhost: q.Vhost(), Name: q.Name(), Ready: q.Ready(), Unacked: q.Unacked(), Consumers: qs.Consumers, Bytes: q.ReadyBytes(),
		TimedOut: qs.TimedOut}
	if ss := qs.Stream; ss != nil {
		st.Stream = &StreamStats{FirstOffset: ss.FirstOffset, NextOffset: ss.NextOffset, Messages: ss.Messages,
			Segments: ss.Segments, Bytes: ss.Bytes}
	}
	return st
}

// QueueMessages returns a queue's ready messages in the order consumers
// would get them.
func (b *Broker) QueueMessages(vhost, name string) ([]Message, error) {
	b.mu.Lock()
	defer b.mu.unlockView()
	v, err := b.lookupVhost(vhost)
	if err != nil {
		return nil, err
	}
	q, ok := v.queues[name]
	if !ok {
		return nil, fmt.Errorf("%w %q in vhost %q", ErrNoQueue, name, vhost)
	}
	var out []Message
	for _, m := range q.Messages() {
		out = append(out, makeDelivery("", 0, false, q.Name(), m).Message)
	}
	return out, nil
}

// Stats returns the channel's delivery state and its consumers' windows in
// creation order.
func (ch *Channel) Stats() ChannelStats {
	ch.b.mu.Lock()
	defer ch.b.mu.unlockView()
	limit, volume := ch.core.GlobalLimit()
	s := ChannelStats{
		Channel: ch.id, Prefetch: ch.core.Prefetch(), GlobalLimit: limit, GlobalVolume: volume,
		Unacked: ch.core.Unacked(), NextTag: ch.core.LastTag() + 1,
		Confirming: ch.confirming, LastPublishTag: ch.publishTag, Transactional: ch.tx != nil,
	}
	for _, cs := range ch.order {
		if !cs.cancelled {
			s.Consumers = append(s.Consumers, cs.stats())
		}
	}
	return s
}
