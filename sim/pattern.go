package sim

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode/utf8"
)

// pattern is a regular expression as RabbitMQ matches permissions, topic
// permissions and policies with it: re:run(Subject, Pattern, [{capture,
// none}]), Erlang's re (PCRE) without the unicode option
// (rabbit_auth_backend_internal:check_resource_access/4 and
// check_topic_access/4, rabbit_policy:matches/4). That differs from Go's
// regexp in ways amqpsim follows:
//
//   - the subject and the pattern are bytes, not characters: "." is one
//     byte, so ^.{1,3}$ refuses 'ééé' (six bytes), and [é] is a class of
//     the two bytes of é's UTF-8 (measured on 3.10.8);
//   - $ (outside multiline mode) also matches before a final newline:
//     ^abc$ matches "abc\n" (measured);
//   - the character tables are ISO 8859-1's: \w, [[:alpha:]] and the other
//     POSIX classes, and case-insensitive matching, take the Latin-1
//     letters (bytes 0xAA, 0xB5, 0xBA, 0xC0-0xFF but 0xD7 and 0xF7) as
//     letters; \s takes the vertical tab, \h and \v are PCRE's classes
//     (measured byte by byte on Erlang/OTP 25, which 3.10.8 runs, and 27,
//     which 4.0.5 runs: testdata/erlang-re-tables.txt);
//   - an empty permission is ^$, which matches "" and "\n"
//     (check_resource_access, check_topic_access; measured with topic
//     permissions on 3.10.8): see permissionPattern. (An empty policy
//     pattern matches everything, as in re.)
//
// The patterns whose meaning amqpsim cannot reproduce are refused with an
// error that says why: $ followed by something that consumes input
// (where $ is not at the end, the optional final newline cannot be
// translated), \b and \B (a word boundary over Latin-1 letters), and a
// character above \xff (PCRE refuses it too, "character value in \x{}
// or \o{} is too large"). What Go's regexp does not know (back-references,
// look-around, possessive quantifiers, \Z, (?x)) is refused as before, with
// Go's words.
//
// Unlike RabbitMQ 4.3.6 on Erlang/OTP 29, whose re is PCRE2 with ASCII
// tables (OTP 28 and later), \w, the POSIX classes and case-insensitive
// matching take no byte above 0x7F as a letter there; amqpsim matches as
// OTP 27 and earlier do on every release.
type pattern struct {
	src string
	re  *regexp.Regexp
}

// compilePattern compiles src as RabbitMQ's re would run it; see pattern.
func compilePattern(src string) (*pattern, error) {
	translated, err := translatePattern(src)
	if err != nil {
		return nil, err
	}
	tree, err := syntax.Parse(translated, syntax.Perl)
	if err != nil {
		return nil, err
	}
	if err := rewriteDollar(tree, true); err != nil {
		return nil, err
	}
	if err := checkRunes(tree); err != nil {
		return nil, err
	}
	re, err := regexp.Compile(tree.String())
	if err != nil {
		return nil, fmt.Errorf("sim: translating %q: %v", src, err) // a bug of the translation
	}
	return &pattern{src: src, re: re}, nil
}

// match reports whether the pattern matches somewhere in s, s taken as
// bytes.
func (p *pattern) match(s string) bool { return p.re.MatchString(latin1(s)) }

// latin1 maps each byte of s to the character of the same number, so that
// Go's regexp, which matches characters, matches bytes.
func latin1(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return s
	}
	var b strings.Builder
	b.Grow(2 * len(s))
	for i := 0; i < len(s); i++ {
		b.WriteRune(rune(s[i]))
	}
	return b.String()
}

// byteSet is a set of bytes.
type byteSet [4]uint64

func (s *byteSet) add(b byte)      { s[b/64] |= 1 << (b % 64) }
func (s *byteSet) has(b byte) bool { return s[b/64]&(1<<(b%64)) != 0 }
func (s *byteSet) addRange(lo, hi byte) {
	for b := int(lo); b <= int(hi); b++ {
		s.add(byte(b))
	}
}

func (s byteSet) not() byteSet {
	for i := range s {
		s[i] = ^s[i]
	}
	return s
}

// ranges writes the set as the inside of a Go character class.
func (s byteSet) ranges() string {
	var b strings.Builder
	for lo := 0; lo < 256; lo++ {
		if !s.has(byte(lo)) {
			continue
		}
		hi := lo
		for hi+1 < 256 && s.has(byte(hi+1)) {
			hi++
		}
		fmt.Fprintf(&b, `\x{%x}`, lo)
		if hi > lo {
			fmt.Fprintf(&b, `-\x{%x}`, hi)
		}
		lo = hi
	}
	return b.String()
}

// Erlang/OTP 25's and 27's re character tables (ISO 8859-1), as measured
// byte by byte (testdata/erlang-re-tables.txt).
var (
	latin1Letters = func() byteSet {
		var s byteSet
		s.addRange('A', 'Z')
		s.addRange('a', 'z')
		s.add(0xaa)
		s.add(0xb5)
		s.add(0xba)
		s.addRange(0xc0, 0xd6)
		s.addRange(0xd8, 0xf6)
		s.addRange(0xf8, 0xff)
		return s
	}()
	reClasses = func() map[string]byteSet {
		set := func(f func(s *byteSet)) byteSet { var s byteSet; f(&s); return s }
		digit := set(func(s *byteSet) { s.addRange('0', '9') })
		alpha := latin1Letters
		alnum := set(func(s *byteSet) { *s = alpha; s.addRange('0', '9') })
		word := set(func(s *byteSet) { *s = alnum; s.add('_') })
		upper := set(func(s *byteSet) { s.addRange('A', 'Z'); s.addRange(0xc0, 0xd6); s.addRange(0xd8, 0xde) })
		lower := set(func(s *byteSet) {
			s.addRange('a', 'z')
			s.add(0xaa)
			s.add(0xb5)
			s.add(0xba)
			s.addRange(0xdf, 0xf6)
			s.addRange(0xf8, 0xff)
		})
		space := set(func(s *byteSet) { s.addRange('\t', '\r'); s.add(' ') })
		cntrl := set(func(s *byteSet) { s.addRange(0, 0x1f); s.addRange(0x7f, 0x9f) })
		print := set(func(s *byteSet) { s.addRange(' ', '~'); s.addRange(0xa0, 0xff) })
		graph := set(func(s *byteSet) { *s = print; s[0] &^= 1 << ' ' })
		punct := set(func(s *byteSet) {
			for b := 0; b < 256; b++ {
				if graph.has(byte(b)) && !alnum.has(byte(b)) {
					s.add(byte(b))
				}
			}
		})
		return map[string]byteSet{
			"alpha": alpha, "digit": digit, "alnum": alnum, "word": word, "upper": upper, "lower": lower,
			"space": space, "cntrl": cntrl, "print": print, "graph": graph, "punct": punct,
			"xdigit": set(func(s *byteSet) { s.addRange('0', '9'); s.addRange('A', 'F'); s.addRange('a', 'f') }),
			"blank":  set(func(s *byteSet) { s.add('\t'); s.add(' ') }),
			"ascii":  set(func(s *byteSet) { s.addRange(0, 0x7f) }),
			// The escapes: \w, \s, \h and \v.
			`\w`: word, `\s`: space,
			`\h`: set(func(s *byteSet) { s.add('\t'); s.add(' '); s.add(0xa0) }),
			`\v`: set(func(s *byteSet) { s.addRange('\n', '\r'); s.add(0x85) }),
		}
	}()
)

// translatePattern rewrites PCRE's byte-oriented pattern src as a Go
// pattern over the characters latin1 makes of bytes: each byte above
// 0x7F becomes the character of its number, and the escapes and POSIX
// classes whose meaning differs become explicit classes of such
// characters.
func translatePattern(src string) (string, error) {
	var out strings.Builder
	inClass := false
	classStart := 0 // the index in src after '[' or '[^'
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case c >= utf8.RuneSelf:
			fmt.Fprintf(&out, `\x{%x}`, c)
		case c == '\\' && i+1 < len(src):
			i++
			e := src[i]
			switch {
			case e >= utf8.RuneSelf:
				fmt.Fprintf(&out, `\x{%x}`, e)
			case e == 'Q':
				end := strings.Index(src[i+1:], `\E`)
				quoted := src[i+1:]
				if end >= 0 {
					quoted = src[i+1 : i+1+end]
					i += 1 + end + 1
				} else {
					i = len(src) - 1
				}
				for j := 0; j < len(quoted); j++ {
					out.WriteString(regexp.QuoteMeta(latin1(quoted[j : j+1])))
				}
			case e == 'b' || e == 'B':
				return "", fmt.Errorf(`\%c: amqpsim cannot match a word boundary as Erlang's re does over bytes (its letters include Latin-1's)`, e)
			case e == 'w' || e == 's' || e == 'h' || e == 'v':
				writeClass(&out, reClasses[`\`+string(e)], false, inClass)
			case e == 'W' || e == 'S' || e == 'H' || e == 'V':
				writeClass(&out, reClasses[`\`+strings.ToLower(string(e))], true, inClass)
			default:
				out.WriteByte('\\')
				out.WriteByte(e)
			}
		case inClass && c == '[' && i+1 < len(src) && src[i+1] == ':':
			end := strings.Index(src[i+2:], ":]")
			if end < 0 {
				out.WriteByte(c)
				continue
			}
			name := src[i+2 : i+2+end]
			negated := strings.HasPrefix(name, "^")
			set, known := reClasses[strings.TrimPrefix(name, "^")]
			if !known || strings.HasPrefix(name, `\`) {
				return "", fmt.Errorf("unknown POSIX class name [:%s:]", name)
			}
			writeClass(&out, set, negated, true)
			i += 2 + end + 1
		case !inClass && c == '[':
			inClass = true
			out.WriteByte(c)
			if i+1 < len(src) && src[i+1] == '^' {
				out.WriteByte('^')
				i++
			}
			classStart = i + 1
		case inClass && c == ']' && i > classStart:
			inClass = false
			out.WriteByte(c)
		default:
			out.WriteByte(c)
		}
	}
	return out.String(), nil
}

// writeClass writes set (or its complement) as a class, or inside the
// class being written.
func writeClass(out *strings.Builder, set byteSet, negated, inClass bool) {
	if negated {
		set = set.not()
	}
	if inClass {
		out.WriteString(set.ranges())
		return
	}
	out.WriteString("[" + set.ranges() + "]")
}

// errDollar refuses a $ that something consuming input follows.
var errDollar = errors.New("$ before the end of the expression: in RabbitMQ (PCRE) it also matches before a final newline, which amqpsim follows only where nothing comes after it")

// rewriteDollar replaces each $ (outside multiline mode) with \n?\z,
// PCRE's meaning of it, where nothing that consumes input can come after
// it (atEnd): there, consuming the newline is as good as looking at it.
func rewriteDollar(re *syntax.Regexp, atEnd bool) error {
	switch re.Op {
	case syntax.OpEndText:
		if re.Flags&syntax.WasDollar == 0 {
			return nil
		}
		if !atEnd {
			return errDollar
		}
		flags := re.Flags &^ syntax.WasDollar
		nl := &syntax.Regexp{Op: syntax.OpLiteral, Rune: []rune{'\n'}, Flags: flags}
		*re = syntax.Regexp{Op: syntax.OpConcat, Flags: flags, Sub: []*syntax.Regexp{
			{Op: syntax.OpQuest, Flags: flags, Sub: []*syntax.Regexp{nl}},
			{Op: syntax.OpEndText, Flags: flags},
		}}
		return nil
	case syntax.OpConcat:
		for i, sub := range re.Sub {
			end := atEnd
			for _, after := range re.Sub[i+1:] {
				end = end && zeroWidth(after)
			}
			if err := rewriteDollar(sub, end); err != nil {
				return err
			}
		}
	case syntax.OpAlternate, syntax.OpCapture, syntax.OpQuest:
		for _, sub := range re.Sub {
			if err := rewriteDollar(sub, atEnd); err != nil {
				return err
			}
		}
	case syntax.OpRepeat:
		for _, sub := range re.Sub {
			if err := rewriteDollar(sub, atEnd && re.Max == 1); err != nil {
				return err
			}
		}
	default: // OpStar, OpPlus: what they repeat may come again
		for _, sub := range re.Sub {
			if err := rewriteDollar(sub, false); err != nil {
				return err
			}
		}
	}
	return nil
}

// zeroWidth reports whether re consumes no input.
func zeroWidth(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return true
	case syntax.OpCapture, syntax.OpConcat:
		for _, sub := range re.Sub {
			if !zeroWidth(sub) {
				return false
			}
		}
		return true
	}
	return false
}

// checkRunes refuses a literal character above \xff, which no byte can
// match and PCRE refuses.
func checkRunes(re *syntax.Regexp) error {
	if re.Op == syntax.OpLiteral {
		for _, r := range re.Rune {
			if r > 0xff {
				return fmt.Errorf(`character value %U is too large: Erlang's re matches bytes, \x{0} to \x{ff}`, r)
			}
		}
	}
	for _, sub := range re.Sub {
		if err := checkRunes(sub); err != nil {
			return err
		}
	}
	return nil
}
