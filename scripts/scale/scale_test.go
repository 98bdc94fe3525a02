package main

import (
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestScaleOnAmqpsim runs the command on amqpsim alone at small sizes:
// every kind measures a rate at every size, the page's generated section
// is rewritten between its marks (and the rest kept), and the plot is an
// SVG document. The sizes of docs/benchmarks.md (up to 100,000) are for
// the command, not go test.
func TestScaleOnAmqpsim(t *testing.T) {
	dir := t.TempDir()
	page := filepath.Join(dir, "page.md")
	plot := filepath.Join(dir, "plot.svg")
	if err := os.WriteFile(page, []byte("before\n"+beginMark+"\nSTALE\n"+endMark+"\nafter\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	args := []string{"-sizes", "2,20", "-messages", "50", "-repeat", "1", "-cc-bindings", "5", "-cc-keys", "20", "-svg", plot, "-doc", page}
	if err := run(args, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	for _, k := range kinds {
		if !strings.Contains(out.String(), "| "+k.items+", amqpsim |") {
			t.Errorf("no row for %s in:\n%s", k.items, out.String())
		}
	}
	data, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	got := string(data)
	if !strings.HasPrefix(got, "before\n"+beginMark) || !strings.HasSuffix(got, endMark+"\nafter\n") || strings.Contains(got, "STALE") || !strings.Contains(got, "| messages/s | 2 | 20 |") {
		t.Errorf("page after the run:\n%s", got)
	}
	svg, err := os.ReadFile(plot)
	if err != nil {
		t.Fatal(err)
	}
	if err := xml.Unmarshal(svg, new(struct{})); err != nil || strings.Count(string(svg), "<polyline") != len(kinds) {
		t.Errorf("plot: %v, %d lines for %d kinds", err, strings.Count(string(svg), "<polyline"), len(kinds))
	}
}
