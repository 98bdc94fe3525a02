package tune

import (
	"bytes"
	"context"
	"encoding/xml"
	"image/png"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

func TestSVGWellFormed(t *testing.T) {
	svg := exampleResult(t).SVG()
	d := xml.NewDecoder(bytes.NewReader(svg))
	circles := 0
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "circle" {
			circles++
		}
	}
	if circles != 4 {
		t.Errorf("%d throughput markers, want 4", circles)
	}
}

// chromium returns a headless Chromium's path, or skips the test.
func chromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no chromium on PATH: install Debian's (apt-get install chromium) to look at the plot in a browser")
	return ""
}

// TestSVGInBrowser renders the plot in headless Chromium and checks the
// screenshot shows both series and the knee in their colours. Set
// AMQPSIM_TUNE_SCREENSHOT=FILE to keep the PNG.
func TestSVGInBrowser(t *testing.T) {
	bin := chromium(t)
	dir := t.TempDir()
	svgPath, pngPath := filepath.Join(dir, "plot.svg"), filepath.Join(dir, "plot.png")
	res := sweep(t, Config{Consumers: 4, Handler: Constant(5 * time.Millisecond), RTT: 2 * time.Millisecond, Size: 1024, Backlog: 20000,
		Prefetch: []int{1, 2, 5, 10, 20, 50, 100, 200, 500}})
	if err := os.WriteFile(svgPath, res.SVG(), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
		"--user-data-dir="+filepath.Join(dir, "profile"), "--window-size=760,460", "--screenshot="+pngPath, "file://"+svgPath)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, out)
	}
	f, err := os.Open(pngPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if keep := os.Getenv("AMQPSIM_TUNE_SCREENSHOT"); keep != "" {
		b, _ := os.ReadFile(pngPath)
		os.WriteFile(keep, b, 0o644)
	}
	count := map[string]int{}
	colors := map[string][3]int{"throughput": {0x1f, 0x5f, 0xbf}, "memory": {0xd9, 0x73, 0x0d}, "knee": {0x2a, 0x9d, 0x3a}}
	bounds := img.Bounds()
	for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
		for x := bounds.Min.X; x < bounds.Max.X; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			for name, c := range colors {
				if abs(int(r>>8)-c[0]) < 24 && abs(int(g>>8)-c[1]) < 24 && abs(int(b>>8)-c[2]) < 24 {
					count[name]++
				}
			}
		}
	}
	if bounds.Dx() != 760 || bounds.Dy() != 460 {
		t.Errorf("screenshot %v, want 760×460", bounds)
	}
	for name := range colors {
		if count[name] < 100 {
			t.Errorf("the screenshot has %d pixels of the %s colour: not drawn", count[name], name)
		}
	}
}

func abs(v int) int { return max(v, -v) }
