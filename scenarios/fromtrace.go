package scenarios

import (
	"fmt"
	"strings"
	"time"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// TraceSource is the source directive of a scenario written by
// FromTrace: its expectations are what the simulator did in that run.
const TraceSource = "simulator trace"

// TraceOptions configure FromTrace.
type TraceOptions struct {
	Name  string // the scenario's name; "run" when empty
	Title string // its leading comment
	// Seed is the run's sim.Config.Seed, written as the seed directive so
	// that a replay draws the same generated names.
	Seed uint64
	// Final, when set, is the broker the run ended on: the file then ends
	// with a held step and a queue step for every queue the run declared,
	// showing that broker's counts.
	Final *sim.Broker
	// Version is the release the run simulated, written as the rabbitmq
	// directive so that a replay runs on the same profile; zero means
	// Final's release when Final is set, else sim.DefaultVersion.
	Version sim.Version
	// Faults are the faults injected into the run that the trace does
	// not show as such (see TraceFault), written as steps where they
	// happened.
	Faults []TraceFault
}

// FromTrace writes a simulator run, from its typed trace (sim.Broker.Trace,
// through the wire or in process), as a scenario: one step per method a
// client called, an advance wherever the virtual clock moved, and under
// each step, as its results, what the broker pushed in reaction in that
// run. The Result is the same run, for Result.SVG and Result.Timeline.
//
// Faults are steps where they happened (fromtrace_faults.go): a restart,
// a node's fault, a nacked publish, and those the test lists in
// TraceOptions.Faults (amqptest lists the closes it arms at a delivery or
// makes at once, the alarms it raises, the connections it drops, which
// are written as their clients' closes, as the broker takes them). Steps
// name connections after their connection names (a reconnect gets "-2",
// "-3") and channels as CONN-chN; Broker.Publish, which has no channel,
// publishes on a connection "direct" of its own, open while it
// publishes; a publish an alarm blocked is written where it blocked its
// connection; acks name delivery tags (#N). A publisher confirm is
// written under the publish it confirms, where a replay sends it, also
// when the broker confirmed several publishes it had read together at
// once (basic.ack multiple, as the wire server and RabbitMQ do), which a
// comment then says. The queue.declare-ok, purge-ok and delete-ok counts
// come from replaying the steps on a fresh simulator, the rest from the
// trace, so the report replays (Replay) to the results written, its
// faults included (amqptest's TestReportReplaysItsFaults), but for a
// publish an alarm held that the broker never read: its connection
// closed before the alarm cleared.
func FromTrace(trace []sim.Event, o TraceOptions) (*Scenario, *Result, error) {
	if o.Name == "" {
		o.Name = "run"
	}
	if o.Version == (sim.Version{}) {
		o.Version = sim.DefaultVersion
		if o.Final != nil {
			o.Version = o.Final.Profile().Version
		}
	}
	w := newTraceWriter(trace)
	w.faults = sortedFaults(o.Faults)
	w.walk()
	if o.Final != nil {
		w.add(ShowHeld{})
		for _, q := range w.queues {
			w.add(ShowQueue{Queue: q})
		}
	}
	s := &Scenario{Name: o.Name, Path: o.Name + ".txt", Source: TraceSource, Version: o.Version}
	for _, l := range strings.Split(strings.TrimSpace(o.Title), "\n") {
		if l != "" {
			s.items = append(s.items, item{text: "# " + l})
		}
	}
	s.items = append(s.items, item{dir: "source"})
	if o.Seed != 0 {
		s.Seed = o.Seed
		s.items = append(s.items, item{dir: "seed"})
	}
	s.items = append(s.items, item{dir: "rabbitmq"})
	shadow := sim.Config{Seed: o.Seed, Version: o.Version}
	if s.Cluster = clusterOf(w.nodes, o.Final); s.Cluster != nil {
		s.items = append(s.items, item{dir: "cluster"})
		s.Cluster.config(&shadow)
	}
	s.items = append(s.items, item{text: ""})
	for _, st := range w.steps {
		for _, c := range st.comments {
			s.items = append(s.items, item{text: "# " + c})
		}
		step := &Step{Line: len(s.items) + 1, Text: st.op.String(), Op: st.op}
		s.Steps = append(s.Steps, step)
		s.items = append(s.items, item{step: step})
	}
	d := &traceDriver{w: w, shadow: newSimDriver(sim.New(shadow), shadow), final: o.Final}
	res, err := newRunner(d, s).run()
	if err != nil {
		return nil, nil, err
	}
	rec := res.Recorded("")
	res.Scenario = rec
	return rec, res, nil
}

// traceStep is a step FromTrace writes, with the trace events that are
// its results.
type traceStep struct {
	op       Op
	comments []string // written above it
	events   []int    // indexes into the trace: what the broker pushed in reaction
	// confirms are the publisher confirms written under this step: each
	// publish's, under the step that published it (see confirm).
	confirms []traceConfirm
}

// traceConfirm is one publish's confirm: basic.ack or basic.nack of tag
// on channel ch of connection conn.
type traceConfirm struct {
	conn, ch string
	tag      uint64
	nack     bool
}

// confirmTags follows a confirm-mode channel's publishes: the step that
// published each tag (tag n is steps[n-1]), and the tags confirmed.
type confirmTags struct {
	steps     []int
	confirmed map[uint64]bool
}

// traceWriter turns a trace into steps.
type traceWriter struct {
	trace []sim.Event
	steps []*traceStep
	// evConn and evChan are each event's connection and channel names in
	// the scenario, as they were when it happened.
	evConn, evChan []string
	used           map[string]bool
	conns          map[string]string  // sim connection name → open scenario connection
	chans          map[simChan]string // sim connection name and channel number → open scenario channel
	direct         string             // the channel of Broker.Publish, once opened
	directConn     string             // its connection
	queues         []string
	declared       map[string]bool
	pending        []string // comments for the next step
	now            time.Duration
	// tags renames consumer tags a file could not show readably
	// (amqp091-go's "ctag-/path/to/binary-1") to ctag1, ctag2, ...
	tags map[string]string
	// confirming follows each confirm-mode channel (by its name in the
	// file) for confirm.
	confirming map[string]*confirmTags
	// labels are the events' connection labels (sim.ConnLabels).
	labels []string
	// nodes is the highest cluster node the trace names (sim.Event.Node),
	// 0 for a broker of one node.
	nodes int
	// faults are TraceOptions.Faults by Before, those not written yet
	// (fromtrace_faults.go).
	faults []TraceFault
	// early are the publish calls written where an alarm blocked their
	// connection, not where the broker read them; heldSteps are their
	// steps (blocked).
	early     map[int]bool
	heldSteps map[int]bool
	// nacked are the publish calls sim.Broker.NackPublishes nacked.
	nacked map[int]bool
}

// simChan names a channel of the traced run.
type simChan struct {
	conn string
	id   uint16
}

func newTraceWriter(trace []sim.Event) *traceWriter {
	return &traceWriter{trace: trace, evConn: make([]string, len(trace)), evChan: make([]string, len(trace)),
		used: map[string]bool{}, conns: map[string]string{}, chans: map[simChan]string{}, declared: map[string]bool{},
		tags: map[string]string{}, confirming: map[string]*confirmTags{}, labels: sim.ConnLabels(trace),
		early: map[int]bool{}, heldSteps: map[int]bool{}}
}

// tag returns the name the file gives consumer tag t: t itself when it
// is a short plain word, ctagN otherwise, the same for every use.
func (w *traceWriter) tag(t string) string {
	if t == "" || len(t) <= 24 && nameRE.MatchString(t) {
		return t
	}
	if n, ok := w.tags[t]; ok {
		return n
	}
	n := w.name(fmt.Sprintf("ctag%d", len(w.tags)+1))
	w.tags[t] = n
	return n
}

// add appends a step. A publish joins the one before it when that one is
// the same publish of another body and the broker pushed nothing in
// reaction: "publish ch1 jobs m1 m2 m3".
func (w *traceWriter) add(op Op) {
	if w.direct != "" && !w.ofDirect(op) {
		w.closeDirect()
	}
	if p, ok := op.(Publish); ok && len(w.steps) > 0 && len(w.pending) == 0 {
		last := w.steps[len(w.steps)-1]
		if lp, ok := last.op.(Publish); ok && len(last.events) == 0 && samePublish(lp, p) {
			lp.Bodies = append(lp.Bodies, p.Bodies...)
			last.op = lp
			return
		}
	}
	w.steps = append(w.steps, &traceStep{op: op, comments: w.pending})
	w.pending = nil
}

// samePublish reports whether two publishes differ only in their bodies.
func samePublish(a, b Publish) bool {
	a.Bodies, b.Bodies = nil, nil
	return a.String() == b.String()
}

// attach makes event i a result of the latest step, first adding an
// advance when the clock moved since that step.
func (w *traceWriter) attach(i int) {
	w.moveTo(w.trace[i].At)
	if len(w.steps) == 0 {
		return // before any step: nothing has been pushed
	}
	st := w.steps[len(w.steps)-1]
	st.events = append(st.events, i)
}

// moveTo adds an advance step when the clock moved past now.
func (w *traceWriter) moveTo(at time.Duration) {
	if at > w.now {
		d := at - w.now
		w.now = at
		w.add(Advance{D: d})
	}
}

// name returns a fresh scenario name for base.
func (w *traceWriter) name(base string) string {
	var b strings.Builder
	for _, r := range base {
		if r < 128 && (r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	n := strings.Trim(b.String(), "-")
	if n == "" {
		n = "c"
	}
	name := n
	for i := 2; w.used[name]; i++ {
		name = fmt.Sprintf("%s-%d", n, i)
	}
	w.used[name] = true
	return name
}

// walk turns every event into a step, a result of one, or a comment.
func (w *traceWriter) walk() {
	w.nacked = nackedPublishes(w.trace)
	for i, e := range w.trace {
		w.faultsBefore(i)
		w.evConn[i] = w.conns[e.Conn]
		w.evChan[i] = w.chans[simChan{e.Conn, e.Channel}]
		switch e.Kind {
		case sim.EventConnectionOpen:
			w.moveTo(e.At)
			name := w.name(w.labels[i]) // a reconnect's "-2", as check.Lint names it
			w.conns[e.Conn] = name
			if e.Vhost != "/" {
				w.pending = append(w.pending, fmt.Sprintf("%s connected to vhost %q; scenarios run on \"/\"", name, e.Vhost))
			}
			w.add(Conn{Name: name, Node: e.Node})
			w.nodes = max(w.nodes, e.Node)
		case sim.EventNode:
			w.moveTo(e.At)
			w.nodes = max(w.nodes, e.Node)
			w.add(nodeOp(e, &w.pending))
		case sim.EventChannelOpen:
			w.moveTo(e.At)
			cn := w.conns[e.Conn]
			name := w.name(fmt.Sprintf("%s-ch%d", cn, e.Channel))
			w.chans[simChan{e.Conn, e.Channel}] = name
			w.add(OpenChannel{Conn: cn, Name: name})
		case sim.EventConnectionClose:
			if e.Reason == "node down" {
				continue // its node went: the push that follows is a result of that step
			}
			if e.Err == nil {
				w.moveTo(e.At)
				w.add(Close{Name: w.evConn[i]})
				w.forget(e.Conn)
			} else {
				w.attach(i) // the names go with its connection.close push
			}
		case sim.EventPush:
			if (e.Method == protocol.BasicAck || e.Method == protocol.BasicNack) && w.confirm(i) {
				continue
			}
			w.attach(i)
			switch e.Method {
			case protocol.ConnectionClose:
				w.forget(e.Conn)
			case protocol.ChannelClose:
				delete(w.chans, simChan{e.Conn, e.Channel})
			}
		case sim.EventBlocked:
			w.blocked(i)
			w.attach(i)
		case sim.EventCall:
			if w.early[i] {
				continue
			}
			w.moveTo(e.At)
			if w.nacked[i] {
				w.add(Fault{Kind: FaultNackPublishes, Count: 1})
			}
			if op := w.call(e, w.evChan[i]); op != nil {
				w.add(op)
				w.published(e, w.evChan[i])
			} else {
				w.pending = append(w.pending, fmt.Sprintf("%s called %v, which the format has no step for", w.evChan[i], e.Method))
			}
			if e.Method == protocol.ChannelClose {
				delete(w.chans, simChan{e.Conn, e.Channel})
			}
		case sim.EventPublish:
			w.moveTo(e.At)
			if w.direct == "" {
				conn := w.name("direct")
				if conn == "direct" {
					w.pending = append(w.pending, "Broker.Publish, which has no channel, publishes on a connection of its own, open while it publishes")
				}
				w.directConn, w.direct = conn, w.name(conn+"-ch1")
				w.add(Conn{Name: conn})
				w.add(OpenChannel{Conn: conn, Name: w.direct})
			}
			if e.Vhost != "/" {
				w.pending = append(w.pending, fmt.Sprintf("published on vhost %q; scenarios run on \"/\"", e.Vhost))
			}
			w.add(publishOp(w.direct, e))
		case sim.EventRestart:
			w.moveTo(e.At)
			w.add(Fault{Kind: FaultRestart})
			w.attach(i)
		default:
			w.attach(i)
		}
	}
	w.faultsBefore(len(w.trace))
	if len(w.pending) > 0 && len(w.steps) > 0 {
		// Comments after the last step stay with it.
		last := w.steps[len(w.steps)-1]
		last.comments = append(last.comments, w.pending...)
		w.pending = nil
	}
}

// clusterOf is the cluster directive of a run on a cluster: the final
// broker's nodes, or as many as the trace names; nil for one node.
func clusterOf(traced int, final *sim.Broker) *ClusterSpec {
	if final != nil {
		nodes := final.Nodes()
		if len(nodes) < 2 {
			return nil
		}
		c := &ClusterSpec{Nodes: len(nodes)}
		for _, n := range nodes {
			c.Names = append(c.Names, n.Name)
		}
		return c
	}
	if traced < 2 {
		return nil
	}
	return &ClusterSpec{Nodes: traced}
}

// nodeOp is the step of a cluster node's fault (sim.EventNode). A
// partition into other groups than one node against the rest, which the
// format cannot write, becomes the cut of the first group's first node,
// with a comment.
func nodeOp(e sim.Event, comments *[]string) Op {
	switch e.Reason {
	case "stop":
		return StopNode{Node: e.Node}
	case "kill":
		return KillNode{Node: e.Node}
	case "start":
		return StartNode{Node: e.Node}
	case "pause":
		return PauseNode{Node: e.Node}
	case "resume":
		return ResumeNode{Node: e.Node}
	case "partition":
		if len(e.Nodes) != 1 || len(e.Nodes[0]) != 1 {
			*comments = append(*comments, fmt.Sprintf("the run partitioned the nodes into %v; the format cuts off one node", e.Nodes))
		}
		if len(e.Nodes) > 0 && len(e.Nodes[0]) > 0 {
			return Partition{Node: e.Nodes[0][0]}
		}
	}
	return Heal{}
}

// published follows the confirm tags of channel ch: confirm.select puts
// it in confirm mode, and each publish then takes the next tag.
func (w *traceWriter) published(e sim.Event, ch string) {
	switch e.Method {
	case protocol.ConfirmSelect:
		if w.confirming[ch] == nil {
			w.confirming[ch] = &confirmTags{confirmed: map[uint64]bool{}}
		}
	case protocol.BasicPublish:
		if ct := w.confirming[ch]; ct != nil {
			ct.steps = append(ct.steps, len(w.steps)-1)
		}
	}
}

// confirm writes the basic.ack or basic.nack push trace[i] as one confirm
// per publish it confirms, each under the step that published it, and
// reports whether it could (it knows every tag it confirms). A replay
// confirms each publish at its step, whereas RabbitMQ, and the wire
// server, confirm together the publishes they read together, in one
// basic.ack multiple: written as it happened, a run of concurrent
// publishers in confirm mode would not replay to its own results. A
// comment says where the broker sent such a confirm.
func (w *traceWriter) confirm(i int) bool {
	e := w.trace[i]
	ch, conn := w.evChan[i], w.evConn[i]
	ct := w.confirming[ch]
	if ct == nil || conn == "" || e.DeliveryTag == 0 || e.DeliveryTag > uint64(len(ct.steps)) {
		return false
	}
	tags := []uint64{e.DeliveryTag}
	if e.Multiple {
		tags = tags[:0]
		for t := uint64(1); t <= e.DeliveryTag; t++ {
			if !ct.confirmed[t] {
				tags = append(tags, t)
			}
		}
	}
	w.moveTo(e.At)
	if len(w.steps) == 0 {
		return true
	}
	last := len(w.steps) - 1
	moved := false
	for _, t := range tags {
		ct.confirmed[t] = true
		at := ct.steps[t-1]
		if w.heldSteps[at] {
			// A publish an alarm held is confirmed once the broker reads
			// it, after the clear, in a replay too.
			at = last
		}
		moved = moved || at != last
		w.steps[at].confirms = append(w.steps[at].confirms, traceConfirm{conn: conn, ch: ch, tag: t, nack: e.Method == protocol.BasicNack})
	}
	if moved {
		how := "basic.ack"
		if e.Method == protocol.BasicNack {
			how = "basic.nack"
		}
		if e.Multiple {
			how = "one " + how + " multiple=true"
		}
		what := "publish " + ranges(tags)
		if len(tags) > 1 {
			what = "publishes " + ranges(tags)
		}
		st := w.steps[last]
		st.comments = append(st.comments, fmt.Sprintf("after this step the broker confirmed %s of %s, in %s (it confirms together the publishes it reads together); a replay confirms each under its publish, where it is written",
			what, ch, how))
	}
	return true
}

// ofDirect reports whether op is a step of Broker.Publish's connection,
// or an advance among them.
func (w *traceWriter) ofDirect(op Op) bool {
	switch o := op.(type) {
	case Publish:
		return o.Channel == w.direct
	case Conn:
		return o.Name == w.directConn
	case OpenChannel:
		return o.Name == w.direct
	case Advance:
		return true
	}
	return false
}

// closeDirect closes the connection of Broker.Publish's steps once they
// are done: the run had no such connection, which a fault (a restart, a
// node's stop, every connection closed) would close in a replay. The
// next Broker.Publish opens another.
func (w *traceWriter) closeDirect() {
	conn := w.directConn
	w.direct, w.directConn = "", ""
	w.steps = append(w.steps, &traceStep{op: Close{Name: conn}})
}

// forget drops a closed connection's names.
func (w *traceWriter) forget(conn string) {
	delete(w.conns, conn)
	for k := range w.chans {
		if k.conn == conn {
			delete(w.chans, k)
		}
	}
}

// call returns the step of a method a client called on channel ch, or
// nil if the format has none: the verb that sends the method says how
// (verb.fromCall).
func (w *traceWriter) call(e sim.Event, ch string) Op {
	if v := traced[e.Method]; v != nil {
		return v.fromCall(w, e, ch)
	}
	return nil
}

// traceDriver plays a trace back to the runner: each step's results are
// the pushes the trace shows after it. The replies the trace does not
// hold (declare-ok's counts, purge-ok's and delete-ok's) come from the
// same steps run on a shadow simulator.
type traceDriver struct {
	w      *traceWriter
	shadow *simDriver
	final  *sim.Broker
	step   int // the step the next settle ends
}

func (d *traceDriver) connect(o Conn) error {
	_ = d.shadow.connect(o)
	return nil
}

func (d *traceDriver) openChannel(conn, ch string) error {
	_ = d.shadow.openChannel(conn, ch)
	return nil
}

func (d *traceDriver) closeChannel(ch string) error {
	_ = d.shadow.closeChannel(ch)
	return nil
}

func (d *traceDriver) closeConn(conn string) error {
	_ = d.shadow.closeConn(conn)
	return nil
}

func (d *traceDriver) do(ch string, op chanOp) (reply, error) {
	rep, _ := d.shadow.do(ch, op)
	if _, ok := op.(Get); ok {
		rep.got, rep.get = false, event{}
		for _, i := range d.w.steps[d.step].events {
			if e := d.w.trace[i]; e.Kind == sim.EventPush && e.Method == protocol.BasicGetOk {
				rep.got = true
				rep.get = event{kind: evDeliver, tag: e.DeliveryTag, redelivered: e.Redelivered, body: string(e.Body), left: e.Count,
					exchange: e.Exchange, key: e.RoutingKey}
			}
		}
	}
	return rep, nil
}

func (d *traceDriver) advance(dur time.Duration) { d.shadow.advance(dur) }
func (d *traceDriver) admin(op adminOp) error    { return d.shadow.admin(op) }
func (d *traceDriver) alarm(o Alarm) error       { return d.shadow.alarm(o) }
func (d *traceDriver) finish() error             { return nil }

// fault and leader: a trace of one simulator has no cluster steps.
func (d *traceDriver) fault(op faultOp) error { return d.shadow.fault(op) }
func (d *traceDriver) leader(q string) (leaderInfo, error) {
	return d.shadow.leader(q)
}

func (d *traceDriver) classicHomes(queues []string) (map[string]int, error) {
	return d.shadow.classicHomes(queues)
}

// settle returns the pushes the trace shows after the current step.
func (d *traceDriver) settle(bool) []event {
	d.shadow.settle(false)
	if d.step >= len(d.w.steps) {
		return nil
	}
	var out []event
	for _, i := range d.w.steps[d.step].events {
		e := d.w.trace[i]
		if e.Kind != sim.EventPush || d.w.evConn[i] == "" {
			continue
		}
		ev := event{conn: d.w.evConn[i], ch: d.w.evChan[i]}
		switch e.Method {
		case protocol.BasicDeliver:
			ev.kind, ev.ctag, ev.tag, ev.redelivered = evDeliver, d.w.tag(e.ConsumerTag), e.DeliveryTag, e.Redelivered
			ev.body, ev.exchange, ev.key = string(e.Body), e.Exchange, e.RoutingKey
		case protocol.BasicReturn:
			ev.kind, ev.body, ev.exchange, ev.key = evReturn, string(e.Body), e.Exchange, e.RoutingKey
			if e.Err != nil {
				ev.code, ev.text = e.Err.Code, strings.TrimPrefix(e.Err.Text, protocol.CodeName(e.Err.Code)+" - ")
			}
		case protocol.BasicAck, protocol.BasicNack:
			ev.kind, ev.tag, ev.multiple, ev.nack = evConfirm, e.DeliveryTag, e.Multiple, e.Method == protocol.BasicNack
		case protocol.BasicCancel:
			ev.kind, ev.ctag = evCancel, d.w.tag(e.ConsumerTag)
		case protocol.ChannelClose:
			ev.kind, ev.code, ev.text, ev.method = evChannelClose, e.Err.Code, e.Err.Text, e.Err.Method.String()
		case protocol.ConnectionClose:
			if e.Err == nil { // its node crashed (sim.Push.Drop): its socket is reset
				ev.kind, ev.ch, ev.text = evDropped, "", dropReset
				break
			}
			ev.kind, ev.ch, ev.code, ev.text, ev.method = evConnClose, "", e.Err.Code, e.Err.Text, e.Err.Method.String()
		case protocol.ConnectionBlocked:
			ev.kind, ev.ch, ev.text = evBlocked, "", e.Reason
		case protocol.ConnectionUnblock:
			ev.kind, ev.ch = evUnblocked, ""
		default:
			continue
		}
		out = append(out, ev)
	}
	for _, c := range d.w.steps[d.step].confirms {
		out = append(out, event{kind: evConfirm, conn: c.conn, ch: c.ch, tag: c.tag, nack: c.nack})
	}
	d.step++
	return out
}

// queueState shows the final broker's counts, or the shadow's without one.
func (d *traceDriver) queueState(q string) (queueState, error) {
	if d.final == nil {
		return d.shadow.queueState(q)
	}
	st, err := d.final.QueueStats("/", q)
	if err != nil {
		return queueState{status: "not found"}, nil
	}
	return queueState{ready: st.Ready, consumers: st.Consumers, unacked: st.Unacked + st.TimedOut}, nil
}
