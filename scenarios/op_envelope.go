package scenarios

import "fmt"

// ShowEnvelope prints the exchange and routing key of the channel's latest
// delivery (to a consumer or by basic.get) of a message, as
// "exchange=X key=K": "envelope ch1 m1". Dead-lettering rewrites both.
type ShowEnvelope struct{ Channel, Msg string }

func init() {
	register(&verb{name: "envelope", usage: "envelope CHANNEL MSG", minPos: 2, maxPos: 2, what: "the envelope",
		build: func(a *argSet) (Op, error) { return ShowEnvelope{Channel: a.str(0), Msg: a.str(1)}, nil }})
}

func (ShowEnvelope) isOp()             {}
func (ShowEnvelope) silent()           {}
func (o ShowEnvelope) channel() string { return o.Channel }

// String returns the ShowEnvelope step line.
func (o ShowEnvelope) String() string { return line("envelope", word(o.Channel), word(o.Msg)) }

// run renders the exchange and routing key of the channel's latest
// delivery of the message.
func (o ShowEnvelope) run(_ *runner, ch *rchan) ([]string, reply, error) {
	e, ok := ch.latest[o.Msg]
	if !ok {
		return ch.noDelivery(o.Msg), reply{}, nil
	}
	return []string{fmt.Sprintf("exchange=%s key=%s", word(e.exchange), word(e.key))}, reply{}, nil
}
