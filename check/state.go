package check

import (
	"time"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// state is what Lint learns from one pass over a trace.
type state struct {
	chans    []*chanState // every channel, in the order it opened
	open     map[chanKey]*chanState
	msgs     map[uint64]*msgState
	msgOrder []uint64
	dlx      map[string]bool // queue → known to have a dead-letter exchange
	rejected []at            // rejected and dropped
	closes   []closeInfo
}

type chanKey struct {
	conn string
	id   uint16
}

type chanState struct {
	conn     string
	id       uint16
	prefetch int // per-consumer prefetch for consumers created now
	global   int // channel-wide limit, 0 none
	confirm  bool
	tx       bool
	closed   bool

	qosCalls             []qosCall
	consumers            []*cons
	gets                 []at
	lastGetNoAck         bool
	unacked              []udel
	oldest               []aged
	unconfirmedPublishes []int
}

type qosCall struct {
	at     int
	count  int
	global bool // as the broker applied it
	// denied: the client sent global=true and the release, denying
	// global_qos (4.3), applied it per consumer.
	denied bool
}

type cons struct {
	at       int
	tag      string
	queue    string
	noAck    bool
	prefetch int
	globalAt int // the channel-wide limit when it was created
	reply    bool
}

type at struct {
	at    int
	queue string
}

type udel struct {
	at          int
	tag         uint64
	ctag        string
	deliveredAt time.Duration
	// timedOut: a 4.3 quorum queue's consumer timeout took it back
	// (the basic.cancel that said so); the channel still holds its tag.
	timedOut bool
}

type aged struct {
	at   int
	ctag string
	age  time.Duration
	// timedOut: the consumer timeout closed the channel holding it, or a
	// 4.3 quorum queue's took it back and cancelled its consumer.
	timedOut bool
}

type msgState struct {
	queue        string
	body         string
	redeliveries []int
}

type closeInfo struct {
	conn    string
	channel uint16
	at      int
	unacked int
}

// replay walks the trace once.
func replay(trace []sim.Event) *state {
	st := &state{open: map[chanKey]*chanState{}, msgs: map[uint64]*msgState{}, dlx: map[string]bool{}}
	var end time.Duration
	labels := sim.ConnLabels(trace)
	for i, e := range trace {
		end = e.At
		e.Conn = labels[i] // a reconnect's "-2", as reports name it
		ch := st.open[chanKey{e.Conn, e.Channel}]
		switch e.Kind {
		case sim.EventChannelOpen:
			ch := &chanState{conn: e.Conn, id: e.Channel}
			st.open[chanKey{e.Conn, e.Channel}] = ch
			st.chans = append(st.chans, ch)
		case sim.EventCall:
			if ch != nil {
				st.call(ch, i, e)
			}
		case sim.EventPush:
			if ch != nil {
				st.push(ch, i, e)
			}
		case sim.EventSettle:
			if ch != nil {
				ch.settle(e)
			}
		case sim.EventDeadLetter:
			if !e.Dropped {
				st.dlx[e.Queue] = true // by argument or by policy
			} else if e.Reason == "rejected" {
				st.rejected = append(st.rejected, at{i, e.Queue})
			}
		case sim.EventChannelClose:
			if ch != nil {
				st.close(ch, i, e.At, e.Reason == sim.ReasonConsumerTimeout)
			}
		case sim.EventConnectionClose:
			for k, ch := range st.open {
				if k.conn == e.Conn {
					st.close(ch, i, e.At, false)
				}
			}
		}
	}
	for _, ch := range st.chans {
		if !ch.closed { // still held when the trace ends
			for _, d := range ch.unacked {
				ch.oldest = append(ch.oldest, aged{d.at, d.ctag, end - d.deliveredAt, d.timedOut})
			}
		}
	}
	return st
}

func (st *state) call(ch *chanState, i int, e sim.Event) {
	switch e.Method {
	case protocol.BasicQos:
		// What the broker did: a release that denies global_qos (4.3)
		// applies global=true per consumer, and the trace says so.
		global := e.Global && !e.GlobalDenied
		ch.qosCalls = append(ch.qosCalls, qosCall{i, e.Count, global, e.GlobalDenied})
		if global {
			ch.global = e.Count
		} else {
			ch.prefetch, ch.global = e.Count, 0
		}
	case protocol.BasicConsume:
		c := &cons{at: i, tag: e.ConsumerTag, queue: e.Queue, noAck: e.NoAck, globalAt: ch.global, reply: e.Queue == sim.ReplyTo}
		if !c.noAck {
			c.prefetch = ch.prefetch
		}
		ch.consumers = append(ch.consumers, c)
	case protocol.BasicGet:
		ch.gets = append(ch.gets, at{i, e.Queue})
		ch.lastGetNoAck = e.NoAck
	case protocol.BasicPublish:
		if !ch.confirm && !ch.tx {
			ch.unconfirmedPublishes = append(ch.unconfirmedPublishes, i)
		}
	case protocol.ConfirmSelect:
		ch.confirm = true
	case protocol.TxSelect:
		ch.tx = true
	case protocol.QueueDeclare:
		if o, ok := e.Options.(sim.QueueOptions); ok {
			if _, has := o.Args["x-dead-letter-exchange"]; has {
				st.dlx[e.Queue] = true
			}
		}
	case protocol.ChannelClose:
		st.close(ch, i, e.At, false)
	}
}

func (st *state) push(ch *chanState, i int, e sim.Event) {
	switch e.Method {
	case protocol.BasicDeliver:
		m := st.msg(e)
		if e.Redelivered {
			m.redeliveries = append(m.redeliveries, i)
		}
		if c := ch.consumer(e.ConsumerTag); c != nil && !c.noAck {
			ch.unacked = append(ch.unacked, udel{i, e.DeliveryTag, e.ConsumerTag, e.At, false})
		}
	case protocol.BasicGetOk:
		m := st.msg(e)
		if e.Redelivered {
			m.redeliveries = append(m.redeliveries, i)
		}
		if !ch.lastGetNoAck {
			ch.unacked = append(ch.unacked, udel{i, e.DeliveryTag, "", e.At, false})
		}
	case protocol.BasicCancel:
		if e.Reason == sim.ReasonConsumerTimeout {
			ch.timedOut(e.ConsumerTag, e.Count)
		}
	}
}

// timedOut marks the n deliveries a 4.3 quorum queue's consumer timeout
// took back from consumer ctag: its oldest ones not taken back before, as
// the queue takes each consumer's back in the order they were delivered,
// at the same timeout after their delivery.
func (ch *chanState) timedOut(ctag string, n int) {
	for j := range ch.unacked {
		if n == 0 {
			return
		}
		if d := &ch.unacked[j]; d.ctag == ctag && !d.timedOut {
			d.timedOut = true
			n--
		}
	}
}

func (st *state) msg(e sim.Event) *msgState {
	m := st.msgs[e.MessageID]
	if m == nil {
		m = &msgState{queue: e.Queue, body: string(e.Body)}
		st.msgs[e.MessageID] = m
		st.msgOrder = append(st.msgOrder, e.MessageID)
	}
	return m
}

// consumer finds the channel's consumer with tag; a consumer whose tag the
// broker chose is known by its first delivery.
func (ch *chanState) consumer(tag string) *cons {
	for _, c := range ch.consumers {
		if c.tag == tag {
			return c
		}
	}
	for _, c := range ch.consumers {
		if c.tag == "" {
			c.tag = tag
			return c
		}
	}
	return nil
}

func (ch *chanState) settle(e sim.Event) {
	for j, d := range ch.unacked {
		if d.tag == e.DeliveryTag {
			ch.oldest = append(ch.oldest, aged{d.at, d.ctag, e.At - d.deliveredAt, d.timedOut})
			ch.unacked = append(ch.unacked[:j], ch.unacked[j+1:]...)
			return
		}
	}
}

// close records a channel's close at event i, time now: what it held, and
// for how long; timedOut says the consumer timeout closed it.
func (st *state) close(ch *chanState, i int, now time.Duration, timedOut bool) {
	if ch.closed {
		return
	}
	ch.closed = true
	for _, d := range ch.unacked {
		ch.oldest = append(ch.oldest, aged{d.at, d.ctag, now - d.deliveredAt, timedOut || d.timedOut})
	}
	st.closes = append(st.closes, closeInfo{ch.conn, ch.id, i, len(ch.unacked)})
	delete(st.open, chanKey{ch.conn, ch.id})
}
