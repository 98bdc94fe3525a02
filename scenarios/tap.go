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

// reader reads AMQP fields from a method frame; a short frame leaves the
// remaining fields zero.
type reader struct{ b []byte }

func (r *reader) u8() uint8 {
	if len(r.b) < 1 {
		return 0
	}
	v := r.b[0]
	r.b = r.b[1:]
	return v
}

func (r *reader) u16() uint16 {
	if len(r.b) < 2 {
		r.b = nil
		return 0
	}
	v := binary.BigEndian.Uint16(r.b)
	r.b = r.b[2:]
	return v
}

func (r *reader) u64() uint64 {
	if len(r.b) < 8 {
		r.b = nil
		return 0
	}
	v := binary.BigEndian.Uint64(r.b)
	r.b = r.b[8:]
	return v
}

func (r *reader) shortstr() string {
	n := int(r.u8())
	if len(r.b) < n {
		r.b = nil
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

func (t *tap) frame(typ uint8, ch uint16, payload []byte) {
	switch typ {
	case 1:
		r := &reader{b: payload}
		m := protocol.Method{Class: r.u16(), ID: r.u16()}
		t.method(ch, m, r)
	case 2:
		p := t.content[ch]
		if p == nil {
			return
		}
		r := &reader{b: payload}
		r.u16() // class
		r.u16() // weight
		p.size, p.got = r.u64(), true
		if p.keep {
			if h, err := wire.DecodeHeader(payload); err == nil {
				p.e.headers = h.Properties.Headers
			}
		}
		t.maybeDone(ch, p)
	case 3:
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

func (t *tap) method(ch uint16, m protocol.Method, r *reader) {
	e := event{conn: t.conn}
	switch m {
	case protocol.ChannelOpenOk:
		t.lastOpened = ch
		return
	case protocol.ConnectionClose, protocol.ChannelClose:
		e.kind = evChannelClose
		if m == protocol.ConnectionClose {
			e.kind = evConnClose
		}
		e.code = int(r.u16())
		e.text = r.shortstr()
		e.method = protocol.Method{Class: r.u16(), ID: r.u16()}.String()
	case protocol.BasicDeliver:
		e.kind, e.ctag, e.tag = evDeliver, r.shortstr(), r.u64()
		e.redelivered = r.u8()&1 != 0
		e.exchange, e.key = r.shortstr(), r.shortstr()
		t.content[ch] = &pendingC{e: e, keep: true}
		return
	case protocol.BasicReturn:
		e.kind, e.code, e.text = evReturn, int(r.u16()), r.shortstr()
		e.exchange, e.key = r.shortstr(), r.shortstr()
		t.content[ch] = &pendingC{e: e, keep: true}
		return
	case protocol.BasicGetOk:
		t.content[ch] = &pendingC{}
		return
	case protocol.BasicAck, protocol.BasicNack:
		e.kind, e.tag = evConfirm, r.u64()
		bits := r.u8()
		e.multiple, e.nack = bits&1 != 0, m == protocol.BasicNack
	case protocol.BasicCancel:
		e.kind, e.ctag = evCancel, r.shortstr()
	default:
		return
	}
	t.sink(e, ch)
}
