package scenarios

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// verb is one step verb of the grammar (the package documentation lists
// them; a test checks the list against this table). Its op's file
// registers it. It says how to read the verb's words: positional ones,
// bare flags, options, and whether it takes arguments (x-NAME=V,
// arg.NAME=V) or message properties and headers (header.NAME=V).
type verb struct {
	name    string
	usage   string // shown by parse errors
	minPos  int
	maxPos  int // -1: any number
	flags   []string
	options []string
	args    bool
	props   bool
	build   func(a *argSet) (Op, error)
	// method is the AMQP method the step sends, if it sends one; what
	// the upgrade check calls the step, when not by that method's name
	// (nor by the verb's, without a method).
	method protocol.Method
	what   string
	// fromCall, if set, writes a client's call of method in a simulator's
	// trace as a step of this verb (FromTrace).
	fromCall func(w *traceWriter, e sim.Event, ch string) Op
}

// verbs is the table of step verbs, by name; traced has those with a
// fromCall, by method.
var (
	verbs  = map[string]*verb{}
	traced = map[protocol.Method]*verb{}
)

// register adds verbs to the table. Each op's file calls it from init.
func register(vs ...*verb) {
	for _, v := range vs {
		if verbs[v.name] != nil || v.fromCall != nil && traced[v.method] != nil {
			panic("scenarios: verb " + v.name + " registered twice")
		}
		verbs[v.name] = v
		if v.fromCall != nil {
			traced[v.method] = v
		}
	}
}

// whatStep names a step's verb as the upgrade check reports it: the AMQP
// method it sends, or what it does.
func whatStep(name string) string {
	v := verbs[name]
	switch {
	case v == nil:
		return name
	case v.what != "":
		return v.what
	case v.method != protocol.Method{}:
		return v.method.String()
	}
	return name
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
