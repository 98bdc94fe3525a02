package scenarios

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// runner executes a scenario's steps on a driver, keeping the client's view:
// which connections and channels are open, the consumers, and the deliveries
// each holds unsettled. It renders each step's results as lines.
type runner struct {
	d   driver
	s   *Scenario
	now time.Duration

	conns     []*rconn
	chans     []*rchan
	byConn    map[string]*rconn
	byChan    map[string]*rchan
	consumers []*rconsumer
	labels    map[[2]string]string // (channel, tag) → label

	step int // index of the step running
	res  *Result
}

type rconn struct {
	name   string
	closed bool
}

type rchan struct {
	conn      *rconn
	name      string
	closed    bool
	unopened  bool // channel.open was refused: the connection was closed
	prefetch  int
	global    int
	confirm   bool
	tx        bool     // tx.select was accepted
	txSettles []Settle // settlements held until tx.commit
	published uint64
	pending   map[uint64]bool // published, not yet confirmed
	lastQueue string
	held      []*Holding
	lastTag   map[string]uint64 // body → latest delivery tag on this channel
	latest    map[string]event  // body → its latest delivery or get-ok on this channel
}

type rconsumer struct {
	ch        *rchan
	tag       string
	info      *Consumer
	cancelled bool
}

func newRunner(d driver, s *Scenario) *runner {
	r := &runner{d: d, s: s, byConn: map[string]*rconn{}, byChan: map[string]*rchan{}, labels: map[[2]string]string{}}
	r.res = &Result{Scenario: s, Got: make([][]string, len(s.Steps))}
	chansOfTag := map[string]map[string]bool{}
	for _, st := range s.Steps {
		if c, ok := st.Op.(Consume); ok {
			if chansOfTag[c.Tag] == nil {
				chansOfTag[c.Tag] = map[string]bool{}
			}
			chansOfTag[c.Tag][c.Channel] = true
		}
	}
	for tag, chs := range chansOfTag {
		for ch := range chs {
			label := tag
			if len(chs) > 1 {
				label = ch + "." + tag
			}
			r.labels[[2]string{ch, tag}] = label
		}
	}
	return r
}

func (r *runner) label(ch, tag string) string {
	if l, ok := r.labels[[2]string{ch, tag}]; ok {
		return l
	}
	return ch + "." + tag
}

// run executes every step and returns the result; a driver failure (not a
// broker answer) stops it.
func (r *runner) run() (*Result, error) {
	defer r.d.finish()
	for i, st := range r.s.Steps {
		r.step = i
		r.res.Steps = append(r.res.Steps, StepInfo{Line: st.Line, Text: st.Text})
		out, err := r.exec(st.Op)
		r.res.Steps[i].At = r.now
		if err != nil {
			return r.res, fmt.Errorf("%s:%d: %s: %w", r.s.Path, st.Line, st.Text, err)
		}
		r.res.Got[i] = out
	}
	r.res.End = r.now
	if err := r.d.finish(); err != nil {
		return r.res, err
	}
	return r.res, nil
}

// exec runs one step and returns its result lines.
func (r *runner) exec(op Op) ([]string, error) {
	var out []string
	var rep reply
	var err error
	skip := false // the operation was not sent
	ch := r.byChan[channelOf(op)]
	if c, ok := op.(Close); ok {
		if cc := r.byChan[c.Name]; cc != nil && cc.unopened {
			ch = cc
		}
	}
	if ch != nil && ch.unopened {
		// The client never got this channel: nothing can be sent on it.
		return []string{"! " + ch.name + " is closed"}, nil
	}
	switch o := op.(type) {
	case Conn:
		err = r.d.connect(o)
		var refused *connRefused
		if errors.As(err, &refused) {
			if refused.line != "" {
				out = append(out, refused.line)
			}
			err = nil
			c := &rconn{name: o.Name, closed: true}
			r.conns = append(r.conns, c)
			r.byConn[o.Name] = c
		} else if err == nil {
			c := &rconn{name: o.Name}
			r.conns = append(r.conns, c)
			r.byConn[o.Name] = c
		}
	case OpenChannel:
		err = r.d.openChannel(o.Conn, o.Name)
		if err == nil {
			c := &rchan{conn: r.byConn[o.Conn], name: o.Name, pending: map[uint64]bool{}, lastTag: map[string]uint64{},
				latest: map[string]event{}}
			r.chans = append(r.chans, c)
			r.byChan[o.Name] = c
		} else if errors.Is(err, errRefused) {
			// Steps may still name it: they are refused too.
			c := &rchan{conn: r.byConn[o.Conn], name: o.Name, closed: true, unopened: true, pending: map[uint64]bool{}, lastTag: map[string]uint64{},
				latest: map[string]event{}}
			r.chans = append(r.chans, c)
			r.byChan[o.Name] = c
			out = append(out, "! "+o.Conn+" is closed")
			err = nil
		}
	case Close:
		if c := r.byChan[o.Name]; c != nil {
			err = r.d.closeChannel(o.Name)
		} else {
			err = r.d.closeConn(o.Name)
		}
	case Advance:
		r.d.advance(o.D)
		r.now += o.D
	case SetPolicy, ClearPolicy, AddUser, DeleteUser, SetPermissions, ClearPermissions, SetUserTags, SetTopicPermissions, SetOperatorPolicy, ClearOperatorPolicy:
		err = r.d.admin(op)
	case Alarm:
		err = r.d.alarm(o)
	case ShowQueue:
		out, err = r.showQueue(o.Queue)
	case ShowHeld:
		out = r.showHeld()
	case ShowHeaders:
		out = r.showHeaders(ch, o.Msg)
	case ShowEnvelope:
		out = r.showEnvelope(ch, o.Msg)
	case Settle:
		if o.Msg != "" {
			tag, ok := ch.lastTag[o.Msg]
			if !ok {
				out = append(out, fmt.Sprintf("! %s has had no delivery of %s", ch.name, word(o.Msg)))
				skip = true
				break
			}
			o.Tag, o.Msg = tag, ""
		}
		op = o
		rep, err = r.d.do(ch.name, o)
	case Publish:
		// One publish per body; stop at the first that fails.
		for _, b := range o.Bodies {
			one := o
			one.Bodies = []string{b}
			if _, err = r.d.do(ch.name, one); err != nil {
				break
			}
			if ch.confirm {
				ch.published++
				ch.pending[ch.published] = true
			}
		}
	default:
		rep, err = r.d.do(ch.name, op)
	}
	var perr errProtocol
	switch {
	case err == nil:
	case errors.Is(err, errRefused):
		name := channelOf(op)
		if c, ok := op.(Close); ok {
			name = c.Name
		}
		out = append(out, "! "+name+" is closed")
	case errors.As(err, &perr):
	default:
		return nil, err
	}
	evs := r.d.settle(waits(op))
	failed := skip || err != nil || r.closesIn(evs, ch)
	if !failed {
		out = append(out, r.applyOp(op, ch, rep)...)
	}
	out = append(out, r.applyEvents(evs)...)
	return out, nil
}

// closesIn reports whether evs close ch or its connection.
func (r *runner) closesIn(evs []event, ch *rchan) bool {
	if ch == nil {
		return false
	}
	for _, e := range evs {
		if (e.kind == evChannelClose && e.ch == ch.name) || (e.kind == evConnClose && e.conn == ch.conn.name) {
			return true
		}
	}
	return false
}

// applyOp updates the client's view after op succeeded and returns the
// lines for its reply.
func (r *runner) applyOp(op Op, ch *rchan, rep reply) []string {
	switch o := op.(type) {
	case Close:
		if c := r.byChan[o.Name]; c != nil {
			r.closeChan(c, "channel closed")
		} else if c := r.byConn[o.Name]; c != nil {
			r.closeConn(c, "connection closed")
		}
	case DeclareQueue:
		ch.lastQueue = rep.queue
		if !slices.Contains(r.res.Queues, rep.queue) {
			r.res.Queues = append(r.res.Queues, rep.queue)
		}
		if o.NoWait {
			return nil
		}
		name := ""
		if o.Queue == "" {
			name = normalizeNames(rep.queue) + " "
		}
		return []string{fmt.Sprintf("declare-ok %sready=%d consumers=%d", name, rep.ready, rep.consumers)}
	case Qos:
		if o.Global {
			ch.global = o.Count
		} else {
			ch.prefetch, ch.global = o.Count, 0
		}
	case Consume:
		q := o.Queue
		if q == "" {
			q = ch.lastQueue
		}
		info := &Consumer{Label: r.label(ch.name, o.Tag), Channel: ch.name, Queue: q, NoAck: o.NoAck, From: r.step, Until: -1}
		if !o.NoAck {
			info.Prefetch = ch.prefetch
		}
		r.res.Consumers = append(r.res.Consumers, info)
		r.consumers = append(r.consumers, &rconsumer{ch: ch, tag: o.Tag, info: info})
	case Cancel:
		if c := r.consumer(ch.name, o.Tag); c != nil {
			c.cancelled = true
			c.info.Until, c.info.How = r.step, "cancelled"
		}
	case Confirm:
		ch.confirm = true
	case Get:
		if !rep.got {
			return []string{"get-empty"}
		}
		e := rep.get
		q := o.Queue
		if q == "" {
			q = ch.lastQueue
		}
		ch.lastTag[e.body] = e.tag
		ch.latest[e.body] = e
		h := &Holding{Consumer: ch.name + " get", Channel: ch.name, Queue: q, Msg: e.body, Tag: e.tag, Redelivered: e.redelivered,
			From: r.step, FromAt: r.now, Until: -1}
		r.res.Holdings = append(r.res.Holdings, h)
		if o.NoAck {
			h.Until, h.UntilAt, h.How = r.step, r.now, "no-ack"
		} else {
			ch.held = append(ch.held, h)
		}
		return []string{fmt.Sprintf("get-ok %s left=%d", describe(e.body, e.tag, e.redelivered), e.left)}
	case Purge:
		return []string{fmt.Sprintf("purge-ok %d", rep.count)}
	case DeleteQueue:
		q := o.Queue
		if q == "" {
			q = ch.lastQueue
		}
		for _, c := range r.chans {
			for _, h := range c.held {
				if h.Queue == q {
					h.orphan = true
				}
			}
		}
		return []string{fmt.Sprintf("delete-ok %d", rep.count)}
	case Settle:
		if ch.tx { // applied at commit, undone by rollback
			ch.txSettles = append(ch.txSettles, o)
			break
		}
		r.settleHeld(ch, o)
	case Tx:
		switch o.Method {
		case TxSelect:
			ch.tx = true
		case TxCommit:
			for _, s := range ch.txSettles {
				r.settleHeld(ch, s)
			}
			ch.txSettles = nil
		case TxRollback:
			ch.txSettles = nil
		}
	case Recover:
		r.endHeld(ch, func(*Holding) bool { return true }, "recovered")
	}
	return nil
}

// settleHeld ends the holdings an ack, nack or reject settled.
func (r *runner) settleHeld(ch *rchan, o Settle) {
	how := "acked"
	if o.Method != "ack" {
		how = o.Method + " drop"
		if o.Requeue {
			how = o.Method + " requeue"
		}
	}
	match := func(h *Holding) bool { return h.Tag == o.Tag }
	if o.Multiple {
		match = func(h *Holding) bool { return o.Tag == 0 || h.Tag <= o.Tag }
	}
	r.endHeld(ch, match, how)
}

func (r *runner) endHeld(ch *rchan, match func(*Holding) bool, how string) {
	kept := ch.held[:0]
	for _, h := range ch.held {
		if match(h) {
			h.Until, h.UntilAt, h.How = r.step, r.now, how
		} else {
			kept = append(kept, h)
		}
	}
	ch.held = kept
}

func (r *runner) closeChan(ch *rchan, how string) {
	if ch.closed {
		return
	}
	ch.closed = true
	r.endHeld(ch, func(*Holding) bool { return true }, how)
	for _, c := range r.consumers {
		if c.ch == ch && c.info.Until < 0 {
			c.info.Until, c.info.How = r.step, how
		}
	}
}

func (r *runner) closeConn(c *rconn, how string) {
	c.closed = true
	for _, ch := range r.chans {
		if ch.conn == c {
			r.closeChan(ch, how)
		}
	}
}

func (r *runner) consumer(ch, tag string) *rconsumer {
	for i := len(r.consumers) - 1; i >= 0; i-- {
		if c := r.consumers[i]; c.ch.name == ch && c.tag == tag {
			return c
		}
	}
	return nil
}

// showQueue renders a queue's counts. unacked is what the scenario's
// clients hold from it; the simulator's own count is checked against it.
func (r *runner) showQueue(q string) ([]string, error) {
	st, err := r.d.queueState(q)
	if err != nil {
		return nil, err
	}
	if st.status != "" {
		return []string{word(q) + " " + st.status}, nil
	}
	unacked := 0
	for _, ch := range r.chans {
		for _, h := range ch.held {
			if h.Queue == q && !h.orphan {
				unacked++
			}
		}
	}
	out := []string{fmt.Sprintf("%s ready=%d unacked=%d consumers=%d", word(q), st.ready, unacked, st.consumers)}
	if st.unacked >= 0 && st.unacked != unacked {
		out = append(out, fmt.Sprintf("! the simulator counts unacked=%d", st.unacked))
	}
	return out, nil
}

// showHeaders renders the headers of the channel's latest delivery of msg.
func (r *runner) showHeaders(ch *rchan, msg string) []string {
	if _, ok := ch.lastTag[msg]; !ok {
		return []string{fmt.Sprintf("! %s has had no delivery of %s", ch.name, word(msg))}
	}
	return headerLines(ch.latest[msg].headers)
}

// showEnvelope renders the exchange and routing key of the channel's
// latest delivery of msg.
func (r *runner) showEnvelope(ch *rchan, msg string) []string {
	e, ok := ch.latest[msg]
	if !ok {
		return []string{fmt.Sprintf("! %s has had no delivery of %s", ch.name, word(msg))}
	}
	return []string{fmt.Sprintf("exchange=%s key=%s", word(e.exchange), word(e.key))}
}

// showHeld renders what every consumer of an open channel, and every open
// channel's basic.get, holds unsettled.
func (r *runner) showHeld() []string {
	var out []string
	for _, c := range r.consumers {
		if c.ch.closed {
			continue
		}
		var hs []*Holding
		for _, h := range c.ch.held {
			if h.Consumer == c.info.Label {
				hs = append(hs, h)
			}
		}
		name := c.info.Label
		switch {
		case c.cancelled && len(hs) == 0:
			continue
		case c.cancelled:
			name += " (cancelled)"
		case c.info.NoAck:
			name += " (no-ack)"
		}
		out = append(out, name+": "+heldList(hs))
	}
	for _, ch := range r.chans {
		var hs []*Holding
		for _, h := range ch.held {
			if h.Consumer == ch.name+" get" {
				hs = append(hs, h)
			}
		}
		if !ch.closed && len(hs) > 0 {
			out = append(out, ch.name+" get: "+heldList(hs))
		}
	}
	if len(out) == 0 {
		out = []string{"nothing"}
	}
	return out
}

func heldList(hs []*Holding) string {
	if len(hs) == 0 {
		return "nothing"
	}
	s := ""
	for i, h := range hs {
		if i > 0 {
			s += ", "
		}
		s += describe(h.Msg, h.Tag, h.Redelivered)
	}
	return s
}

// describe renders a delivery: "m1 #3" or "m1 #3 redelivered".
func describe(body string, tag uint64, redelivered bool) string {
	s := fmt.Sprintf("%s #%d", word(body), tag)
	if redelivered {
		s += " redelivered"
	}
	return s
}
