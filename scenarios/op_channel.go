package scenarios

import (
	"errors"
	"fmt"
	"strings"

	"github.com/amqpsim/amqpsim/protocol"
)

// OpenChannel opens a channel on a connection: "channel c1.ch1". Channel
// names are unique in a scenario; steps refer to the channel by Name.
type OpenChannel struct{ Conn, Name string }

func init() {
	register(&verb{name: "channel", usage: "channel CONN.NAME", minPos: 1, maxPos: 1, method: protocol.ChannelOpen,
		build: func(a *argSet) (Op, error) {
			c, n, ok := strings.Cut(a.str(0), ".")
			if !ok || c == "" || n == "" || a.pos[0].quoted {
				return nil, a.errAt(a.pos[0], "expected CONN.NAME (a connection and a new channel name), got %q", a.str(0))
			}
			return OpenChannel{Conn: c, Name: n}, nil
		}})
}

func (OpenChannel) isOp()   {}
func (OpenChannel) silent() {}

// String returns the OpenChannel step line.
func (o OpenChannel) String() string {
	return line("channel", word(o.Conn)+"."+word(o.Name))
}

func (o OpenChannel) checkNames(n *names) string {
	if !n.conns[o.Conn] {
		return fmt.Sprintf("unknown connection %q (open it first with \"conn %s\")", o.Conn, o.Conn)
	}
	if msg := n.fresh(o.Name, "channel"); msg != "" {
		return msg
	}
	n.chans[o.Name] = o.Conn
	return ""
}

// run opens the channel. One the client could not open, on a closed
// connection, is one the steps can still name: they are refused too.
func (o OpenChannel) run(r *runner, _ *rchan) ([]string, reply, error) {
	var out []string
	err := r.d.openChannel(o.Conn, o.Name)
	if err == nil {
		c := &rchan{conn: r.byConn[o.Conn], name: o.Name, pending: map[uint64]bool{}, lastTag: map[string]uint64{},
			latest: map[string]event{}}
		r.chans = append(r.chans, c)
		r.byChan[o.Name] = c
	} else if errors.Is(err, errRefused) {
		c := &rchan{conn: r.byConn[o.Conn], name: o.Name, closed: true, unopened: true, pending: map[uint64]bool{}, lastTag: map[string]uint64{},
			latest: map[string]event{}}
		r.chans = append(r.chans, c)
		r.byChan[o.Name] = c
		out = append(out, "! "+o.Conn+" is closed")
		err = nil
	}
	return out, reply{}, err
}

func (d *simDriver) openChannel(conn, name string) error {
	if d.conns[conn] == nil { // the broker refused the connection
		return errRefused
	}
	ch, err := d.conns[conn].Channel()
	if err != nil {
		return simErr(err)
	}
	d.chans[name] = ch
	d.chanOf[conn][ch.ID()] = name
	d.connOf[name] = conn
	return nil
}

func (d *amqpDriver) openChannel(conn, name string) error {
	c := d.conns[conn]
	if c == nil || c.IsClosed() { // nil: the broker refused the connection
		return errRefused
	}
	ch, err := c.Channel()
	if err != nil {
		return amqpErr(err)
	}
	d.chans[name] = ch
	d.mu.Lock()
	d.chanOf[conn][d.taps[conn].opened()] = name
	d.mu.Unlock()
	return nil
}
