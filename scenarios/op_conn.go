package scenarios

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"syscall"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// Conn opens a connection: "conn c1", as guest, or "conn c2 user=app
// password=s3cret". A connection the broker refuses shows why ("c2 <-
// login refused", "c2 <- connection.close 530 ...") and stays closed.
// In a cluster scenario "conn c3 node=2" connects to node 2 (node 1 by
// default); a node that does not run refuses it at TCP level: "c3 <-
// connection refused".
type Conn struct {
	Name, User, Password string
	Node                 int // 1-based; 0: node 1
}

func init() {
	register(&verb{name: "conn", usage: "conn NAME [user=U password=P] [node=N]", minPos: 1, maxPos: 1, options: []string{"user", "password", "node"},
		method: protocol.ConnectionOpen,
		build: func(a *argSet) (Op, error) {
			c := Conn{Name: a.str(0), User: a.opts["user"].val, Password: a.opts["password"].val}
			n, ok, err := a.intOpt("node", 8)
			if err != nil {
				return nil, err
			}
			if ok && n == 0 {
				return nil, a.errAt(a.opts["node"], "nodes are numbered from 1")
			}
			c.Node = n
			return c, nil
		}})
}

func (o Conn) nodes() []int {
	if o.Node == 0 {
		return nil
	}
	return []int{o.Node}
}

func (Conn) isOp()   {}
func (Conn) silent() {}

// String returns the Conn step line.
func (o Conn) String() string {
	w := []string{"conn", word(o.Name)}
	if o.User != "" {
		w = append(w, "user="+optWord(o.User), "password="+optWord(o.Password))
	}
	if o.Node != 0 {
		w = append(w, "node="+strconv.Itoa(o.Node))
	}
	return line(w...)
}

func (o Conn) checkNames(n *names) string {
	if msg := n.fresh(o.Name, "connection"); msg != "" {
		return msg
	}
	n.conns[o.Name] = true
	return ""
}

// run connects. A connection the broker refused is one the steps can
// name, closed.
func (o Conn) run(r *runner, _ *rchan) ([]string, reply, error) {
	var out []string
	err := r.d.connect(o)
	var refused *connRefused
	if errors.As(err, &refused) {
		if refused.line != "" {
			out = append(out, refused.line)
		}
		err = nil
		c := &rconn{name: o.Name, node: max(o.Node, 1), closed: true}
		r.conns = append(r.conns, c)
		r.byConn[o.Name] = c
	} else if err == nil {
		c := &rconn{name: o.Name, node: max(o.Node, 1)}
		r.conns = append(r.conns, c)
		r.byConn[o.Name] = c
	}
	return out, reply{}, err
}

func (d *simDriver) connect(o Conn) error {
	conn := o.Name
	// A client across a socket, whose frames wait unread while an alarm
	// blocks it.
	c, err := d.b.Dial(sim.ConnectOptions{Name: conn, User: o.User, Password: o.Password, Node: o.Node,
		Shell: sim.ShellOptions{HoldWhenBlocked: true}})
	if err != nil {
		if r := simRefusal(conn, err); r != nil {
			return r
		}
		return err
	}
	d.conns[conn] = c
	d.connOrder = append(d.connOrder, conn)
	d.chanOf[conn] = map[uint16]string{}
	return nil
}

func (d *amqpDriver) connect(o Conn) error {
	conn := o.Name
	t := newTap(conn, func(e event, ch uint16) {
		d.mu.Lock()
		defer d.mu.Unlock()
		if e.kind != evConnClose && e.kind != evBlocked && e.kind != evUnblocked {
			e.ch = d.chanOf[conn][ch]
		}
		e.text, e.exchange, e.key = d.unp(e.text), d.unp(e.exchange), d.unp(e.key)
		e.headers = d.headers(e.headers)
		if e.kind == evConnClose {
			if d.closedBy == nil {
				d.closedBy = map[string]bool{}
			}
			d.closedBy[conn] = true
		}
		d.events = append(d.events, e)
	}, func(at time.Time) {
		d.mu.Lock()
		d.last = at
		d.mu.Unlock()
	})
	cfg := amqp.Config{
		Properties: amqp.Table{"connection_name": "amqpsim " + d.name + " " + conn},
		Dial: func(network, addr string) (net.Conn, error) {
			var c net.Conn
			var err error
			if d.dial != nil {
				c, err = d.dial(network, addr)
			} else {
				c, err = net.DialTimeout(network, addr, 10*time.Second)
			}
			if err != nil {
				return nil, err
			}
			return &tapConn{Conn: c, t: t}, nil
		},
	}
	if d.sim != nil && d.sim.nodes > 1 {
		node := max(o.Node, 1)
		cfg.Dial = func(network, addr string) (net.Conn, error) {
			c, err := d.sim.dialNode(node)
			if err != nil {
				return nil, err
			}
			return &tapConn{Conn: c, t: t}, nil
		}
	}
	u, err := d.userURL(o)
	if err != nil {
		return err
	}
	c, err := amqp.DialConfig(u, cfg)
	if err != nil {
		if r := d.amqpRefusal(conn, err); r != nil {
			return r
		}
		return fmt.Errorf("connecting to %s: %w", redact(u), err)
	}
	d.watch(conn, c)
	d.conns[conn], d.taps[conn] = c, t
	d.mu.Lock()
	d.chanOf[conn] = map[uint16]string{}
	d.mu.Unlock()
	return nil
}

// userURL is the URL of the connection's node (the driver's URL on a
// single broker), with another user's credentials.
func (d *amqpDriver) userURL(o Conn) (string, error) {
	base := d.url
	if d.cluster != nil {
		base = d.cluster.urls[max(o.Node, 1)-1]
	}
	if o.User == "" {
		return base, nil
	}
	u, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	u.User = url.UserPassword(d.user(o.User), o.Password)
	return u.String(), nil
}

// connRefused is a connection the broker refused in the handshake; line
// is the step's result line, "" when the connection's events carry it. Both drivers see the same: a login refusal
// reaches amqp091-go without its text (the client reports
// ErrCredentials), a refused connection.open with RabbitMQ's.
type connRefused struct{ line string }

func (e *connRefused) Error() string { return e.line }

// amqpRefusal makes a connRefused of amqp091-go's handshake error, or
// returns nil.
func (d *amqpDriver) amqpRefusal(conn string, err error) error {
	if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, sim.ErrNodeDown) {
		return &connRefused{conn + " <- connection refused"}
	}
	if errors.Is(err, amqp.ErrCredentials) {
		return &connRefused{conn + " <- login refused"}
	}
	var ae *amqp.Error
	if errors.As(err, &ae) {
		// The tap saw the connection.close and reports it.
		return &connRefused{}
	}
	return nil
}

// simRefusal makes a connRefused of sim.Broker.Dial's error, or returns
// nil.
func simRefusal(conn string, err error) error {
	if errors.Is(err, sim.ErrNodeDown) {
		return &connRefused{conn + " <- connection refused"}
	}
	var le *sim.LoginError
	if errors.As(err, &le) {
		return &connRefused{conn + " <- login refused"}
	}
	var pe *protocol.Error
	if errors.As(err, &pe) {
		return &connRefused{fmt.Sprintf("%s <- connection.close %d (connection.open): %s", conn, pe.Code, normalizeNames(pe.Text))}
	}
	return nil
}
