package scenarios

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/amqpsim/amqpsim/protocol"
)

// verb describes one step verb: its positional words, bare flags, options,
// and whether it takes arguments (x-NAME=V, arg.NAME=V) or message
// properties and headers (header.NAME=V).
type verb struct {
	usage   string
	minPos  int
	maxPos  int // -1: any number
	flags   []string
	options []string
	args    bool
	props   bool
	build   func(a *argSet) (Op, error)
}

// argSet is a tokenized step with its words sorted by kind.
type argSet struct {
	verb    string
	pos     []token
	flags   map[string]bool
	opts    map[string]token
	args    protocol.Table
	headers protocol.Table
}

func (a *argSet) str(i int) string { return a.pos[i].val }

func (a *argSet) opt(k string) (token, bool) {
	t, ok := a.opts[k]
	return t, ok
}

// fail reports an error at the column of positional word i (or of the verb).
type colError struct {
	col int
	msg string
}

func (e *colError) Error() string { return e.msg }

func (a *argSet) errAt(t token, format string, args ...any) error {
	return &colError{col: t.col, msg: fmt.Sprintf(format, args...)}
}

func (a *argSet) boolOpt(k string, def bool) (bool, error) {
	t, ok := a.opts[k]
	if !ok {
		return def, nil
	}
	v, err := strconv.ParseBool(t.val)
	if err != nil {
		return false, a.errAt(t, "expected %s=true or %s=false, got %q", k, k, t.val)
	}
	return v, nil
}

func (a *argSet) intOpt(k string, bits int) (int, bool, error) {
	t, ok := a.opts[k]
	if !ok {
		return 0, false, nil
	}
	n, err := strconv.ParseUint(t.val, 10, bits)
	if err != nil {
		return 0, false, a.errAt(t, "expected a number for %s, got %q", k, t.val)
	}
	return int(n), true, nil
}

var verbs map[string]*verb

func init() {
	verbs = map[string]*verb{
		"conn": {usage: "conn NAME [user=U password=P]", minPos: 1, maxPos: 1, options: []string{"user", "password"}, build: func(a *argSet) (Op, error) {
			return Conn{Name: a.str(0), User: a.opts["user"].val, Password: a.opts["password"].val}, nil
		}},
		"channel": {usage: "channel CONN.NAME", minPos: 1, maxPos: 1, build: func(a *argSet) (Op, error) {
			c, n, ok := strings.Cut(a.str(0), ".")
			if !ok || c == "" || n == "" || a.pos[0].quoted {
				return nil, a.errAt(a.pos[0], "expected CONN.NAME (a connection and a new channel name), got %q", a.str(0))
			}
			return OpenChannel{Conn: c, Name: n}, nil
		}},
		"close": {usage: "close CHANNEL|CONN", minPos: 1, maxPos: 1, build: func(a *argSet) (Op, error) {
			return Close{Name: a.str(0)}, nil
		}},
		"declare-queue": {usage: "declare-queue CHANNEL QUEUE [passive] [durable] [exclusive] [auto-delete] [nowait] [x-ARG=V...]",
			minPos: 2, maxPos: 2, flags: []string{"passive", "durable", "exclusive", "auto-delete", "nowait"}, args: true,
			build: func(a *argSet) (Op, error) {
				return DeclareQueue{Channel: a.str(0), Queue: a.str(1), Passive: a.flags["passive"], Durable: a.flags["durable"],
					Exclusive: a.flags["exclusive"], AutoDelete: a.flags["auto-delete"], NoWait: a.flags["nowait"], Args: a.args}, nil
			}},
		"declare-exchange": {usage: "declare-exchange CHANNEL EXCHANGE KIND [passive] [durable] [auto-delete] [internal] [x-ARG=V...]",
			minPos: 3, maxPos: 3, flags: []string{"passive", "durable", "auto-delete", "internal"}, args: true,
			build: func(a *argSet) (Op, error) {
				return DeclareExchange{Channel: a.str(0), Exchange: a.str(1), Kind: a.str(2), Passive: a.flags["passive"],
					Durable: a.flags["durable"], AutoDelete: a.flags["auto-delete"], Internal: a.flags["internal"], Args: a.args}, nil
			}},
		"delete-queue": {usage: "delete-queue CHANNEL QUEUE [if-unused] [if-empty]", minPos: 2, maxPos: 2,
			flags: []string{"if-unused", "if-empty"}, build: func(a *argSet) (Op, error) {
				return DeleteQueue{Channel: a.str(0), Queue: a.str(1), IfUnused: a.flags["if-unused"], IfEmpty: a.flags["if-empty"]}, nil
			}},
		"delete-exchange": {usage: "delete-exchange CHANNEL EXCHANGE [if-unused]", minPos: 2, maxPos: 2,
			flags: []string{"if-unused"}, build: func(a *argSet) (Op, error) {
				return DeleteExchange{Channel: a.str(0), Exchange: a.str(1), IfUnused: a.flags["if-unused"]}, nil
			}},
		"bind": {usage: "bind CHANNEL QUEUE EXCHANGE [key=KEY] [ARG=V...]", minPos: 3, maxPos: 3, options: []string{"key"}, args: true,
			build: func(a *argSet) (Op, error) {
				return Bind{Channel: a.str(0), Queue: a.str(1), Exchange: a.str(2), Key: a.opts["key"].val, Args: a.args}, nil
			}},
		"unbind": {usage: "unbind CHANNEL QUEUE EXCHANGE [key=KEY] [ARG=V...]", minPos: 3, maxPos: 3, options: []string{"key"}, args: true,
			build: func(a *argSet) (Op, error) {
				return Unbind{Channel: a.str(0), Queue: a.str(1), Exchange: a.str(2), Key: a.opts["key"].val, Args: a.args}, nil
			}},
		"bind-exchange": {usage: "bind-exchange CHANNEL DESTINATION SOURCE [key=KEY] [ARG=V...]", minPos: 3, maxPos: 3, options: []string{"key"}, args: true,
			build: func(a *argSet) (Op, error) {
				return ExchangeBind{Channel: a.str(0), Destination: a.str(1), Source: a.str(2), Key: a.opts["key"].val, Args: a.args}, nil
			}},
		"unbind-exchange": {usage: "unbind-exchange CHANNEL DESTINATION SOURCE [key=KEY] [ARG=V...]", minPos: 3, maxPos: 3, options: []string{"key"}, args: true,
			build: func(a *argSet) (Op, error) {
				return ExchangeUnbind{Channel: a.str(0), Destination: a.str(1), Source: a.str(2), Key: a.opts["key"].val, Args: a.args}, nil
			}},
		"policy": {usage: "policy NAME ^PATTERN [apply-to=queues|exchanges|all] [priority=N] arg.KEY=V...", minPos: 2, maxPos: 2,
			options: []string{"apply-to", "priority"}, args: true,
			build: func(a *argSet) (Op, error) {
				p := SetPolicy{Name: a.str(0), Pattern: a.str(1), ApplyTo: a.opts["apply-to"].val, Definition: a.args}
				if !strings.HasPrefix(p.Pattern, "^") {
					return nil, a.errAt(a.pos[1], "expected a pattern that starts with ^")
				}
				if pr, ok := a.opt("priority"); ok {
					n, err := strconv.Atoi(pr.val)
					if err != nil {
						return nil, a.errAt(pr, "expected an integer priority")
					}
					p.Priority = n
				}
				for k := range p.Definition {
					if strings.HasPrefix(k, "x-") {
						return nil, a.errAt(a.pos[0], "policy keys have no x- prefix: write arg.%s", strings.TrimPrefix(k, "x-"))
					}
				}
				return p, nil
			}},
		"alarm": alarmVerb,
		"clear-policy": {usage: "clear-policy NAME", minPos: 1, maxPos: 1, build: func(a *argSet) (Op, error) {
			return ClearPolicy{Name: a.str(0)}, nil
		}},
		"tx":       txVerb(TxSelect),
		"commit":   txVerb(TxCommit),
		"rollback": txVerb(TxRollback),
		"purge": {usage: "purge CHANNEL QUEUE", minPos: 2, maxPos: 2, build: func(a *argSet) (Op, error) {
			return Purge{Channel: a.str(0), Queue: a.str(1)}, nil
		}},
		"qos": {usage: "qos CHANNEL COUNT [global] [size=BYTES]", minPos: 2, maxPos: 2, flags: []string{"global"}, options: []string{"size"},
			build: func(a *argSet) (Op, error) {
				n, err := strconv.ParseUint(a.str(1), 10, 16)
				if err != nil {
					return nil, a.errAt(a.pos[1], "expected a prefetch count 0..65535, got %q", a.str(1))
				}
				size, _, err := a.intOpt("size", 32)
				if err != nil {
					return nil, err
				}
				return Qos{Channel: a.str(0), Count: int(n), Size: size, Global: a.flags["global"]}, nil
			}},
		"consume": {usage: "consume CHANNEL QUEUE tag=TAG [no-ack] [exclusive] [x-ARG=V...]", minPos: 2, maxPos: 2,
			flags: []string{"no-ack", "exclusive"}, options: []string{"tag"}, args: true,
			build: func(a *argSet) (Op, error) {
				t, ok := a.opt("tag")
				if !ok || t.val == "" {
					return nil, a.errAt(a.pos[1], "expected tag=TAG after the queue: scenarios use explicit consumer tags")
				}
				return Consume{Channel: a.str(0), Queue: a.str(1), Tag: t.val, NoAck: a.flags["no-ack"], Exclusive: a.flags["exclusive"], Args: a.args}, nil
			}},
		"cancel": {usage: "cancel CHANNEL TAG", minPos: 2, maxPos: 2, build: func(a *argSet) (Op, error) {
			return Cancel{Channel: a.str(0), Tag: a.str(1)}, nil
		}},
		"publish": {usage: "publish CHANNEL KEY BODY... [exchange=X] [mandatory] [immediate] [persistent] [PROPERTY=V...] [header.NAME=V...]",
			minPos: 3, maxPos: -1, flags: []string{"mandatory", "immediate", "persistent"}, options: append([]string{"exchange"}, propNames...), props: true,
			build: buildPublish},
		"confirm": {usage: "confirm CHANNEL", minPos: 1, maxPos: 1, build: func(a *argSet) (Op, error) {
			return Confirm{Channel: a.str(0)}, nil
		}},
		"get": {usage: "get CHANNEL QUEUE [no-ack]", minPos: 2, maxPos: 2, flags: []string{"no-ack"}, build: func(a *argSet) (Op, error) {
			return Get{Channel: a.str(0), Queue: a.str(1), NoAck: a.flags["no-ack"]}, nil
		}},
		"ack":    settleVerb("ack"),
		"nack":   settleVerb("nack"),
		"reject": settleVerb("reject"),
		"recover": {usage: "recover CHANNEL [requeue=false]", minPos: 1, maxPos: 1, flags: []string{"requeue"}, options: []string{"requeue"},
			build: func(a *argSet) (Op, error) {
				rq, err := a.boolOpt("requeue", true)
				return Recover{Channel: a.str(0), Requeue: rq}, err
			}},
		"flow": {usage: "flow CHANNEL on|off", minPos: 2, maxPos: 2, build: func(a *argSet) (Op, error) {
			switch a.str(1) {
			case "on":
				return Flow{Channel: a.str(0), Active: true}, nil
			case "off":
				return Flow{Channel: a.str(0)}, nil
			}
			return nil, a.errAt(a.pos[1], "expected on or off, got %q", a.str(1))
		}},
		"advance": {usage: "advance DURATION", minPos: 1, maxPos: 1, build: func(a *argSet) (Op, error) {
			d, err := time.ParseDuration(a.str(0))
			if err != nil || d < 0 {
				return nil, a.errAt(a.pos[0], "expected a duration such as 500ms or 31m, got %q", a.str(0))
			}
			return Advance{D: d}, nil
		}},
		"queue": {usage: "queue QUEUE", minPos: 1, maxPos: 1, build: func(a *argSet) (Op, error) {
			return ShowQueue{Queue: a.str(0)}, nil
		}},
		"held": {usage: "held", build: func(a *argSet) (Op, error) { return ShowHeld{}, nil }},
		"headers": {usage: "headers CHANNEL MSG", minPos: 2, maxPos: 2, build: func(a *argSet) (Op, error) {
			return ShowHeaders{Channel: a.str(0), Msg: a.str(1)}, nil
		}},
		"envelope": {usage: "envelope CHANNEL MSG", minPos: 2, maxPos: 2, build: func(a *argSet) (Op, error) {
			return ShowEnvelope{Channel: a.str(0), Msg: a.str(1)}, nil
		}},
	}
	addUserVerbs(verbs)
}

func txVerb(m TxMethod) *verb {
	return &verb{usage: txVerbs[m] + " CHANNEL", minPos: 1, maxPos: 1, build: func(a *argSet) (Op, error) {
		return Tx{Channel: a.str(0), Method: m}, nil
	}}
}

func settleVerb(m string) *verb {
	v := &verb{usage: m + " CHANNEL MSG|#TAG [multiple]", minPos: 2, maxPos: 2, flags: []string{"multiple"}, options: []string{"multiple"}}
	if m != "ack" {
		v.usage += " [requeue|requeue=false]"
		v.flags = append(v.flags, "requeue")
		v.options = append(v.options, "requeue")
	}
	if m == "reject" {
		v.usage = "reject CHANNEL MSG|#TAG [requeue|requeue=false]"
		v.flags, v.options = []string{"requeue"}, []string{"requeue"}
	}
	v.build = func(a *argSet) (Op, error) {
		s := Settle{Method: m, Channel: a.str(0)}
		t := a.pos[1]
		if strings.HasPrefix(t.val, "#") && !t.quoted {
			n, err := strconv.ParseUint(t.val[1:], 10, 64)
			if err != nil {
				return nil, a.errAt(t, "expected a delivery tag #N, got %q", t.val)
			}
			s.Tag = n
		} else {
			s.Msg = t.val
		}
		var err error
		if s.Multiple, err = a.boolOpt("multiple", a.flags["multiple"]); err != nil {
			return nil, err
		}
		if m != "ack" {
			if s.Requeue, err = a.boolOpt("requeue", true); err != nil {
				return nil, err
			}
		}
		return s, nil
	}
	return v
}

func buildPublish(a *argSet) (Op, error) {
	p := Publish{Channel: a.str(0), Key: a.str(1), Mandatory: a.flags["mandatory"], Immediate: a.flags["immediate"]}
	for _, t := range a.pos[2:] {
		p.Bodies = append(p.Bodies, t.val)
	}
	p.Exchange = a.opts["exchange"].val
	if a.flags["persistent"] {
		p.Props.DeliveryMode = 2
	}
	if n, ok, err := a.intOpt("delivery-mode", 8); err != nil {
		return nil, err
	} else if ok {
		p.Props.DeliveryMode = uint8(n)
	}
	if n, _, err := a.intOpt("priority", 8); err != nil {
		return nil, err
	} else {
		p.Props.Priority = uint8(n)
	}
	for k, dst := range map[string]*string{"content-type": &p.Props.ContentType, "content-encoding": &p.Props.ContentEncoding,
		"correlation-id": &p.Props.CorrelationID, "reply-to": &p.Props.ReplyTo, "expiration": &p.Props.Expiration,
		"message-id": &p.Props.MessageID, "type": &p.Props.Type, "user-id": &p.Props.UserID, "app-id": &p.Props.AppID} {
		*dst = a.opts[k].val
	}
	p.Props.Headers = a.headers
	return p, nil
}

// parseOp parses one step line.
func parseOp(text string) (Op, error) {
	toks, err := tokenize(text)
	if err != nil {
		return nil, err
	}
	if len(toks) == 0 {
		return nil, &colError{col: 1, msg: "expected a step"}
	}
	head := toks[0]
	v, ok := verbs[head.val]
	if !ok || head.key != "" || head.quoted {
		return nil, &colError{col: head.col, msg: fmt.Sprintf("unknown step %q (expected one of %s)", head.raw, strings.Join(verbNames(), ", "))}
	}
	a := &argSet{verb: head.val, flags: map[string]bool{}, opts: map[string]token{}}
	for _, t := range toks[1:] {
		switch {
		case t.key == "" && !t.quoted && slices.Contains(v.flags, t.val):
			a.flags[t.val] = true
		case t.key == "":
			a.pos = append(a.pos, t)
		case slices.Contains(v.options, t.key):
			if _, dup := a.opts[t.key]; dup {
				return nil, &colError{col: t.col, msg: fmt.Sprintf("option %s given twice", t.key)}
			}
			a.opts[t.key] = t
		case v.args && (strings.HasPrefix(t.key, "x-") || strings.HasPrefix(t.key, "arg.")):
			val, err := parseValue(t.raw, t.quoted, t.val)
			if err != nil {
				return nil, &colError{col: t.col, msg: err.Error()}
			}
			if a.args == nil {
				a.args = protocol.Table{}
			}
			a.args[strings.TrimPrefix(t.key, "arg.")] = val
		case v.props && strings.HasPrefix(t.key, "header."):
			val, err := parseValue(t.raw, t.quoted, t.val)
			if err != nil {
				return nil, &colError{col: t.col, msg: err.Error()}
			}
			if a.headers == nil {
				a.headers = protocol.Table{}
			}
			a.headers[strings.TrimPrefix(t.key, "header.")] = val
		default:
			return nil, &colError{col: t.col, msg: fmt.Sprintf("unknown option %q for %s (usage: %s)", t.key, head.val, v.usage)}
		}
	}
	if len(a.pos) < v.minPos {
		col := len(text) + 1
		return nil, &colError{col: col, msg: fmt.Sprintf("expected %d word(s) after %s (usage: %s)", v.minPos, head.val, v.usage)}
	}
	if v.maxPos >= 0 && len(a.pos) > v.maxPos {
		t := a.pos[v.maxPos]
		return nil, &colError{col: t.col, msg: fmt.Sprintf("unexpected %q (usage: %s)", t.raw, v.usage)}
	}
	return v.build(a)
}

func verbNames() []string {
	out := make([]string, 0, len(verbs))
	for k := range verbs {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sortStrings(s []string) { sort.Strings(s) }
