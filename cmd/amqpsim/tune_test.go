package main

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTuneCommand(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(strings.Fields("tune --consumers 2 --handler 1ms --rtt 1ms --backlog 500 --prefetch 1,10"), &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "recommended: prefetch 10,") {
		t.Errorf("output:\n%s", out.String())
	}
	out.Reset()
	if code := run(strings.Fields("tune --backlog 100 --prefetch 1 --format json"), &out, &errb); code != 0 || !strings.Contains(out.String(), `"recommended_prefetch": 1`) {
		t.Errorf("json: exit %d\n%s", code, out.String())
	}
	if code := run(strings.Fields("tune --format xml"), &out, &errb); code != 2 {
		t.Errorf("a bad flag: exit %d, want 2", code)
	}
	t.Setenv("AMQP_URL", "")
	errb.Reset()
	if code := run(strings.Fields("tune calibrate"), &out, &errb); code != 2 || !strings.Contains(errb.String(), "--url is required") {
		t.Errorf("calibrate without a URL: exit %d, %q", code, errb.String())
	}
}

// TestTuneSweep: the table names the knee, --svg writes the plot, and
// --format csv writes CSV.
func TestTuneSweep(t *testing.T) {
	svg := filepath.Join(t.TempDir(), "plot.svg")
	var out, errb bytes.Buffer
	err := runTune(strings.Fields("--consumers 4 --handler 5ms --rtt 2ms --size 1KiB --backlog 2000 --prefetch 1,2,5,10 --svg "+svg), &out, &errb)
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
	if err := runTune(strings.Fields("--backlog 100 --prefetch 1,10 --format csv"), &out, &errb); err != nil || !strings.HasPrefix(out.String(), "prefetch,throughput_per_s,") {
		t.Errorf("csv: %v\n%s", err, out.String())
	}
}

// TestTuneUsage: a bad flag, value or combination is a usage error (exit
// code 2), -h is help.
func TestTuneUsage(t *testing.T) {
	var out, errb bytes.Buffer
	for _, args := range []string{"--format xml", "--handler gamma:1", "--prefetch a", "--size 1XB", "--bandwidth fast", "extra", "--ack-every 2 --per-channel 2", "--nosuch",
		"--global", "--global --rabbitmq 4.3", "--rabbitmq 5.0",
		"calibrate --url amqp://x extra", "calibrate --nosuch"} {
		err := runTune(strings.Fields(args), &out, &errb)
		if !errors.As(err, new(usageError)) {
			t.Errorf("%q: %v, want a usageError", args, err)
		}
	}
	if err := runTune(strings.Fields("--global --rabbitmq 3.10 --per-channel 2 --consumers 2 --backlog 100 --prefetch 2"), &out, &errb); err != nil {
		t.Errorf("--global on 3.10: %v", err)
	}
	for _, args := range []string{"-h", "calibrate -h"} {
		if err := runTune(strings.Fields(args), &out, &errb); !errors.Is(err, flag.ErrHelp) {
			t.Errorf("%s: %v", args, err)
		}
	}
}

func TestTuneUnits(t *testing.T) {
	for in, want := range map[string]int{"512": 512, "1KiB": 1024, "1KB": 1000, "4MiB": 4 << 20, "2 MB": 2e6} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for in, want := range map[string]float64{"0": 0, "1Gbit": 125e6, "100Mbit/s": 12.5e6, "50MB": 50e6, "50MB/s": 50e6} {
		if got, err := parseBandwidth(in); err != nil || got != want {
			t.Errorf("parseBandwidth(%q) = %g, %v; want %g", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "1XB", "-5", "KiB"} {
		if _, err := parseSize(bad); err == nil {
			t.Errorf("parseSize(%q) succeeded", bad)
		}
	}
	if _, err := parsePrefetch("1,x"); err == nil {
		t.Error(`parsePrefetch("1,x") succeeded`)
	}
	if got, err := parsePrefetch("0, 1,10"); err != nil || len(got) != 3 || got[0] != 0 || got[2] != 10 {
		t.Errorf("parsePrefetch = %v, %v", got, err)
	}
}
