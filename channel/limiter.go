package channel

import "github.com/amqpsim/amqpsim/consumer"

// Limiter is RabbitMQ's channel-wide limiter (rabbit_limiter): a limit on the
// channel's volume of ack-mode consumer deliveries.
//
// The volume is not simply the number of unacked deliveries. When the limit
// is switched on from 0 the volume starts at the channel's unacked count,
// basic.get deliveries included; afterwards only ack-mode consumer deliveries
// raise it and only their settlements lower it, so get deliveries counted at
// the start are never released. A volume of 0 is never lowered, and RabbitMQ
// does not clamp at 0 otherwise either.
type Limiter struct {
	Limit  int // 0: no channel-wide limit
	Volume int

	refused []*consumer.Group // groups refused since the last release, in order
}

// Active reports whether a channel-wide limit is set.
func (l *Limiter) Active() bool { return l.Limit != 0 }

func (l *Limiter) reached() bool { return l.Limit != 0 && l.Volume >= l.Limit }

// Allow is the limiter's can_send: it refuses while the volume has reached
// the limit, remembering the group to resume later; otherwise it counts an
// ack-mode delivery.
func (l *Limiter) Allow(g *consumer.Group, ackRequired bool) bool {
	if l.Limit == 0 {
		return true
	}
	if l.Volume >= l.Limit {
		// Mark the group suspended, as RabbitMQ's queue marks the channel's
		// limiter state: the rotation then blocks every consumer of the
		// group when its turn comes, and Rotation.Resume (which does nothing
		// for a group that is not suspended) brings them back on release.
		// Without this flag a released group stayed blocked for good.
		g.Suspended = true
		for _, r := range l.refused {
			if r == g {
				return false
			}
		}
		l.refused = append(l.refused, g)
		return false
	}
	if ackRequired {
		l.Volume++
	}
	return true
}

// set changes the limit: from 0 the volume starts at unacked, otherwise it
// is kept; a limit of 0 clears it. It returns the groups to resume if the
// limit is no longer reached.
func (l *Limiter) set(limit, unacked int) []*consumer.Group {
	was := l.reached()
	switch {
	case limit == 0:
		l.Limit, l.Volume = 0, 0
	case l.Limit == 0:
		l.Limit, l.Volume = limit, unacked
	default:
		l.Limit = limit
	}
	return l.maybeRelease(was)
}

func (l *Limiter) ack(n int) []*consumer.Group {
	was := l.reached()
	if l.Volume != 0 {
		l.Volume -= n
	}
	return l.maybeRelease(was)
}

func (l *Limiter) maybeRelease(was bool) []*consumer.Group {
	if !was || l.reached() {
		return nil
	}
	out := l.refused
	l.refused = nil
	return out
}

// Forget drops a group that no longer exists (its queue was deleted or its
// last consumer on this channel left).
func (l *Limiter) Forget(g *consumer.Group) {
	for i, r := range l.refused {
		if r == g {
			l.refused = append(l.refused[:i], l.refused[i+1:]...)
			return
		}
	}
}
