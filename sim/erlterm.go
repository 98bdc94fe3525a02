package sim

import (
	"regexp"
	"strings"
	"unicode/utf8"
)

// Some of RabbitMQ's reply texts hold an Erlang term printed with ~p,
// which io_lib_pretty lays out by the column it starts at: what does not
// fit on the line is broken after each element of a tuple, the next one
// under the first. The simulator writes the terms it needs as erl does.

// getTimedOutText is the 541 of a basic.get whose command to a quorum
// queue's leader timed out (rabbit_channel, basic.get: "Cannot get a
// message from queue '~ts': ~p" with {timeout, {RaftName, LeaderNode}}).
func getTimedOutText(resource, raft, leader string) string {
	text := "Cannot get a message from queue '" + resource + "': "
	return text + erlangTimeout(utf8.RuneCountInString(text), raft, leader)
}

// erlangTimeout is {timeout,{'RAFT','NODE'}} as ~p writes it starting at
// column col (checked with erl, OTP 25, for columns 38 to 59).
func erlangTimeout(col int, raft, node string) string {
	const width = 78 // a term fits while it ends within it
	a, n := erlangAtom(raft), erlangAtom(node)
	inner := "{" + a + "," + n + "}"
	if flat := "{timeout," + inner + "}"; col+len(flat) <= width {
		return flat
	}
	pad := func(c int) string { return "\n" + strings.Repeat(" ", c) }
	if col+1+len(inner)+1 <= width {
		return "{timeout," + pad(col+1) + inner + "}"
	}
	return "{timeout," + pad(col+1) + "{" + a + "," + pad(col+2) + n + "}}"
}

// plainAtom is an atom Erlang writes without quotes.
var plainAtom = regexp.MustCompile(`^[a-z][a-zA-Z0-9_@]*$`)

// erlangAtom writes an atom as Erlang does: quoted unless it is plain.
func erlangAtom(s string) string {
	if plainAtom.MatchString(s) {
		return s
	}
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}
