package channel

// limiter is RabbitMQ's channel-wide limiter (rabbit_limiter): a limit on
// the channel's volume of ack-mode consumer deliveries. Q identifies a
// queue the limiter refused and must tell when it has room again.
//
// The volume is not simply the number of unacked deliveries. When the limit
// is switched on from 0 the volume starts at the channel's unacked count,
// basic.get deliveries included; afterwards only ack-mode consumer deliveries
// raise it and only their settlements lower it, so get deliveries counted at
// the start are never released. A volume of 0 is never lowered, and RabbitMQ
// does not clamp at 0 otherwise either.
type limiter[Q comparable] struct {
	limit  int // 0: no channel-wide limit
	volume int

	refused []Q // queues refused since the last release, in order
}

func (l *limiter[Q]) reached() bool { return l.limit != 0 && l.volume >= l.limit }

// allow is the limiter's can_send: it refuses while the volume has reached
// the limit, remembering the queue to resume later (rabbit_limiter's
// notify set); otherwise it counts an ack-mode delivery.
func (l *limiter[Q]) allow(q Q, ackRequired bool) bool {
	if l.limit == 0 {
		return true
	}
	if l.volume >= l.limit {
		for _, r := range l.refused {
			if r == q {
				return false
			}
		}
		l.refused = append(l.refused, q)
		return false
	}
	if ackRequired {
		l.volume++
	}
	return true
}

// set changes the limit: from 0 the volume starts at unacked, otherwise it
// is kept; a limit of 0 clears it. It returns the queues to resume if the
// limit is no longer reached.
func (l *limiter[Q]) set(limit, unacked int) []Q {
	was := l.reached()
	switch {
	case limit == 0:
		l.limit, l.volume = 0, 0
	case l.limit == 0:
		l.limit, l.volume = limit, unacked
	default:
		l.limit = limit
	}
	return l.maybeRelease(was)
}

func (l *limiter[Q]) ack(n int) []Q {
	was := l.reached()
	if l.volume != 0 {
		l.volume -= n
	}
	return l.maybeRelease(was)
}

func (l *limiter[Q]) maybeRelease(was bool) []Q {
	if !was || l.reached() {
		return nil
	}
	out := l.refused
	l.refused = nil
	return out
}

func (l *limiter[Q]) forget(q Q) {
	for i, r := range l.refused {
		if r == q {
			l.refused = append(l.refused[:i], l.refused[i+1:]...)
			return
		}
	}
}
