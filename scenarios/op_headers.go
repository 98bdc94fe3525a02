package scenarios

// ShowHeaders prints the headers of the channel's latest delivery (to a
// consumer or by basic.get) of a message, one line per header:
// "headers ch1 m1".
type ShowHeaders struct{ Channel, Msg string }

func init() {
	register(&verb{name: "headers", usage: "headers CHANNEL MSG", minPos: 2, maxPos: 2, what: "headers",
		build: func(a *argSet) (Op, error) { return ShowHeaders{Channel: a.str(0), Msg: a.str(1)}, nil }})
}

func (ShowHeaders) isOp()             {}
func (ShowHeaders) silent()           {}
func (o ShowHeaders) channel() string { return o.Channel }

// String returns the ShowHeaders step line.
func (o ShowHeaders) String() string { return line("headers", word(o.Channel), word(o.Msg)) }

// run renders the headers of the channel's latest delivery of the message.
func (o ShowHeaders) run(_ *runner, ch *rchan) ([]string, reply, error) {
	if _, ok := ch.lastTag[o.Msg]; !ok {
		return ch.noDelivery(o.Msg), reply{}, nil
	}
	return headerLines(ch.latest[o.Msg].headers), reply{}, nil
}
