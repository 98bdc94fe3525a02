package amqpsim_test

// The tests that keep README.md, docs/ and doc.go true: the numbers they
// state, the Go snippets they show, their links and the package list.

import (
	"bufio"
	"go/build"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/amqpsim/amqpsim/scenarios"
	"github.com/amqpsim/amqpsim/sim"
)

const module = "github.com/amqpsim/amqpsim/"

// docFiles are README.md and the pages under docs/.
func docFiles(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join("docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{"README.md"}, pages...)
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Every count of scenarios the docs state is the library's.
func TestDocsLibraryCount(t *testing.T) {
	list, err := scenarios.LoadFS(scenarios.Library(), ".")
	if err != nil {
		t.Fatal(err)
	}
	count := regexp.MustCompile(`\b(\d+) (?:library )?scenario(?: file)?s\b`)
	inReadme := 0
	for _, f := range docFiles(t) {
		for i, line := range strings.Split(readFile(t, f), "\n") {
			for _, m := range count.FindAllStringSubmatch(line, -1) {
				if n, _ := strconv.Atoi(m[1]); n != len(list) {
					t.Errorf("%s:%d: %q, but the library has %d scenarios", f, i+1, m[0], len(list))
				} else if f == "README.md" {
					inReadme++
				}
			}
		}
	}
	if inReadme == 0 {
		t.Errorf("README.md does not say how many scenarios the library has (%d)", len(list))
	}
}

// docs/cluster.md's Simulated section gives each of the cluster's timings
// with the value the simulator has.
func TestClusterTimings(t *testing.T) {
	timings := map[string]time.Duration{"LeaderElection": sim.LeaderElection,
		"QueueOperationTimeout": sim.QueueOperationTimeout, "MetadataTimeout": sim.MetadataTimeout,
		"EnqueuerRegistrationTimeout": sim.EnqueuerRegistrationTimeout, "QuorumDeleteTimeout": sim.QuorumDeleteTimeout,
		"QuorumCommandTimeout": sim.QuorumCommandTimeout,
		"HungElection":         sim.HungElection}
	_, section, _ := strings.Cut(readFile(t, filepath.Join("docs", "cluster.md")), "\n## Simulated\n")
	section, _, _ = strings.Cut(section, "\n## ")
	row := regexp.MustCompile("^\\| `sim\\.(\\w+)` \\| ([^|]+) \\|")
	seen := map[string]bool{}
	for _, line := range strings.Split(section, "\n") {
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		d, ok := timings[m[1]]
		if !ok {
			t.Errorf("docs/cluster.md: %s is not one of the cluster's timings", m[1])
			continue
		}
		seen[m[1]] = true
		if got := strings.TrimSpace(m[2]); got != d.String() {
			t.Errorf("docs/cluster.md: sim.%s is %s, not %s", m[1], d, got)
		}
	}
	for name := range timings {
		if !seen[name] {
			t.Errorf("docs/cluster.md's Simulated section does not give sim.%s", name)
		}
	}
}

// Every Go snippet in the README is an excerpt of the file its
// "<!-- excerpt: PATH -->" line names, a runnable Example or test: each of
// its lines, without its trailing comment, is part of a line of that file,
// in order. Whole-line comments, closing braces and "..." are the
// README's own; so are a test's t.Fatal for an Example's log.Fatal and the
// line that declares the test function.
func TestReadmeExcerpts(t *testing.T) {
	lines := strings.Split(readFile(t, "README.md"), "\n")
	marker := regexp.MustCompile(`^<!-- excerpt: (\S+) -->$`)
	blocks := 0
	for i := 0; i < len(lines); i++ {
		if lines[i] != "```go" {
			continue
		}
		blocks++
		var m []string
		if i > 0 {
			m = marker.FindStringSubmatch(lines[i-1])
		}
		if m == nil {
			t.Errorf("README.md:%d: a Go snippet without an <!-- excerpt: PATH --> line before it", i+1)
			continue
		}
		source := strings.Split(readFile(t, m[1]), "\n")
		at := 0
		for j := i + 1; j < len(lines) && lines[j] != "```"; j++ {
			want := excerptLine(lines[j])
			if want == "" {
				continue
			}
			k := slices.IndexFunc(source[at:], func(s string) bool {
				return strings.Contains(strings.ReplaceAll(s, "log.Fatal(", "t.Fatal("), want)
			})
			if k < 0 {
				t.Errorf("README.md:%d: %q is not in %s after line %d", j+1, want, m[1], at)
				continue
			}
			at += k + 1
		}
	}
	if blocks == 0 {
		t.Error("README.md has no Go snippet")
	}
}

// excerptLine is the part of a README snippet line that must appear in its
// source, or "" for a line that is the README's own.
func excerptLine(line string) string {
	s := strings.TrimSpace(line)
	if i := strings.Index(s, " // "); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	switch {
	case s == "", s == "}", s == "})", s == "...", strings.HasPrefix(s, "//"):
		return ""
	case regexp.MustCompile(`^func Test\w*\(t \*testing\.T\) \{$`).MatchString(s):
		return ""
	}
	return s
}

// Every relative link in README.md and docs/ leads to a file, and a link
// to a heading (#anchor) to a heading of that page.
func TestDocsLinks(t *testing.T) {
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	for _, f := range docFiles(t) {
		for i, line := range strings.Split(readFile(t, f), "\n") {
			for _, m := range link.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				path, anchor, _ := strings.Cut(target, "#")
				if path == "" {
					path = f
				} else {
					path = filepath.Join(filepath.Dir(f), path)
				}
				if _, err := os.Stat(path); err != nil {
					t.Errorf("%s:%d: link %s: %v", f, i+1, target, err)
					continue
				}
				if anchor != "" && !slices.Contains(anchors(t, path), anchor) {
					t.Errorf("%s:%d: link %s: %s has no heading #%s (has %v)", f, i+1, target, path, anchor, anchors(t, path))
				}
			}
		}
	}
}

// anchors are the GitHub anchors of a Markdown file's headings.
func anchors(t *testing.T, path string) []string {
	var out []string
	drop := regexp.MustCompile(`[^\p{L}\p{N} _-]`)
	inCode := false
	sc := bufio.NewScanner(strings.NewReader(readFile(t, path)))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "```") {
			inCode = !inCode
		}
		if inCode || !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.ToLower(strings.TrimSpace(strings.TrimLeft(line, "#")))
		h = drop.ReplaceAllString(h, "")
		out = append(out, strings.ReplaceAll(h, " ", "-"))
	}
	return out
}

// doc.go lists the module's packages lowest first, each importing only
// packages listed before it, and mentions the rest; the README's Layout
// table lists the same packages in the same order.
func TestPackageList(t *testing.T) {
	item := regexp.MustCompile(`^//   - ([a-z/]+): `)
	doc := readFile(t, "doc.go")
	var listed []string
	for _, line := range strings.Split(doc, "\n") {
		if m := item.FindStringSubmatch(line); m != nil {
			listed = append(listed, m[1])
		}
	}
	pkgs := modulePackages(t)
	for i, p := range listed {
		imports, ok := pkgs[p]
		if !ok {
			t.Errorf("doc.go lists %s, which is not a package of the module", p)
			continue
		}
		for _, q := range imports {
			if j := slices.Index(listed, q); j > i {
				t.Errorf("doc.go lists %s before %s, which it imports", p, q)
			}
		}
	}
	for p := range pkgs {
		if p != "." && !slices.Contains(listed, p) && !strings.Contains(doc, p) {
			t.Errorf("doc.go does not mention package %s", p)
		}
	}

	row := regexp.MustCompile("^\\| `([a-z/]+)` \\| ")
	var layout []string
	readme := readFile(t, "README.md")
	_, section, _ := strings.Cut(readme, "\n## Layout\n")
	section, _, _ = strings.Cut(section, "\n## ")
	for _, line := range strings.Split(section, "\n") {
		if m := row.FindStringSubmatch(line); m != nil {
			layout = append(layout, m[1])
		}
	}
	if !slices.Equal(layout, listed) {
		t.Errorf("the README's Layout lists %v, doc.go %v", layout, listed)
	}
}

// modulePackages maps each package directory of the module ("." for the
// root) to the module's packages its non-test files import.
func modulePackages(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if name := d.Name(); path != "." && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
			return filepath.SkipDir
		}
		p, err := build.ImportDir(path, 0)
		if err != nil {
			if _, ok := err.(*build.NoGoError); ok {
				return nil
			}
			return err
		}
		var imports []string
		for _, imp := range p.Imports {
			if rest, ok := strings.CutPrefix(imp, module); ok {
				imports = append(imports, rest)
			}
		}
		out[filepath.ToSlash(path)] = imports
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
