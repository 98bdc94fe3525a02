package scenarios

import (
	"encoding/binary"
	"net"
	"sync"
	"time"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/wire"
)

// tapConn is a net.Conn that decodes, as the client reads them, the frames
// a broker sends: basic.deliver and basic.return with their bodies and
// headers, publisher confirms, basic.cancel, channel.close and
// connection.close. The client library (amqp091-go) sees the same bytes
// unchanged. Observing the wire rather than the library's notification
// channels keeps the frames' order and their fields (the failing method's
// class and id in a close, which amqp091-go drops) and avoids its delivery
// buffers.
type tapConn struct {
	net.Conn
	t *tap
}

func (c *tapConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.t.feed(b[:n])
	}
	return n, err
}

// tap decodes one connection's incoming frames into events.
type tap struct {
	conn string
	// sink receives each decoded event with the frame's channel number; it
	// is called on the client's reader goroutine.
	sink func(e event, channel uint16)
	// activity is called for every frame but heartbeats.
	activity func(time.Time)

	mu         sync.Mutex
	buf        []byte
	lastOpened uint16               // channel of the latest channel.open-ok
	content    map[uint16]*pendingC // per channel: a content method awaiting its body
}

type pendingC struct {
	e    event
	keep bool // deliver or return (get-ok content is dropped)
	size uint64
	body []byte
	got  bool // header seen
}

func newTap(conn string, sink func(event, uint16), activity func(time.Time)) *tap {
	return &tap{conn: conn, sink: sink, activity: activity, content: map[uint16]*pendingC{}}
}

// opened returns the channel number of the last channel.open-ok.
func (t *tap) opened() uint16 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.lastOpened
}

func (t *tap) feed(b []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	for len(t.buf) >= 8 {
		typ := t.buf[0]
		ch := binary.BigEndian.Uint16(t.buf[1:3])
		size := int(binary.BigEndian.Uint32(t.buf[3:7]))
		if len(t.buf) < 7+size+1 {
			return
		}
		payload := t.buf[7 : 7+size]
		if typ != 8 && t.activity != nil {
			t.activity(time.Now())
		}
		t.frame(typ, ch, payload)
		t.buf = t.buf[7+size+1:]
	}
}

func (t *tap) frame(typ uint8, ch uint16, payload []byte) {
	switch wire.FrameType(typ) {
	case wire.FrameMethod:
		// A method the codec cannot decode is not one the tap observes.
		if m, err := wire.DecodeMethod(payload); err == nil {
			t.method(ch, m)
		}
	case wire.FrameHeader:
		p := t.content[ch]
		if p == nil {
			return
		}
		h, err := wire.DecodeHeader(payload)
		if err != nil {
			return
		}
		p.size, p.got = h.BodySize, true
		if p.keep {
			p.e.headers = h.Properties.Headers
		}
		t.maybeDone(ch, p)
	case wire.FrameBody:
		p := t.content[ch]
		if p == nil {
			return
		}
		p.body = append(p.body, payload...)
		t.maybeDone(ch, p)
	}
}

func (t *tap) maybeDone(ch uint16, p *pendingC) {
	if !p.got || uint64(len(p.body)) < p.size {
		return
	}
	delete(t.content, ch)
	if p.keep {
		p.e.body = string(p.body)
		t.sink(p.e, ch)
	}
}

func (t *tap) method(ch uint16, m wire.Method) {
	e := event{conn: t.conn}
	switch m := m.(type) {
	case *wire.ChannelOpenOk:
		t.lastOpened = ch
		return
	case *wire.ConnectionClose:
		e.kind, e.code, e.text = evConnClose, int(m.ReplyCode), m.ReplyText
		e.method = protocol.Method{Class: m.ClassID, ID: m.MethodID}.String()
	case *wire.ChannelClose:
		e.kind, e.code, e.text = evChannelClose, int(m.ReplyCode), m.ReplyText
		e.method = protocol.Method{Class: m.ClassID, ID: m.MethodID}.String()
	case *wire.BasicDeliver:
		e.kind, e.ctag, e.tag, e.redelivered = evDeliver, m.ConsumerTag, m.DeliveryTag, m.Redelivered
		e.exchange, e.key = m.Exchange, m.RoutingKey
		t.content[ch] = &pendingC{e: e, keep: true}
		return
	case *wire.BasicReturn:
		e.kind, e.code, e.text = evReturn, int(m.ReplyCode), m.ReplyText
		e.exchange, e.key = m.Exchange, m.RoutingKey
		t.content[ch] = &pendingC{e: e, keep: true}
		return
	case *wire.BasicGetOk:
		t.content[ch] = &pendingC{}
		return
	case *wire.BasicAck:
		e.kind, e.tag, e.multiple = evConfirm, m.DeliveryTag, m.Multiple
	case *wire.BasicNack:
		e.kind, e.tag, e.multiple, e.nack = evConfirm, m.DeliveryTag, m.Multiple, true
	case *wire.BasicCancel:
		e.kind, e.ctag = evCancel, m.ConsumerTag
	case *wire.ConnectionBlocked:
		e.kind, e.text = evBlocked, m.Reason
	case *wire.ConnectionUnblocked:
		e.kind = evUnblocked
	default:
		return
	}
	t.sink(e, ch)
}
