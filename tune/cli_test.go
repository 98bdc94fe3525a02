package tune

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestMain_(t *testing.T) {
	svg := filepath.Join(t.TempDir(), "plot.svg")
	var out, errb bytes.Buffer
	err := Main(strings.Fields("--consumers 4 --handler 5ms --rtt 2ms --size 1KiB --backlog 2000 --prefetch 1,2,5,10 --svg "+svg), &out, &errb)
	if err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	if !strings.Contains(out.String(), "recommended: prefetch 2,") {
		t.Errorf("output:\n%s", out.String())
	}
	if b, err := os.ReadFile(svg); err != nil || !bytes.HasPrefix(b, []byte("<svg")) {
		t.Errorf("plot: %v %.40q", err, b)
	}
	out.Reset()
	if err := Main(strings.Fields("--backlog 100 --prefetch 1,10 --format csv"), &out, &errb); err != nil || !strings.HasPrefix(out.String(), "prefetch,throughput_per_s,") {
		t.Errorf("csv: %v\n%s", err, out.String())
	}
}

func TestMainUsage(t *testing.T) {
	var out, errb bytes.Buffer
	for _, args := range []string{"--format xml", "--handler gamma:1", "--prefetch a", "--size 1XB", "--bandwidth fast", "extra", "--ack-every 2 --per-channel 2", "--nosuch"} {
		err := Main(strings.Fields(args), &out, &errb)
		if !errors.As(err, new(UsageError)) {
			t.Errorf("%q: %v, want a UsageError", args, err)
		}
	}
	if err := Main([]string{"-h"}, &out, &errb); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: %v", err)
	}
}
