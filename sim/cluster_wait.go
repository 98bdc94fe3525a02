package sim

import (
	"slices"
	"time"

	"github.com/amqpsim/amqpsim/cluster"
)

// Calls a channel waits in on a cluster. RabbitMQ's channel process makes
// some calls to other nodes synchronously; while one waits, the frames the
// client sends on the channel wait in the process's mailbox, and are
// applied in order once the call returns (mailbox.go).

// channelWait is the call a channel is in.
type channelWait struct {
	timer *timer
	// ends, when not nil, ends the wait early: at a change of the
	// cluster after which it holds.
	ends func() bool
	// reached runs when ends ended the wait.
	reached func()
	// answer is the call the wait answers when it ends (errAnswerLater):
	// its reply is pushed then.
	answer *call
}

// wait makes the channel wait in a call until d has passed, when timeout
// runs (it may close the channel), or, when ends is not nil, until a
// change of the cluster after which ends holds; the wait's reached, when
// the caller sets it, runs then. Either way the channel then resumes: it
// answers the call, and takes the methods queued meanwhile.
func (ch *Channel) wait(d time.Duration, ends func() bool, timeout func()) *channelWait {
	w := &channelWait{ends: ends}
	w.timer = newTimer(func() {
		if ch.waiting != w {
			return
		}
		ch.waiting = nil
		if ch.closed == nil && ch.conn.closed == nil {
			timeout()
		}
		ch.resumeFrom(w)
	})
	ch.waiting = w
	ch.b.schedule(w.timer, ch.b.now.Add(d))
	return w
}

// resumeFrom ends wait w, which the channel was in: the call it answers
// gets its reply, and the mailbox runs at the end of the broker's step.
func (ch *Channel) resumeFrom(w *channelWait) {
	if w.answer != nil && ch.closed == nil {
		ch.sendReply(w.answer, true)
	}
	ch.resume()
}

// endWaits ends the waits of the channels whose call the cluster now
// answers, after a change of its nodes or a leader's election.
func (b *Broker) endWaits() {
	for _, c := range b.conns {
		for _, ch := range c.channelsByID() {
			w := ch.waiting
			if w == nil || w.ends == nil || !w.ends() {
				continue
			}
			b.stop(w.timer)
			ch.waiting = nil
			if w.reached != nil {
				w.reached()
			}
			ch.resumeFrom(w)
		}
	}
}

const (
	// EnqueuerRegistrationTimeout is how long a channel's first publish
	// to a quorum queue whose leader is out of its node's reach blocks
	// the channel (measured on 4.3.6: 56-76 s,
	// partition-held-register-timeout.txt): the channel registers as
	// the queue's enqueuer with a call to the leader. At the timeout the
	// publish is nacked and dropped, and the channel goes on; when the
	// leader answers first, the publish is enqueued and confirmed.
	EnqueuerRegistrationTimeout = 65 * time.Second
	// QuorumDeleteTimeout is how long queue.delete of a quorum queue
	// waits for a member out of the leader's reach, cut off, stopped or
	// crashed, before it is answered (RabbitMQ's ?DELETE_TIMEOUT; measured
	// on 4.3.6: 4.5-5.6 s, partition-quorum-delete-member-cut.txt; over 1
	// s and at most 8 s, quorum-delete-member-stopped.txt and -killed.txt).
	// The queue is gone at once.
	QuorumDeleteTimeout = 5 * time.Second
)

// registerEnqueuer blocks the publishing channel on its first publish to
// quorum queue q while q's leader is out of its node's reach
// (EnqueuerRegistrationTimeout). A channel that has published to q before
// is not blocked (partition-held-registered-not-blocked.txt): its
// publishes are only held.
func (b *Broker) registerEnqueuer(q *brokerQueue, reached bool) {
	ch := b.publisher
	if ch == nil || ch.tx != nil || !q.caps.RegistersEnqueuers || ch.enqueuer[q] {
		return
	}
	if reached {
		ch.registered(q)
		return
	}
	w := ch.wait(EnqueuerRegistrationTimeout,
		func() bool { return q.deleted || b.reach(q, ch.conn.node) == cluster.Reachable },
		func() { b.dropHeldOf(q, ch) })
	w.reached = func() { ch.registered(q) }
}

// registered records that q knows the channel as an enqueuer.
func (ch *Channel) registered(q *brokerQueue) {
	if ch.enqueuer == nil {
		ch.enqueuer = map[*brokerQueue]bool{}
	}
	ch.enqueuer[q] = true
}

// dropHeldOf nacks and forgets the publishes of channel ch held for q.
func (b *Broker) dropHeldOf(q *brokerQueue, ch *Channel) {
	cq := &q.cluster
	cq.held = slices.DeleteFunc(cq.held, func(h waitingPublish) bool {
		if h.ch != ch {
			return false
		}
		h.confirm.done(true)
		return true
	})
}

// waitForMembers makes queue.delete of replicated queue q, already
// deleted, answer late when a member is out of its leader's reach: after
// QuorumDeleteTimeout, or once every member answers again, with the count
// of ready messages it had (rabbit_quorum_queue:delete/4's {ok,
// ReadyMsgs}; measured on 4.3.6, docs/cluster.md).
func (ch *Channel) waitForMembers(q *brokerQueue) error {
	b := ch.b
	reached := func() bool { return b.topo.MembersReached(q.cluster.Leader) }
	if !b.clustered() || !q.caps.DeleteWaitsForMembers || reached() {
		return nil
	}
	ch.wait(QuorumDeleteTimeout, reached, func() {})
	return errAnswerLater
}
