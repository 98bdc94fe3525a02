package sim

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

// readErlangLines reads a testdata file of "key<TAB>value" lines (and "#"
// comments) written by an Erlang script.
func readErlangLines(t *testing.T, path string) [][2]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [][2]string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		k, v, ok := strings.Cut(line, "\t")
		if !ok {
			k, v, _ = strings.Cut(line, " ")
		}
		out = append(out, [2]string{k, v})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// erlangList parses an Erlang list of integers, "[1,2,3]".
func erlangList(t *testing.T, s string) []int {
	t.Helper()
	s = strings.Trim(strings.TrimSpace(s), "[]")
	if s == "" {
		return nil
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		out = append(out, n)
	}
	return out
}

// TestPatternsMatchAsErlangRe: permission, topic permission and policy
// patterns match as RabbitMQ's Erlang re (no unicode option) does: every
// pattern of testdata/erlang-re-corpus.txt matches exactly the subjects
// Erlang/OTP 25 (3.10.8's) matched, bytes not characters, $ before a
// final newline, Latin-1 classes and case folding
// (scripts/erlang-re-corpus.escript; OTP 27, 4.0.5's, answers the same).
func TestPatternsMatchAsErlangRe(t *testing.T) {
	lines := readErlangLines(t, "testdata/erlang-re-corpus.txt")
	var subjects []string
	for _, l := range lines {
		if l[0] == "subjects" {
			for _, s := range strings.Split(l[1], ",") {
				b, err := base64.StdEncoding.DecodeString(s)
				if err != nil {
					t.Fatal(err)
				}
				subjects = append(subjects, string(b))
			}
		}
	}
	n := 0
	for _, l := range lines {
		if l[0] == "subjects" || l[0] == "otp" {
			continue
		}
		src, err := base64.StdEncoding.DecodeString(l[0])
		if err != nil {
			t.Fatal(err)
		}
		want := map[int]bool{}
		for _, i := range erlangList(t, l[1]) {
			want[i] = true
		}
		p, err := compilePattern(string(src))
		if err != nil {
			t.Errorf("%q: %v", src, err)
			continue
		}
		for i, s := range subjects {
			if got := p.match(s); got != want[i] {
				t.Errorf("%q on %q: %t, Erlang's re %t", src, s, got, want[i])
			}
		}
		n++
	}
	if n < 50 {
		t.Fatalf("only %d patterns read", n)
	}
}

// TestPatternClassesAsErlangRe: byte by byte, the escapes and POSIX
// classes and case-insensitive matching take the bytes Erlang's re
// (OTP 25) takes (testdata/erlang-re-tables.txt).
func TestPatternClassesAsErlangRe(t *testing.T) {
	for _, l := range readErlangLines(t, "testdata/erlang-re-tables.txt") {
		switch l[0] {
		case "fold":
			// [{65,[97]},{66,[98]},...]
			for _, pair := range strings.Split(strings.Trim(l[1], "[]"), "},{") {
				b, partners, _ := strings.Cut(strings.Trim(pair, "{}"), ",")
				n, _ := strconv.Atoi(b)
				want := map[int]bool{n: true}
				for _, p := range erlangList(t, partners) {
					want[p] = true
				}
				src := fmt.Sprintf(`(?i)\x{%x}`, n)
				checkBytes(t, src, want)
			}
		case "dot-not":
			want := map[int]bool{}
			for b := 0; b < 256; b++ {
				want[b] = true
			}
			for _, b := range erlangList(t, l[1]) {
				delete(want, b)
			}
			checkBytes(t, "^.$", want)
		default:
			want := map[int]bool{}
			for _, b := range erlangList(t, l[1]) {
				want[b] = true
			}
			checkBytes(t, l[0], want)
		}
	}
}

func checkBytes(t *testing.T, src string, want map[int]bool) {
	t.Helper()
	p, err := compilePattern(src)
	if err != nil {
		t.Errorf("%s: %v", src, err)
		return
	}
	for b := 0; b < 256; b++ {
		if got := p.match(string([]byte{byte(b)})); got != want[b] {
			t.Errorf("%s on byte %d: %t, Erlang's re %t", src, b, got, want[b])
		}
	}
}

// TestPatternsRefusedWhereTheyWouldDiffer: a pattern amqpsim cannot match
// as RabbitMQ does is refused with an error that says why, never matched
// otherwise.
func TestPatternsRefusedWhereTheyWouldDiffer(t *testing.T) {
	for src, why := range map[string]string{
		`^a$b`:      "$ before the end",
		`(a$)+`:     "$ before the end",
		`a$\n`:      "$ before the end",
		`\bword`:    "word boundary",
		`x\B`:       "word boundary",
		`\x{100}`:   "too large",
		`(a)\1`:     "invalid escape",
		`(?=a)`:     "invalid or unsupported Perl syntax",
		`[[:foo:]]`: "unknown POSIX class",
	} {
		_, err := compilePattern(src)
		if err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("%q: %v, want an error saying %q", src, err, why)
		}
	}
}

// TestEmptyPatternIsCaretDollar: "" grants what ^$ matches, as
// check_resource_access/4 and check_topic_access/4 read it: the empty
// name and "\n" (measured on 3.10.8: empty topic permissions let a
// publish with routing key "" and "\n" through, refused "a").
func TestEmptyPatternIsCaretDollar(t *testing.T) {
	p, err := permissionPattern(permWrite, "")
	if err != nil {
		t.Fatal(err)
	}
	for s, want := range map[string]bool{"": true, "\n": true, "a": false, "\n\n": false} {
		if got := p.match(s); got != want {
			t.Errorf("%q: %t, want %t", s, got, want)
		}
	}
}
