package scenarios

import (
	"errors"
	"fmt"
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
	node   int // the cluster node it is attached to (1 unless said)
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
	tx        bool // tx.select was accepted
	published uint64
	pending   map[uint64]bool // published, not yet confirmed
	lastQueue string
	held      []*Holding
	lastTag   map[string]uint64 // body → latest delivery tag on this channel
	latest    map[string]event  // body → its latest delivery or get-ok on this channel
}

// noDelivery is the line of a step that names a message the channel has
// had no delivery of.
func (ch *rchan) noDelivery(msg string) []string {
	return []string{fmt.Sprintf("! %s has had no delivery of %s", ch.name, word(msg))}
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
		start := time.Now()
		out, err := r.exec(st.Op)
		r.res.Steps[i].At, r.res.Steps[i].Took = r.now, time.Since(start)
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
	// name is what the step is sent on, for a refusal: its channel, or
	// what a close closes.
	name := channelOf(op)
	if c, ok := op.(closer); ok {
		name = c.closes()
	}
	if c := r.byChan[name]; c != nil && c.unopened {
		// The client never got this channel: nothing can be sent on it.
		return []string{"! " + c.name + " is closed"}, nil
	}
	ch := r.byChan[channelOf(op)]
	var out []string
	var rep reply
	var err error
	switch o := op.(type) {
	case runnerOp:
		out, rep, err = o.run(r, ch)
	case adminOp:
		err = r.d.admin(o)
	case chanOp:
		rep, err = r.d.do(ch.name, o)
	default:
		return nil, fmt.Errorf("scenarios: no way to run %T", op)
	}
	var perr errProtocol
	switch {
	case err == nil:
	case errors.Is(err, errNotSent), errors.Is(err, errPending):
	case errors.Is(err, errRefused):
		out = append(out, "! "+name+" is closed")
	case errors.As(err, &perr):
	default:
		return nil, err
	}
	// A silent step the broker refused waits too: what the close sets
	// off (a quorum queue dropping the channel's consumers, the requeue of
	// its deliveries to others) takes the broker a moment after it.
	evs := r.d.settle(waits(op) || errors.As(err, &perr))
	failed := err != nil || r.closesIn(evs, ch)
	if a, ok := op.(applier); ok && !failed {
		out = append(out, a.apply(r, ch, rep)...)
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

// describe renders a delivery: "m1 #3" or "m1 #3 redelivered".
func describe(body string, tag uint64, redelivered bool) string {
	s := fmt.Sprintf("%s #%d", word(body), tag)
	if redelivered {
		s += " redelivered"
	}
	return s
}
