package scenarios

import "fmt"

// names checks, while a file is parsed, that every connection and channel a
// step names was opened by an earlier step, and that new names are unique.
type names struct {
	conns map[string]bool
	chans map[string]string // channel name → its connection
}

func newNames() *names { return &names{conns: map[string]bool{}, chans: map[string]string{}} }

// check returns the column and message of the first problem with op, or "".
func (n *names) check(op Op, text string) (int, string) {
	col := 1
	if toks, err := tokenize(text); err == nil && len(toks) > 1 {
		col = toks[1].col
	}
	fresh := func(name, what string) string {
		if !nameRE.MatchString(name) {
			return fmt.Sprintf("expected a %s name of letters, digits, '_' or '-', got %q", what, name)
		}
		if n.conns[name] || n.chans[name] != "" {
			return fmt.Sprintf("the name %q is already used by an earlier conn or channel step", name)
		}
		return ""
	}
	switch o := op.(type) {
	case Conn:
		if msg := fresh(o.Name, "connection"); msg != "" {
			return col, msg
		}
		n.conns[o.Name] = true
	case OpenChannel:
		if !n.conns[o.Conn] {
			return col, fmt.Sprintf("unknown connection %q (open it first with \"conn %s\")", o.Conn, o.Conn)
		}
		if msg := fresh(o.Name, "channel"); msg != "" {
			return col, msg
		}
		n.chans[o.Name] = o.Conn
	case Close:
		if !n.conns[o.Name] && n.chans[o.Name] == "" {
			return col, fmt.Sprintf("unknown connection or channel %q", o.Name)
		}
	case Advance, ShowQueue, ShowHeld, SetPolicy, ClearPolicy, AddUser, DeleteUser, SetPermissions, ClearPermissions, SetUserTags, SetTopicPermissions, SetOperatorPolicy, ClearOperatorPolicy, Alarm:
	default:
		ch := channelOf(op)
		if n.chans[ch] == "" {
			return col, fmt.Sprintf("unknown channel %q (open it first with \"channel CONN.%s\")", ch, ch)
		}
	}
	return 0, ""
}

// channelOf returns the channel an operation runs on, or "".
func channelOf(op Op) string {
	switch o := op.(type) {
	case DeclareQueue:
		return o.Channel
	case DeclareExchange:
		return o.Channel
	case DeleteQueue:
		return o.Channel
	case DeleteExchange:
		return o.Channel
	case Bind:
		return o.Channel
	case Unbind:
		return o.Channel
	case Purge:
		return o.Channel
	case Qos:
		return o.Channel
	case Consume:
		return o.Channel
	case Cancel:
		return o.Channel
	case Publish:
		return o.Channel
	case Confirm:
		return o.Channel
	case ExchangeBind:
		return o.Channel
	case ExchangeUnbind:
		return o.Channel
	case Tx:
		return o.Channel
	case Get:
		return o.Channel
	case Settle:
		return o.Channel
	case Recover:
		return o.Channel
	case Flow:
		return o.Channel
	case ShowHeaders:
		return o.Channel
	case ShowEnvelope:
		return o.Channel
	}
	return ""
}
