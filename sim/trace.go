package sim

import (
	"fmt"
	"strings"
	"time"
)

// Event is one line of the broker's trace: a method a client called, a
// frame the broker pushed to a client (Kind starts with "->"), or a change
// the broker made on its own (queue deleted).
type Event struct {
	At      time.Duration // virtual time since the broker started
	Conn    string        // connection name; "" for broker-wide events
	Channel uint16
	Kind    string
	Detail  string
}

// String renders the event on one line, stable for golden files.
func (e Event) String() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s ", e.At)
	if e.Conn != "" {
		sb.WriteString(e.Conn)
		if e.Channel != 0 {
			fmt.Fprintf(&sb, "/%d", e.Channel)
		}
		sb.WriteByte(' ')
	}
	sb.WriteString(e.Kind)
	if e.Detail != "" {
		sb.WriteByte(' ')
		sb.WriteString(e.Detail)
	}
	return sb.String()
}

// Trace returns a copy of every event so far, in order.
func (b *Broker) Trace() []Event {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]Event(nil), b.trace...)
}

// event appends to the trace; caller holds the lock.
func (b *Broker) event(c *Connection, ch uint16, kind, format string, args ...any) {
	if b.cfg.NoTrace {
		return
	}
	e := Event{At: b.now.Sub(b.cfg.Start), Channel: ch, Kind: kind}
	if c != nil {
		e.Conn = c.name
	}
	if format != "" {
		e.Detail = fmt.Sprintf(format, args...)
	}
	b.trace = append(b.trace, e)
}

// tracePush records a push to a client; caller holds the lock.
func (b *Broker) tracePush(c *Connection, p Push) {
	if b.cfg.NoTrace {
		return
	}
	switch p := p.(type) {
	case Deliver:
		b.event(c, p.Channel, "-> basic.deliver", "ctag=%s tag=%d redelivered=%t key=%q body=%q", p.ConsumerTag, p.DeliveryTag, p.Redelivered, p.RoutingKey, p.Body)
	case Return:
		b.event(c, p.Channel, "-> basic.return", "%d %s exchange=%q key=%q body=%q", p.ReplyCode, p.ReplyText, p.Exchange, p.RoutingKey, p.Body)
	case Confirm:
		kind := "-> basic.ack"
		if p.Nack {
			kind = "-> basic.nack"
		}
		b.event(c, p.Channel, kind, "tag=%d multiple=%t", p.DeliveryTag, p.Multiple)
	case Cancel:
		b.event(c, p.Channel, "-> basic.cancel", "ctag=%s", p.ConsumerTag)
	case ChannelClose:
		b.event(c, p.Channel, "-> channel.close", "%d %s %s", p.Err.Code, p.Err.Text, p.Err.Method)
	case ConnectionClose:
		b.event(c, 0, "-> connection.close", "%d %s %s", p.Err.Code, p.Err.Text, p.Err.Method)
	}
}
