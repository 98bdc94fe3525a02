package scenarios

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/amqpsim/amqpsim/protocol"
)

// token is one word of a step line: a positional word, a quoted string, a
// bare flag, or a key=value option.
type token struct {
	col    int    // 1-based column of the token's first byte
	key    string // option key ("" for a positional word)
	val    string // the word, the unquoted string, or the option's value
	quoted bool   // val was written as a quoted string
	raw    string // the value as written (for typed values)
}

// lexError is a tokenizer error at a column.
type lexError struct {
	col int
	msg string
}

func (e *lexError) Error() string { return e.msg }

// tokenize splits a step line into tokens. Words are separated by spaces or
// tabs; a word that starts with a double quote is a Go string literal; a word
// key=value is an option whose value may itself be quoted.
func tokenize(line string) ([]token, error) {
	var toks []token
	i := 0
	for i < len(line) {
		c := line[i]
		if c == ' ' || c == '\t' {
			i++
			continue
		}
		start := i
		if c == '"' {
			s, n, err := quotedAt(line, i)
			if err != nil {
				return nil, err
			}
			toks = append(toks, token{col: start + 1, val: s, quoted: true, raw: line[i : i+n]})
			i += n
			continue
		}
		for i < len(line) && line[i] != ' ' && line[i] != '\t' && line[i] != '=' && line[i] != '"' {
			i++
		}
		word := line[start:i]
		if i < len(line) && line[i] == '"' {
			return nil, &lexError{col: i + 1, msg: "unexpected '\"' inside a word (quote the whole word)"}
		}
		if i < len(line) && line[i] == '=' {
			i++
			if word == "" {
				return nil, &lexError{col: start + 1, msg: "expected an option name before '='"}
			}
			t := token{col: start + 1, key: word}
			if i < len(line) && line[i] == '"' {
				s, n, err := quotedAt(line, i)
				if err != nil {
					return nil, err
				}
				t.val, t.quoted, t.raw = s, true, line[i:i+n]
				i += n
			} else if i < len(line) && (line[i] == '[' || line[i] == '{') {
				n, err := compositeAt(line, i)
				if err != nil {
					return nil, err
				}
				t.val = line[i : i+n]
				t.raw = t.val
				i += n
			} else {
				vs := i
				depth := 0
				for i < len(line) && (depth > 0 || (line[i] != ' ' && line[i] != '\t')) {
					switch line[i] {
					case '(':
						depth++
					case ')':
						depth--
					case '"':
						// a quoted string inside a typed value: str("a b")
						_, n, err := quotedAt(line, i)
						if err != nil {
							return nil, err
						}
						i += n - 1
					}
					i++
				}
				t.val = line[vs:i]
				t.raw = t.val
			}
			toks = append(toks, t)
			continue
		}
		toks = append(toks, token{col: start + 1, val: word, raw: word})
	}
	return toks, nil
}

// quotedAt reads the Go string literal starting at line[i] and returns its
// value and length in bytes.
func quotedAt(line string, i int) (string, int, error) {
	j := i + 1
	for j < len(line) {
		switch line[j] {
		case '\\':
			j += 2
			continue
		case '"':
			s, err := strconv.Unquote(line[i : j+1])
			if err != nil {
				return "", 0, &lexError{col: i + 1, msg: fmt.Sprintf("bad quoted string %s: %v", line[i:j+1], err)}
			}
			return s, j + 1 - i, nil
		}
		j++
	}
	return "", 0, &lexError{col: i + 1, msg: "unterminated quoted string (expected a closing '\"')"}
}

// isBare reports whether s can be written without quotes: non-empty, no
// spaces, quotes, '=', '(' or control characters, and not starting with '#'.
func isBare(s string) bool {
	if s == "" || s[0] == '#' {
		return false
	}
	for _, r := range s {
		if r <= ' ' || r == '"' || r == '=' || r == '(' || r == ')' || r == 0x7f || r > 0x7e {
			return false
		}
	}
	return true
}

// flagWords are the bare words some step reads as a flag; a name or body
// spelled like one is quoted so that it stays positional.
var flagWords = map[string]bool{"passive": true, "durable": true, "exclusive": true, "auto-delete": true,
	"internal": true, "if-unused": true, "if-empty": true, "global": true, "no-ack": true,
	"mandatory": true, "persistent": true, "multiple": true, "requeue": true}

// word renders a name or body: bare when possible, quoted otherwise.
func word(s string) string {
	if isBare(s) && !flagWords[s] {
		return s
	}
	return strconv.Quote(s)
}

// optWord renders an option's string value: bare unless it is empty, has
// blanks, quotes or control characters, or opens a table or an array.
func optWord(s string) string {
	if s == "" || strings.ContainsAny(s, " \t\"") || s[0] == '[' || s[0] == '{' || !isBare(strings.NewReplacer("#", "a", "=", "a").Replace(s)) {
		return strconv.Quote(s)
	}
	return s
}

// formatTable renders a table's entries as sorted key=value options, each key
// prefixed with prefix.
func formatTable(prefix string, t protocol.Table) []string {
	keys := make([]string, 0, len(t))
	for k := range t {
		keys = append(keys, k)
	}
	sortStrings(keys)
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		out = append(out, prefix+k+"="+formatValue(t[k]))
	}
	return out
}

// formatArgs renders an argument table as sorted options: x- keys as they
// are, any other key as arg.KEY.
func formatArgs(t protocol.Table) []string {
	out := formatTable("", t)
	for i, o := range out {
		if !strings.HasPrefix(o, "x-") {
			out[i] = "arg." + o
		}
	}
	return out
}
