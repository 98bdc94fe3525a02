package check

import (
	"fmt"
	"time"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// MaxUnacked checks that no manual-ack consumer ever held more than n
// unsettled deliveries (its prefetch window, say).
func MaxUnacked(trace []sim.Event, n int) error {
	type key struct {
		conn string
		ch   uint16
		ctag string
	}
	held := map[key]int{}
	owner := map[key]map[uint64]string{} // (conn, channel) → tag → consumer
	chKey := func(e sim.Event) key { return key{e.Conn, e.Channel, ""} }
	// noAck has every consumer whose tag is known; a consumer whose tag
	// the broker chose waits in untagged (its channel's, in consume order)
	// until its first delivery names it, as Lint's replay does.
	noAck := map[key]bool{}
	untagged := map[key][]bool{}
	for i, e := range trace {
		switch {
		case e.Kind == sim.EventCall && e.Method == protocol.BasicConsume:
			if e.ConsumerTag == "" {
				untagged[chKey(e)] = append(untagged[chKey(e)], e.NoAck)
			} else {
				noAck[key{e.Conn, e.Channel, e.ConsumerTag}] = e.NoAck
			}
		case e.Kind == sim.EventPush && e.Method == protocol.BasicDeliver:
			k := key{e.Conn, e.Channel, e.ConsumerTag}
			if _, known := noAck[k]; !known {
				if u := untagged[chKey(e)]; len(u) > 0 {
					noAck[k], untagged[chKey(e)] = u[0], u[1:]
				}
			}
			if noAck[k] {
				continue
			}
			held[k]++
			if owner[chKey(e)] == nil {
				owner[chKey(e)] = map[uint64]string{}
			}
			owner[chKey(e)][e.DeliveryTag] = e.ConsumerTag
			if held[k] > n {
				return fmt.Errorf("event %d (%s): consumer %s holds %d unacked deliveries, more than %d", i, e, e.ConsumerTag, held[k], n)
			}
		case e.Kind == sim.EventSettle:
			if tag, ok := owner[chKey(e)][e.DeliveryTag]; ok {
				held[key{e.Conn, e.Channel, tag}]--
				delete(owner[chKey(e)], e.DeliveryTag)
			}
		case e.Kind == sim.EventChannelClose || e.Kind == sim.EventCall && e.Method == protocol.ChannelClose:
			for k := range held {
				if k.conn == e.Conn && k.ch == e.Channel {
					delete(held, k)
				}
			}
			delete(owner, chKey(e))
			delete(untagged, chKey(e))
		case e.Kind == sim.EventConnectionClose:
			for k := range held {
				if k.conn == e.Conn {
					delete(held, k)
				}
			}
			for k := range owner {
				if k.conn == e.Conn {
					delete(owner, k)
				}
			}
			for k := range untagged {
				if k.conn == e.Conn {
					delete(untagged, k)
				}
			}
		}
	}
	return nil
}

// AtMostDeliveries checks that no message was delivered (to a consumer or
// by basic.get) more than k times: a bound on how often a consumer may see
// the same message.
func AtMostDeliveries(trace []sim.Event, k int) error {
	n := map[uint64]int{}
	for i, e := range trace {
		if e.Kind == sim.EventPush && (e.Method == protocol.BasicDeliver || e.Method == protocol.BasicGetOk) {
			if n[e.MessageID]++; n[e.MessageID] > k {
				return fmt.Errorf("event %d (%s): message %q delivered %d times, more than %d", i, e, e.Body, n[e.MessageID], k)
			}
		}
	}
	return nil
}

// NoLoss checks that no message left the broker except by an ack or a
// no-ack delivery to a client: none was dropped (rejected, expired or
// pushed out by a length limit from a queue without a dead-letter
// exchange, or caught in a dead-letter cycle), discarded, or deleted with
// its queue (a restart deletes the non-durable ones, which it says).
// Messages still queued at the end are not lost. What the trace does not
// show as a loss is not checked: a publish the broker nacked (its
// publisher was told), and the transient messages a restart drops from a
// durable classic queue.
func NoLoss(trace []sim.Event) error {
	restarted := time.Duration(-1) // when the broker last restarted
	for i, e := range trace {
		switch e.Kind {
		case sim.EventRestart:
			restarted = e.At
		case sim.EventDeadLetter:
			if e.Dropped {
				return fmt.Errorf("event %d (%s): message %q dropped (%s) by a queue without a dead-letter exchange", i, e, e.Body, e.Reason)
			}
		case sim.EventDeadLetterCycle, sim.EventDiscarded:
			return fmt.Errorf("event %d (%s): message %q dropped", i, e, e.Body)
		case sim.EventQueueDeleted:
			if e.Count > 0 && e.At == restarted {
				return fmt.Errorf("event %d (%s): %d messages deleted with queue %s by the broker's restart, which deletes non-durable queues (declare it durable, and publish persistent messages)",
					i, e, e.Count, e.Queue)
			}
			if e.Count > 0 {
				return fmt.Errorf("event %d (%s): %d messages deleted with queue %s", i, e, e.Count, e.Queue)
			}
		}
	}
	return nil
}
