package scenarios

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// grammar returns the step synopses the package documentation lists
// under "A step is a verb", one per verb ("tx CH | commit CH | rollback
// CH" is three), keyed by verb.
func grammar(t *testing.T) map[string][]string {
	t.Helper()
	src, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(src), "\n")
	start := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "// A step is a verb") })
	if start < 0 {
		t.Fatal(`doc.go has no paragraph "A step is a verb ..."`)
	}
	for start < len(lines) && !strings.HasPrefix(lines[start], "//\t") {
		start++
	}
	out := map[string][]string{}
	for _, l := range lines[start:] {
		l, ok := strings.CutPrefix(l, "//\t")
		if !ok {
			break
		}
		if strings.HasPrefix(l, " ") {
			continue // the comment of the line above, continued
		}
		synopsis, _, _ := strings.Cut(l, "  ")
		for _, seg := range strings.Split(synopsis, " | ") {
			words := strings.Fields(seg)
			out[words[0]] = append(out[words[0]], seg)
		}
	}
	return out
}

// The grammar the package documentation lists is the table of verbs:
// every verb is documented, nothing else is, and every option and flag a
// synopsis shows is one the verb takes.
func TestGrammarListsEveryVerb(t *testing.T) {
	doc := grammar(t)
	for _, name := range verbNames() {
		if doc[name] == nil {
			t.Errorf("verb %s: doc.go's grammar does not list it (usage: %s)", name, verbs[name].usage)
		}
	}
	for name, segs := range doc {
		v := verbs[name]
		if v == nil {
			t.Errorf("doc.go lists %q, which is no verb", segs[0])
			continue
		}
		for _, seg := range segs {
			for _, w := range strings.Fields(seg)[1:] {
				bracketed := strings.HasPrefix(w, "[")
				alts := strings.Split(strings.TrimSuffix(strings.Trim(w, "[]"), "..."), "|")
				for _, a := range alts {
					key, _, opt := strings.Cut(a, "=")
					switch {
					case a == "ARGS" || strings.HasPrefix(key, "arg."):
						if !v.args {
							t.Errorf("doc.go: %s: %s takes no arguments", seg, name)
						}
					case a == "PROPS":
						if !v.props {
							t.Errorf("doc.go: %s: %s takes no message properties", seg, name)
						}
					case opt:
						if !slices.Contains(v.options, key) {
							t.Errorf("doc.go: %s: %s has no option %s", seg, name, key)
						}
					case a != strings.ToLower(a) || !bracketed:
						// a positional word: a placeholder, or a literal
						// such as on|off
					case len(alts) == 1 || strings.Contains(w, "="):
						// [flag], or [flag|flag=V]
						if !slices.Contains(v.flags, a) {
							t.Errorf("doc.go: %s: %s has no flag %s", seg, name, a)
						}
					}
				}
			}
		}
	}
}

// Every verb is used by a library scenario (or, for the cluster's steps,
// by a built-in cluster scenario), and its op runs in one of the
// ways the runner knows (ops.go): a new op lands with a recording, and
// cannot be forgotten by a driver.
func TestLibraryUsesEveryVerb(t *testing.T) {
	list, err := LoadFS(Library(), ".")
	if err != nil {
		t.Fatal(err)
	}
	cluster, err := LoadFS(Cluster(), ".")
	if err != nil {
		t.Fatal(err)
	}
	list = append(list, cluster...)
	used := map[string]bool{}
	for _, s := range list {
		for _, st := range s.Steps {
			name, _, _ := strings.Cut(st.Text, " ")
			if !used[name] {
				used[name] = true
				switch st.Op.(type) {
				case runnerOp, adminOp, chanOp:
				default:
					t.Errorf("%s:%d: %T runs in no way the runner knows", s.Path, st.Line, st.Op)
				}
			}
		}
	}
	for _, name := range verbNames() {
		if !used[name] {
			t.Errorf("verb %s: no library scenario uses it", name)
		}
	}
}
