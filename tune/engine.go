package tune

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
)

// The client side of a run is a discrete-event simulation on the same
// virtual clock as the broker: deliveries travel to their consumer, wait in
// its buffer, are handled, and acks travel back. The broker side is the sim
// broker itself: every dispatch decision (credit, round robin, the channel
// limit) is its own.

type evKind uint8

const (
	evConsume evKind = iota // a basic.consume reaches the broker
	evPublish               // a publisher's message reaches the broker
	evArrive                // a delivery reaches its consumer's buffer
	evDone                  // a handler finishes a message
	evAck                   // an ack reaches the broker
	evServe                 // the broker takes the next request from its inbox
)

type event struct {
	at   time.Duration
	seq  uint64 // ties break in scheduling order: deterministic
	kind evKind
	c    int32 // consumer index
	n    int32 // evAck: messages it settles; evPublish: the message id
	tag  uint64
	id   int32 // evArrive: the message id
}

// events is a binary min-heap on (at, seq), by value: no allocation per
// event.
type events []event

func (h events) less(i, j int) bool {
	return h[i].at < h[j].at || (h[i].at == h[j].at && h[i].seq < h[j].seq)
}

func (h *events) push(e event) {
	*h = append(*h, e)
	s := *h
	for i := len(s) - 1; i > 0; {
		p := (i - 1) / 2
		if !s.less(i, p) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

func (h *events) pop() event {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	s = s[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(s) && s.less(l, m) {
			m = l
		}
		if r < len(s) && s.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	*h = s
	return top
}

// conn is one client connection: its link from the broker.
type conn struct {
	linkFree time.Duration // when the link has sent everything queued on it
	inFlight int           // deliveries sent and not yet read
}

// cons is one simulated consumer.
type cons struct {
	ch     *simChannel
	chIdx  int
	conn   *conn
	sc     *simConsumer
	buffer []buffered // arrived, not yet handled; buffer[head:] waits
	head   int
	busy   bool
	cur    buffered // the message in the handler
	// unacked and the integral of unacked over time, as the broker counts
	// them: what a crash would redeliver.
	unacked, peakUnacked int
	unackedArea          float64 // message·seconds
	lastChange           time.Duration
	sinceAck             int
	handled              int
}

type buffered struct {
	tag uint64
	id  int32
}

// run is one prefetch value's simulation.
type run struct {
	cfg       Config
	prefetch  int
	b         *simBroker
	rng       *rand.Rand
	h         events
	seq       uint64
	now       time.Duration
	conns     []*conn
	chans     [][]int // consumer indexes per channel
	cs        []*cons
	published []time.Duration // per message id
	latency   []time.Duration
	total     int
	// The broker serves requests (consume, publish, ack) one at a time in
	// arrival order, as RabbitMQ's queue process takes its mailbox:
	// inbox[inHead:] waits, and brokerFree is when the broker has spent
	// its time on everything it has dispatched.
	inbox      []event
	inHead     int
	serving    bool
	brokerFree time.Duration
	held, peak int // messages on the client, not yet handled
	lastDone   time.Duration
}

func (r *run) schedule(e event) {
	r.seq++
	e.seq = r.seq
	r.h.push(e)
}

// simulate runs the config with one prefetch value.
func simulate(cfg Config, prefetch int) (Point, error) {
	b, err := newSimBroker(cfg.Seed, cfg.Version, "tune")
	if err != nil {
		return Point{}, err
	}
	r := &run{cfg: cfg, prefetch: prefetch, b: b, rng: rand.New(rand.NewPCG(cfg.Seed, 0x74756e65))}
	r.total = cfg.Backlog + cfg.Messages
	r.published = make([]time.Duration, r.total)
	r.latency = make([]time.Duration, 0, r.total)
	for id := range cfg.Backlog {
		if err := b.publish(id); err != nil {
			return Point{}, err
		}
	}
	if err := r.setup(); err != nil {
		return Point{}, err
	}
	for j := range cfg.Messages {
		at := time.Duration(float64(j) * float64(time.Second) / cfg.Rate)
		r.schedule(event{at: at, kind: evPublish, n: int32(cfg.Backlog + j)})
	}
	for len(r.h) > 0 {
		e := r.h.pop()
		r.now = e.at
		if err := r.step(e); err != nil {
			return Point{}, fmt.Errorf("prefetch %d at %v: %w", prefetch, r.now, err)
		}
	}
	return r.point(), nil
}

// setup opens connections and channels at time 0 and schedules the
// consumers' basic.consume: a client starts them one after another, each
// waiting a round trip for its consume-ok, as amqp091-go's Consume does.
func (r *run) setup() error {
	cfg := r.cfg
	var sconn *simConn
	var ch *simChannel
	for i := range cfg.Consumers {
		if i%cfg.ConsumersPerChannel == 0 {
			if len(r.chans)%cfg.ChannelsPerConnection == 0 {
				sconn = r.b.connection(fmt.Sprintf("c%d", len(r.conns)+1))
				r.conns = append(r.conns, &conn{})
			}
			var err error
			if ch, err = r.b.channel(sconn, r.prefetch, cfg.Global); err != nil {
				return err
			}
			r.chans = append(r.chans, nil)
		}
		chIdx := len(r.chans) - 1
		r.chans[chIdx] = append(r.chans[chIdx], i)
		r.cs = append(r.cs, &cons{ch: ch, chIdx: chIdx, conn: r.conns[len(r.conns)-1]})
		r.schedule(event{at: time.Duration(i)*cfg.RTT + cfg.RTT/2, kind: evConsume, c: int32(i)})
	}
	return nil
}

func (r *run) step(e event) error {
	switch e.kind {
	case evConsume, evPublish, evAck:
		if e.kind == evPublish {
			r.published[e.n] = r.now // latency counts the broker's queueing too
		}
		r.inbox = append(r.inbox, e)
		if !r.serving {
			r.serving = true
			r.schedule(event{at: max(r.now, r.brokerFree), kind: evServe})
		}
		return nil
	case evServe:
		next := r.inbox[r.inHead]
		r.inHead++
		if r.inHead == len(r.inbox) {
			r.inbox, r.inHead = r.inbox[:0], 0
		}
		if err := r.serve(next); err != nil {
			return err
		}
		if r.inHead < len(r.inbox) {
			r.schedule(event{at: max(r.now, r.brokerFree), kind: evServe})
		} else {
			r.serving = false
		}
		return nil
	}
	c := r.cs[e.c]
	switch e.kind {
	case evArrive:
		c.conn.inFlight--
		c.buffer = append(c.buffer, buffered{tag: e.tag, id: e.id})
		r.held++
		r.peak = max(r.peak, r.held)
		if !c.busy {
			r.startNext(int(e.c))
		}
	case evDone:
		r.finish(int(e.c))
	}
	return nil
}

// serve applies one request to the broker at the current time and sends
// what it dispatches.
func (r *run) serve(e event) error {
	c := r.consumer(e.c)
	switch e.kind {
	case evConsume:
		r.b.advanceTo(r.now)
		sc, err := c.ch.consume(r.b, fmt.Sprintf("ctag-%d", e.c+1))
		if err != nil {
			return err
		}
		c.sc = sc
		r.drain(int(e.c))
	case evPublish:
		r.b.advanceTo(r.now)
		if err := r.b.publish(int(e.n)); err != nil {
			return err
		}
		for i := range r.cs {
			r.drain(i)
		}
	case evAck:
		r.b.advanceTo(r.now)
		if err := c.ch.ack(e.tag, r.cfg.AckEvery > 1); err != nil {
			return err
		}
		r.unacked(c, -int(e.n))
		for _, i := range r.chans[c.chIdx] {
			r.drain(i)
		}
	}
	return nil
}

func (r *run) consumer(i int32) *cons {
	if int(i) < len(r.cs) {
		return r.cs[i]
	}
	return nil
}

// drain takes what the broker pushed to consumer i and sends it on its
// way: the broker spends its time on each message, then the connection's
// link carries it, half a round trip long.
func (r *run) drain(i int) {
	c := r.cs[i]
	if c.sc == nil {
		return
	}
	wire := time.Duration(0)
	if r.cfg.Bandwidth > 0 {
		wire = time.Duration(float64(r.cfg.Size+frameOverhead) / r.cfg.Bandwidth * float64(time.Second))
	}
	for {
		tag, id, ok := c.sc.next()
		if !ok {
			return
		}
		r.unacked(c, 1)
		cn := c.conn
		cost := r.cfg.BrokerCost
		if cn.inFlight == 0 {
			// Nothing else on its way to this connection: this delivery
			// is a write, a read and a wake-up of its own on both sides.
			cost += r.cfg.UnbatchedCost
		}
		cn.inFlight++
		r.brokerFree = max(r.brokerFree, r.now) + cost
		cn.linkFree = max(cn.linkFree, r.brokerFree) + wire
		r.schedule(event{at: cn.linkFree + r.cfg.RTT/2, kind: evArrive, c: int32(i), tag: tag, id: int32(id)})
	}
}

// unacked moves consumer c's count of unsettled deliveries by d, keeping
// its integral over time.
func (r *run) unacked(c *cons, d int) {
	c.unackedArea += float64(c.unacked) * (r.now - c.lastChange).Seconds()
	c.lastChange = r.now
	c.unacked += d
	c.peakUnacked = max(c.peakUnacked, c.unacked)
}

func (r *run) startNext(i int) {
	c := r.cs[i]
	if c.head == len(c.buffer) {
		c.buffer, c.head = c.buffer[:0], 0
		return
	}
	c.cur = c.buffer[c.head]
	c.head++
	c.busy = true
	r.schedule(event{at: r.now + r.cfg.ClientCost + r.cfg.Handler.Sample(r.rng), kind: evDone, c: int32(i)})
}

// finish ends consumer i's current message, acks when its ack mode says
// so, and starts the next buffered one.
func (r *run) finish(i int) {
	c := r.cs[i]
	c.busy = false
	c.handled++
	r.held--
	r.lastDone = r.now
	r.latency = append(r.latency, r.now-r.published[c.cur.id])
	c.sinceAck++
	if c.sinceAck >= r.cfg.AckEvery {
		r.schedule(event{at: r.now + r.cfg.RTT/2, kind: evAck, c: int32(i), tag: c.cur.tag, n: int32(c.sinceAck)})
		c.sinceAck = 0
	}
	r.startNext(i)
}

// point summarises the run.
func (r *run) point() Point {
	p := Point{Prefetch: r.prefetch, Messages: len(r.latency), Duration: r.lastDone}
	p.Stalled = len(r.latency) < r.total
	if r.lastDone > 0 {
		p.Throughput = float64(len(r.latency)) / r.lastDone.Seconds()
	}
	if len(r.latency) > 0 {
		slices.Sort(r.latency)
		p.LatencyP50 = quantile(r.latency, 0.50)
		p.LatencyP99 = quantile(r.latency, 0.99)
	}
	p.HeldPeak = r.peak
	p.HeldBytesPeak = int64(r.peak) * int64(r.cfg.Size)
	// The blast radius averages over the whole run, to the last ack.
	var area float64
	end := r.now
	for _, c := range r.cs {
		r.unacked(c, 0)
		share := 0.0
		if len(r.latency) > 0 {
			share = float64(c.handled) / float64(len(r.latency))
		}
		p.Shares = append(p.Shares, share)
		p.BlastMax = max(p.BlastMax, c.peakUnacked)
		area += c.unackedArea
	}
	if end > 0 {
		p.BlastMean = area / end.Seconds() / float64(len(r.cs))
	}
	return p
}

// quantile returns the q-quantile of sorted values (nearest rank).
func quantile(sorted []time.Duration, q float64) time.Duration {
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
