package scenarios

// ShowHeld prints, for every consumer of an open channel and every channel's
// basic.get deliveries, what it holds unsettled: "held".
type ShowHeld struct{}

func init() {
	register(&verb{name: "held", usage: "held", what: "what consumers hold",
		build: func(a *argSet) (Op, error) { return ShowHeld{}, nil }})
}

func (ShowHeld) isOp()   {}
func (ShowHeld) silent() {}

// String returns the ShowHeld step line.
func (ShowHeld) String() string { return "held" }

// run renders what every consumer of an open channel, and every open
// channel's basic.get, holds unsettled.
func (ShowHeld) run(r *runner, _ *rchan) ([]string, reply, error) {
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
	return out, reply{}, nil
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
