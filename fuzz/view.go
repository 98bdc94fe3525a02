package fuzz

import (
	"strings"
	"time"

	"github.com/amqpsim/amqpsim/scenarios"
	"github.com/amqpsim/amqpsim/sim"
)

// view is what the simulator says the steps so far did: which channels
// and connections the broker closed, what each channel holds unsettled,
// which messages it was given, and its live consumers. The generator
// consults it so that settlements name real deliveries and steps go to
// channels that are open; a wrong answer of the simulator shows as a
// divergence at the step that caused it, and only changes what the
// generator does next.
type view struct {
	closed    map[string]bool     // channels and connections closed by the broker or the client
	held      map[string][]heldAt // per channel, its unsettled deliveries in tag order
	delivered map[string][]string // per channel, every message it was given
	consumers map[string][]string // per channel, its live consumer tags
	consumed  map[string]int      // per queue, its live consumers
	last      []string            // the last step's result lines
	failed    bool                // the last step's replay failed to run
	// deadLettered is the virtual time of the last dead letter that was
	// not dropped (-1: none): it may have reached a stream.
	deadLettered time.Duration
}

// refused reports whether the broker closed a channel or connection in
// answer to the last step.
func (v view) refused() bool {
	for _, l := range v.last {
		if strings.Contains(l, " <- channel.close") || strings.Contains(l, " <- connection.close") {
			return true
		}
	}
	return false
}

type heldAt struct {
	tag uint64
	msg string
}

func silentOp(op scenarios.Op) bool { return scenarios.Silent(op) }

// replayView replays the steps so far on the default release's simulator.
func replayView(g *gen) view {
	v := view{closed: map[string]bool{}, held: map[string][]heldAt{}, delivered: map[string][]string{}, consumers: map[string][]string{}, consumed: map[string]int{}, deadLettered: -1}
	res, err := scenarios.Replay(g.scenario("view", ""))
	if res == nil {
		v.failed = true
		return v
	}
	v.failed = err != nil
	if n := len(res.Got); n > 0 {
		v.last = res.Got[n-1]
	}
	for _, lines := range res.Got {
		for _, l := range lines {
			who, what, ok := strings.Cut(l, " <- ")
			if !ok {
				continue
			}
			switch {
			case strings.HasPrefix(what, "channel.close"), strings.HasPrefix(what, "connection.close"),
				what == "connection dropped", what == "login refused", what == "connection refused":
				v.closed[who] = true
			}
		}
	}
	for _, e := range res.Trace {
		if e.Kind == sim.EventDeadLetter && !e.Dropped {
			v.deadLettered = e.At
		}
	}
	for _, h := range res.Holdings {
		v.delivered[h.Channel] = append(v.delivered[h.Channel], h.Msg)
		if h.Until == -1 && h.How == "" {
			v.held[h.Channel] = append(v.held[h.Channel], heldAt{tag: h.Tag, msg: h.Msg})
		}
	}
	for _, c := range res.Consumers {
		if c.Until == -1 {
			v.consumers[c.Channel] = append(v.consumers[c.Channel], tagOf(c.Label))
			v.consumed[c.Queue]++
		}
	}
	return v
}

// tagOf returns the consumer tag of a label (TAG or CHANNEL.TAG).
func tagOf(label string) string {
	if i := strings.LastIndexByte(label, '.'); i >= 0 {
		return label[i+1:]
	}
	return label
}

// open reports whether a channel is open as far as the client and the
// simulator know.
func (g *gen) open(ch *gchan) bool {
	return !ch.closed && !ch.conn.closed && !g.view.closed[ch.name] && !g.view.closed[ch.conn.name]
}

// openChans returns the open channels a step may use: on a cluster, not
// those on a node cut off from the others, where most methods wait for
// the majority (docs/cluster.md, section 7).
func (g *gen) openChans() []*gchan {
	var out []*gchan
	for _, ch := range g.chans {
		if g.open(ch) && !g.cluster.isolated(ch.conn.node) {
			out = append(out, ch)
		}
	}
	return out
}

// openConns returns the open connections a step may use.
func (g *gen) openConns() []*gconn {
	var out []*gconn
	for _, c := range g.conns {
		if !c.closed && !g.view.closed[c.name] && !g.cluster.isolated(c.node) {
			out = append(out, c)
		}
	}
	return out
}

// liveQueues returns the queues no step deleted.
func (g *gen) liveQueues() []*gqueue {
	var out []*gqueue
	for _, q := range g.queues {
		if !q.deleted {
			out = append(out, q)
		}
	}
	return out
}

// liveExchanges returns the exchanges no step deleted.
func (g *gen) liveExchanges() []*gexchange {
	var out []*gexchange
	for _, x := range g.exchanges {
		if !x.deleted {
			out = append(out, x)
		}
	}
	return out
}
