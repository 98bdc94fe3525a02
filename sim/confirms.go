package sim

import (
	"slices"

	"github.com/amqpsim/amqpsim/protocol"
)

// confirmStage is when RabbitMQ confirms a publish, by the queues that
// took it. Measured on 3.10.8 with raw frames, every publish of a run in
// one write on a confirm-mode channel (4.0.5 and 4.3.6 alike):
//
//   - to no queue (5 unroutable: "ack 1", ..., "ack 5", each without
//     multiple, also 50 in one write): the channel confirms the publish
//     itself as it handles it (rabbit_channel:process_routing_confirm
//     with no queues, then noreply's send_confirms_and_nacks), alone;
//   - to classic queues, transient: the queue confirms on enqueue and the
//     channel sends what is ready when its mailbox runs empty
//     (noreply_coalesce): 5 in one write gave "ack 5 multiple", or a few
//     groups, as the queue's replies happened to arrive;
//   - to a quorum queue or a stream (after consensus), or persistent to a
//     durable classic queue (after the disk write): a millisecond or more
//     later, after the others of the write. Quorum, unroutable, quorum,
//     unroutable, unroutable gave "ack 2", "ack 4", "ack 5" at once and
//     "ack 3 multiple" 1 ms later (later tags acked before earlier ones);
//     classic, persistent-durable, classic, persistent-durable gave "ack 1
//     multiple", "ack 3", then "ack 4 multiple"; classic, classic,
//     unroutable gave "ack 3", then "ack 2 multiple".
//
// amqpsim keeps the order and drops the timing: confirmAtOnce is pushed
// during the publish; at Idle (the end of a socket read) every channel
// sends its confirmQueued tags, coalesced against its confirmLate ones,
// which are still unconfirmed, then every channel its confirmLate tags;
// then the deliveries the read caused follow (a quorum queue's ack came
// before its delivery in every run). Where RabbitMQ's grouping depends on
// when replies arrived (classic confirms one by one or together), amqpsim
// takes them together.
type confirmStage uint8

const (
	confirmAtOnce confirmStage = iota
	confirmQueued
	confirmLate
)

// confirmStage is when the queue confirms a message it took (persistent
// when its delivery mode is 2).
func (q *brokerQueue) confirmStage(persistent bool) confirmStage {
	if q.caps.ConfirmsLate(persistent) {
		return confirmLate
	}
	return confirmQueued
}

// confirms are a confirm-mode channel's publish tags that its queues have
// confirmed (or refused) and the channel has not yet sent, by stage: sent
// when the connection is idle, as RabbitMQ's channel sends them when its
// mailbox runs empty.
type confirms struct {
	acked, nacked         []uint64 // confirmQueued
	lateAcked, lateNacked []uint64 // confirmLate
}

// confirm records a publish: acked, or nacked when a queue refused it;
// late for confirmLate.
func (c *confirms) confirm(tag uint64, nack, late bool) {
	switch {
	case late && nack:
		c.lateNacked = append(c.lateNacked, tag)
	case late:
		c.lateAcked = append(c.lateAcked, tag)
	case nack:
		c.nacked = append(c.nacked, tag)
	default:
		c.acked = append(c.acked, tag)
	}
}

// sendQueued sends the confirmQueued tags; the confirmLate ones are the
// channel's unconfirmed publishes, which cut the coalescing.
func (c *confirms) sendQueued(ch *Channel) {
	pushConfirms(ch, c.acked, c.nacked, smallest(c.lateAcked, c.lateNacked, ch.holding))
	c.acked, c.nacked = c.acked[:0], c.nacked[:0]
}

// sendLate sends the confirmLate tags, nothing else left unconfirmed
// but what a cluster holds.
// The publishes a cluster holds for a leader out of reach
// (Channel.holding) are still unconfirmed.
func (c *confirms) sendLate(ch *Channel) {
	pushConfirms(ch, c.lateAcked, c.lateNacked, smallest(ch.holding))
	c.lateAcked, c.lateNacked = c.lateAcked[:0], c.lateNacked[:0]
}

// pushConfirms pushes acked and nacked as rabbit_channel:send_confirms_and_nacks
// does: one basic.ack without multiple for a lone tag; otherwise the tags
// below the first nacked or unconfirmed one (unconfirmed, when not 0, is
// the smallest) in one basic.ack with multiple, the others one by one;
// then the nacks the same way, the acked tags cutting them.
func pushConfirms(ch *Channel, acked, nacked []uint64, unconfirmed uint64) {
	switch len(acked) {
	case 0:
	case 1:
		ch.push(Push{Method: protocol.BasicAck, Delivery: Delivery{DeliveryTag: acked[0]}})
	default:
		coalesce(ch, protocol.BasicAck, acked, nacked, unconfirmed)
	}
	if len(nacked) > 0 {
		coalesce(ch, protocol.BasicNack, nacked, acked, unconfirmed)
	}
}

// smallest returns the smallest tag of the lists, 0 for none.
func smallest(lists ...[]uint64) uint64 {
	var out uint64
	for _, tags := range lists {
		if len(tags) > 0 && (out == 0 || slices.Min(tags) < out) {
			out = slices.Min(tags)
		}
	}
	return out
}

// coalesce is rabbit_channel:coalesce_and_send; unconfirmed is the
// smallest tag the channel has not confirmed, 0 for none.
func coalesce(ch *Channel, m protocol.Method, tags, negative []uint64, unconfirmed uint64) {
	slices.Sort(tags)
	cutoff := tags[len(tags)-1] + 1
	if unconfirmed != 0 {
		cutoff = unconfirmed
	}
	for _, n := range negative {
		cutoff = min(cutoff, n)
	}
	i := 0
	for i < len(tags) && tags[i] < cutoff {
		i++
	}
	if i > 0 {
		ch.push(Push{Method: m, Multiple: true, Delivery: Delivery{DeliveryTag: tags[i-1]}})
	}
	for _, t := range tags[i:] {
		ch.push(Push{Method: m, Delivery: Delivery{DeliveryTag: t}})
	}
}

// Idle tells the broker that the client's frames received so far have all
// been applied: its channels' mailboxes ran empty. They send the publisher
// confirms they hold, and then what their queues pushed in reaction to
// those frames. A shell that sets ShellOptions.Batched calls it whenever
// its reader has nothing more buffered, so that the publishes of one read
// are confirmed together, and a delivery that an ack released reaches the
// client after the channel's replies to the frames read with that ack, as
// RabbitMQ sends them; without Batched every call ends idle.
func (c *Connection) Idle() {
	c.b.mu.Lock()
	defer c.b.mu.Unlock()
	c.idle()
}

// endCall ends a client's method call: unless the connection is batched,
// it is idle.
func (c *Connection) endCall() {
	if !c.opts.Shell.Batched {
		c.idle()
	}
}

func (c *Connection) idle() {
	if c.pendingConfirms > 0 {
		c.sendConfirms()
	}
	c.out.endCall()
}

// sendConfirms sends every channel's ready publisher confirms: first every
// channel's confirmQueued ones, then every channel's confirmLate ones.
func (c *Connection) sendConfirms() {
	c.pendingConfirms = 0
	open := c.confirmingOrder[:0]
	for _, ch := range c.confirmingOrder {
		if ch.closed != nil { // a closing channel sends no confirms
			continue
		}
		open = append(open, ch)
		if len(ch.ready.acked)+len(ch.ready.nacked) > 0 {
			ch.ready.sendQueued(ch)
		}
	}
	clear(c.confirmingOrder[len(open):])
	c.confirmingOrder = open
	for _, ch := range open {
		if len(ch.ready.lateAcked)+len(ch.ready.lateNacked) > 0 {
			ch.ready.sendLate(ch)
		}
	}
}
