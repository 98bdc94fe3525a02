package sim

import (
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/amqpsim/amqpsim/protocol"
)

// maxExpiration is the largest per-message TTL RabbitMQ accepts, in ms.
const maxExpiration = 315360000000

// parseExpiration checks a message's expiration property as RabbitMQ's
// rabbit_basic:parse_expiration does, with its error texts: Erlang's
// string:to_integer (optional sign, then digits, any length: a 20-digit
// value is value_too_large, not no_integer), the reason printed with
// Erlang's ~p (a list of bytes when not printable, "\e" for ESC, raw
// Latin-1 bytes, ~p's line break); measured on RabbitMQ 3.10.8.
func parseExpiration(s string) (ttl time.Duration, ok bool, err error) {
	if s != "" {
		// Most messages have none: small enough to inline, this costs
		// them no call.
		ttl, ok, err = parseSetExpiration(s)
	}
	return
}

// parseSetExpiration is parseExpiration of an expiration that is set.
func parseSetExpiration(s string) (time.Duration, bool, error) {
	fail := func(tag, value string) error {
		return protocol.Errorf(protocol.PreconditionFailed, protocol.BasicPublish, "%s", expirationError(s, tag, value))
	}
	sign := 0
	if s[0] == '-' || s[0] == '+' {
		sign = 1
	}
	end := sign
	for end < len(s) && s[end] >= '0' && s[end] <= '9' {
		end++
	}
	if end == sign {
		return 0, false, fail("", "")
	}
	if end < len(s) {
		return 0, false, fail("leftover_string", erlangString(s[end:]))
	}
	n, _ := new(big.Int).SetString(strings.TrimPrefix(s, "+"), 10)
	switch {
	case n.Sign() < 0:
		return 0, false, fail("value_negative", n.String())
	case n.Cmp(big.NewInt(maxExpiration)) > 0:
		return 0, false, fail("value_too_large", n.String())
	}
	return time.Duration(n.Int64()) * time.Millisecond, true, nil
}

// expirationError formats "invalid expiration '<s>': ~p" of no_integer (tag
// "") or {tag,value}. Erlang's ~p breaks a tuple that would pass column 78
// after its first element and indents the rest one past the brace
// (measured: {value_too_large,9999999999999999999} at column 42 is broken).
// Lists too long for one line are broken further by Erlang; not modelled.
func expirationError(s, tag, value string) string {
	prefix := "invalid expiration '" + s + "': "
	if tag == "" {
		return prefix + "no_integer"
	}
	col := len(prefix) // Erlang counts Latin-1 characters: one per byte
	if term := "{" + tag + "," + value + "}"; col+len(term) <= 78 {
		return prefix + term
	}
	return prefix + "{" + tag + ",\n" + strings.Repeat(" ", col+1) + value + "}"
}

// erlangString prints a byte string as Erlang's ~p prints a list of Latin-1
// characters: quoted with escapes when every character is printable,
// otherwise as a list of integers.
func erlangString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		if e, ok := erlangEscapes[c]; ok {
			b.WriteString(e)
			continue
		}
		if c < 32 || c >= 127 && c < 160 {
			ints := make([]string, len(s))
			for j := range len(s) {
				ints[j] = strconv.Itoa(int(s[j]))
			}
			return "[" + strings.Join(ints, ",") + "]"
		}
		b.WriteByte(c)
	}
	b.WriteByte('"')
	return b.String()
}

var erlangEscapes = map[byte]string{'\n': `\n`, '\r': `\r`, '\t': `\t`, '\v': `\v`, '\b': `\b`, '\f': `\f`, 0x1b: `\e`, '"': `\"`, '\\': `\\`}
