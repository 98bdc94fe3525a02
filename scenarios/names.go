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
// The steps that open or close connections and channels check their names
// themselves (checkNames); any other must name an open channel, if it
// names one.
func (n *names) check(op Op, text string) (int, string) {
	col := 1
	if toks, err := tokenize(text); err == nil && len(toks) > 1 {
		col = toks[1].col
	}
	switch o := op.(type) {
	case namer:
		if msg := o.checkNames(n); msg != "" {
			return col, msg
		}
	case onChannel:
		if ch := o.channel(); n.chans[ch] == "" {
			return col, fmt.Sprintf("unknown channel %q (open it first with \"channel CONN.%s\")", ch, ch)
		}
	}
	return 0, ""
}

// fresh checks a new connection's or channel's name.
func (n *names) fresh(name, what string) string {
	if !nameRE.MatchString(name) {
		return fmt.Sprintf("expected a %s name of letters, digits, '_' or '-', got %q", what, name)
	}
	if n.conns[name] || n.chans[name] != "" {
		return fmt.Sprintf("the name %q is already used by an earlier conn or channel step", name)
	}
	return ""
}
