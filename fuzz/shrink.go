package fuzz

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/scenarios"
)

// shrunk is the smallest scenario found that still diverges: its
// recording and the replay's difference from it.
type shrunk struct {
	rec         *scenarios.Scenario
	diff, where string
}

// shrink removes steps from s (delta debugging: chunks, then single
// steps), then words from the steps that remain (a publish's extra bodies,
// arguments, properties, headers), keeping each change that still
// diverges when recorded again on the broker and replayed. A candidate
// that does not parse (a step on a channel no step opens) is skipped.
func shrink(ctx context.Context, cfg Config, t target, s *scenarios.Scenario) (*shrunk, error) {
	ops := opsOf(s)
	best, err := tryOps(ctx, cfg, t, s, ops)
	if err != nil || best == nil {
		return nil, err // the whole scenario no longer diverges: nothing to shrink
	}
	for n := 2; len(ops) >= 2; {
		chunks := split(len(ops), n)
		var cands [][]scenarios.Op
		for _, c := range chunks {
			if cand := without(ops, c); len(cand) < len(ops) {
				cands = append(cands, cand)
			}
		}
		i, r := firstDiverging(ctx, cfg, t, s, cands)
		if ctx.Err() != nil {
			return best, ctx.Err()
		}
		if i >= 0 {
			ops, best = cands[i], r
			n = max(n-1, 2)
			continue
		}
		if n >= len(ops) {
			break
		}
		n = min(2*n, len(ops))
	}
	if cand := slices.DeleteFunc(slices.Clone(ops), isAdvance); len(cand) < len(ops) && !timedOps(cand) {
		// With no timer left, the advances wait for nothing.
		if r, err := tryOps(ctx, cfg, t, s, cand); err == nil && r != nil {
			ops, best = cand, r
		}
	}
	for {
		cands := simplerOps(ops)
		i, r := firstDiverging(ctx, cfg, t, s, cands)
		if i < 0 {
			return best, ctx.Err()
		}
		ops, best = cands[i], r
	}
}

// without returns ops without the steps of chunk c ([start, end)), except
// its advances: the generator placed each advance so that no timer fires
// while the broker's clock and the simulator's disagree (before an admin
// step, which takes seconds, no timer runs at all), and a candidate
// without one could diverge by the broker's clock alone.
func without(ops []scenarios.Op, c [2]int) []scenarios.Op {
	out := slices.Clone(ops[:c[0]])
	for _, op := range ops[c[0]:c[1]] {
		if isAdvance(op) {
			out = append(out, op)
		}
	}
	return append(out, ops[c[1]:]...)
}

func isAdvance(op scenarios.Op) bool { _, ok := op.(scenarios.Advance); return ok }

// split cuts n items into k nearly equal chunks, as [start, end) pairs.
func split(n, k int) [][2]int {
	var out [][2]int
	for i := range k {
		a, b := i*n/k, (i+1)*n/k
		if a < b {
			out = append(out, [2]int{a, b})
		}
	}
	return out
}

// firstDiverging tries candidates a few at a time and returns the first,
// in order, that still diverges (-1 if none does).
func firstDiverging(ctx context.Context, cfg Config, t target, s *scenarios.Scenario, cands [][]scenarios.Op) (int, *shrunk) {
	par := cfg.Parallel
	if t.cluster {
		par = 1
	}
	for lo := 0; lo < len(cands); lo += par {
		hi := min(lo+par, len(cands))
		results := make([]*shrunk, hi-lo)
		var wg sync.WaitGroup
		for i := lo; i < hi; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i-lo], _ = tryOps(ctx, cfg, t, s, cands[i])
			}()
		}
		wg.Wait()
		for i, r := range results {
			if r != nil {
				return lo + i, r
			}
		}
		if ctx.Err() != nil {
			break
		}
	}
	return -1, nil
}

// tryOps records a candidate and reports its divergence, or nil when it
// does not parse or replays identically.
func tryOps(ctx context.Context, cfg Config, t target, s *scenarios.Scenario, ops []scenarios.Op) (*shrunk, error) {
	cand, ok := build(s, ops)
	if !ok {
		return nil, nil
	}
	rec, err := record(ctx, cand, t)
	if errors.Is(err, errSlow) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	diff, where, err := replay(cfg, rec)
	if err != nil || diff == "" {
		return nil, err
	}
	return &shrunk{rec: rec, diff: diff, where: where}, nil
}

// opsOf returns a scenario's operations.
func opsOf(s *scenarios.Scenario) []scenarios.Op {
	out := make([]scenarios.Op, len(s.Steps))
	for i, st := range s.Steps {
		out[i] = st.Op
	}
	return out
}

// build makes an unrecorded scenario of ops with s's name and cluster, if
// it parses.
func build(s *scenarios.Scenario, ops []scenarios.Op) (*scenarios.Scenario, bool) {
	c := scenarios.New(s.Name, "", "", ops...)
	if s.Cluster != nil {
		c.SetCluster(&scenarios.ClusterSpec{Nodes: s.Cluster.Nodes, PartitionHandling: s.Cluster.PartitionHandling})
	}
	p, err := scenarios.Parse(s.Name+".txt", c.Format())
	if err != nil {
		return nil, false
	}
	return p, true
}

// unrecorded returns s's steps without results.
func unrecorded(s *scenarios.Scenario) *scenarios.Scenario {
	c, _ := build(s, opsOf(s))
	return c
}

// simplerOps returns the candidates one word simpler than ops: a publish
// with a body, a property or a header fewer, a declare, consume or bind
// with an argument fewer.
func simplerOps(ops []scenarios.Op) [][]scenarios.Op {
	var out [][]scenarios.Op
	with := func(i int, op scenarios.Op) {
		c := slices.Clone(ops)
		c[i] = op
		out = append(out, c)
	}
	for i, op := range ops {
		switch o := op.(type) {
		case scenarios.Publish:
			for j := range o.Bodies {
				if len(o.Bodies) > 1 {
					p := o
					p.Bodies = slices.Delete(slices.Clone(o.Bodies), j, j+1)
					with(i, p)
				}
			}
			for _, h := range withoutEach(o.Props.Headers) {
				p := o
				p.Props.Headers = h
				with(i, p)
			}
			for _, p := range simplerProps(o) {
				with(i, p)
			}
		case scenarios.DeclareQueue:
			for _, a := range withoutEach(o.Args) {
				d := o
				d.Args = a
				with(i, d)
			}
		case scenarios.DeclareExchange:
			for _, a := range withoutEach(o.Args) {
				d := o
				d.Args = a
				with(i, d)
			}
		case scenarios.Consume:
			for _, a := range withoutEach(o.Args) {
				c := o
				c.Args = a
				with(i, c)
			}
		}
	}
	return out
}

// withoutEach returns t without each of its keys in turn.
func withoutEach(t protocol.Table) []protocol.Table {
	var out []protocol.Table
	for _, k := range slices.Sorted(maps.Keys(t)) {
		c := maps.Clone(t)
		delete(c, k)
		if len(c) == 0 {
			c = nil
		}
		out = append(out, c)
	}
	return out
}

// simplerProps returns the publish without each property it sets.
func simplerProps(o scenarios.Publish) []scenarios.Publish {
	var out []scenarios.Publish
	clear := []func(*protocol.Properties) bool{
		func(p *protocol.Properties) bool { ok := p.DeliveryMode != 0; p.DeliveryMode = 0; return ok },
		func(p *protocol.Properties) bool { ok := p.Priority != 0; p.Priority = 0; return ok },
		func(p *protocol.Properties) bool { ok := p.Expiration != ""; p.Expiration = ""; return ok },
		func(p *protocol.Properties) bool { ok := p.MessageID != ""; p.MessageID = ""; return ok },
		func(p *protocol.Properties) bool { ok := p.CorrelationID != ""; p.CorrelationID = ""; return ok },
		func(p *protocol.Properties) bool { ok := p.ContentType != ""; p.ContentType = ""; return ok },
		func(p *protocol.Properties) bool { ok := p.Type != ""; p.Type = ""; return ok },
		func(p *protocol.Properties) bool { ok := p.AppID != ""; p.AppID = ""; return ok },
		func(p *protocol.Properties) bool { ok := p.UserID != ""; p.UserID = ""; return ok },
		func(p *protocol.Properties) bool { ok := p.ReplyTo != ""; p.ReplyTo = ""; return ok },
	}
	for _, c := range clear {
		p := o
		if c(&p.Props) {
			out = append(out, p)
		}
	}
	if o.Mandatory {
		p := o
		p.Mandatory = false
		out = append(out, p)
	}
	return out
}
