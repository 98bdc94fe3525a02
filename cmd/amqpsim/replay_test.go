package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/amqpsim/amqpsim/scenarios"
)

// runCmd runs the command line and returns its exit code and output.
func runCmd(args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestReplayLibraryByDefault(t *testing.T) {
	code, out, errOut := runCmd("replay")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	if !strings.Contains(out, "ok   seed000-two-consumers") || !strings.Contains(out, " ok, 0 diverged") {
		t.Errorf("output:\n%s", out)
	}
}

func TestReplayDivergenceExitsNonZero(t *testing.T) {
	dir := t.TempDir()
	good := "source hand-written\nconn c1\nchannel c1.ch1\ndeclare-queue ch1 q\n  declare-ok ready=0 consumers=0\n"
	bad := "source hand-written\nconn c1\nchannel c1.ch1\ndeclare-queue ch1 q\n  declare-ok ready=9 consumers=0\n"
	os.WriteFile(filepath.Join(dir, "a-good.txt"), []byte(good), 0o644)
	os.WriteFile(filepath.Join(dir, "b-bad.txt"), []byte(bad), 0o644)
	code, out, errOut := runCmd("replay", dir)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"ok   a-good", "FAIL b-bad", "b-bad.txt:4: declare-queue ch1 q", "2 scenarios: 1 ok, 1 diverged"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errOut, "1 of 2 scenarios diverge") {
		t.Errorf("stderr: %s", errOut)
	}
}

// A file without expectations (no source, no results) is not said to
// diverge: replay says to record it first, still draws it, and fails only
// when nothing at all could be compared. Beside a recorded file it does
// not fail the run; on another release only the releases are compared.
func TestReplayUnrecordedSaysRecordFirst(t *testing.T) {
	dir := t.TempDir()
	fresh := filepath.Join(dir, "fresh.txt")
	os.WriteFile(fresh, []byte("# written, not recorded\nconn c1\nchannel c1.ch1\ndeclare-queue ch1 q\npublish ch1 q m1\nget ch1 q\n"), 0o644)
	svg := filepath.Join(dir, "fresh.svg")
	code, out, errOut := runCmd("replay", "--timeline", "--svg", svg, fresh)
	if code != 1 || !strings.Contains(errOut, "no expectations to compare with: record the scenarios first") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
	for _, want := range []string{"NEW  fresh", "without expectations: record them first (amqpsim record --url URL FILE)",
		"1 scenarios: 0 ok, 0 diverged, 1 without expectations (record them first)"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "FAIL") || strings.Contains(out, "results differ") {
		t.Errorf("a file without expectations diverged:\n%s", out)
	}
	if _, err := os.Stat(svg); err != nil {
		t.Errorf("no diagram: %v", err)
	}
	good := filepath.Join(dir, "good.txt")
	os.WriteFile(good, []byte("source hand-written\nconn c1\nchannel c1.ch1\ndeclare-queue ch1 q\n  declare-ok ready=0 consumers=0\n"), 0o644)
	if code, out, errOut := runCmd("replay", fresh, good); code != 0 || !strings.Contains(out, "2 scenarios: 1 ok, 0 diverged, 1 without expectations") {
		t.Errorf("beside a recorded file: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := runCmd("replay", "--rabbitmq", "3.10", fresh); code != 0 || !strings.Contains(out, "NEW  fresh") || strings.Contains(out, "does not answer as recorded") {
		t.Errorf("--rabbitmq 3.10: exit %d\n%s%s", code, out, errOut)
	}
}

func TestReplayTimelineAndSVG(t *testing.T) {
	svg := filepath.Join(t.TempDir(), "seed.svg")
	code, out, errOut := runCmd("replay", "--timeline", "--svg", svg, "../../scenarios/library/seed000-two-consumers.txt")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	if !strings.Contains(out, "A (channel ch1, queue orders, prefetch 2)") || !strings.Contains(out, "m1 #1") {
		t.Errorf("timeline missing:\n%s", out)
	}
	data, err := os.ReadFile(svg)
	if err != nil || !bytes.HasPrefix(data, []byte("<svg")) {
		t.Errorf("svg: %v %.40s", err, data)
	}
	dir := filepath.Join(t.TempDir(), "svgs")
	if code, out, errOut := runCmd("replay", "--svg", dir, "../../scenarios/library/seed000-two-consumers.txt", "../../scenarios/library/recover.txt"); code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "recover.svg")); err != nil {
		t.Error(err)
	}
}

func TestReplayAndRecordUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"replay", "--bogus"},
		{"record", "x.txt"},
		{"record", "--url", "amqp://localhost/"},
	} {
		t.Setenv("AMQP_URL", "")
		if code, _, errOut := runCmd(args...); code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", args, code, errOut)
		}
	}
	if code, _, errOut := runCmd("replay", "no/such/file.txt"); code != 1 {
		t.Errorf("missing file: exit %d, want 1 (%s)", code, errOut)
	}
	bad := filepath.Join(t.TempDir(), "bad.txt")
	os.WriteFile(bad, []byte("conn c1\nqos ch1 2\n"), 0o644)
	if code, _, errOut := runCmd("replay", bad); code != 1 || !strings.Contains(errOut, "bad.txt:2:5: unknown channel") {
		t.Errorf("parse error: exit %d (%s)", code, errOut)
	}
}

// TestRecordAgainstBroker records a scenario with the CLI into a copy and
// checks it with --check; it needs AMQP_URL.
func TestRecordAgainstBroker(t *testing.T) {
	url := os.Getenv("AMQP_URL")
	if url == "" {
		t.Skip("needs a RabbitMQ broker: set AMQP_URL=amqp://guest:guest@127.0.0.1:5672/ to run")
	}
	src, err := os.ReadFile("../../scenarios/library/seed000-two-consumers.txt")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "seed.txt")
	// Drop the expectations and the releases they are of; record fills
	// them in again, for the broker's release.
	var kept []string
	for _, l := range strings.Split(string(src), "\n") {
		if !strings.HasPrefix(l, "  ") && !strings.HasPrefix(l, "source ") {
			kept = append(kept, l)
		}
	}
	os.WriteFile(file, []byte(strings.Join(kept, "\n")), 0o644)
	code, out, errOut := runCmd("record", "--url", url, file)
	if code != 0 || !strings.Contains(out, "[1/1] recorded "+file) {
		t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
	}
	// The progress line names the broker's release, the one the file's
	// new source line has.
	rec, err := scenarios.ParseFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if want := " on " + rec.Version.String() + " ("; !strings.Contains(out, want) {
		t.Errorf("record printed %q, want it to name release %v", out, rec.Version)
	}
	if code, out, errOut := runCmd("record", "--url", url, "--check", file); code != 0 || !strings.Contains(out, "same") {
		t.Fatalf("record --check: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := runCmd("replay", file); code != 0 {
		t.Fatalf("replay: exit %d\n%s%s", code, out, errOut)
	}
}

// A cluster scenario is recorded on the cluster --cluster controls, any
// other on the --url brokers: each is refused the other way, before any
// broker is contacted.
func TestRecordClusterScenariosOnACluster(t *testing.T) {
	// record's --url defaults to $AMQP_URL, which the fidelity checks
	// set: without it, the single-broker file has no broker to go to.
	t.Setenv("AMQP_URL", "")
	dir := t.TempDir()
	cl := filepath.Join(dir, "cl.txt")
	os.WriteFile(cl, []byte("cluster 3\nconn c1 node=2\nstop-node 2\n"), 0o644)
	one := filepath.Join(dir, "one.txt")
	os.WriteFile(one, []byte("conn c1\n"), 0o644)
	if code, _, errOut := runCmd("record", "--url", "amqp://guest:guest@127.0.0.1:1/", cl); code != 1 || !strings.Contains(errOut, "runs on a cluster of 3 nodes: record it with --cluster CMD") {
		t.Errorf("cluster file with --url: exit %d (%s)", code, errOut)
	}
	if code, _, errOut := runCmd("record", "--cluster", "false", one); code != 1 || !strings.Contains(errOut, "runs on a single broker: record it with --url URL") {
		t.Errorf("single-broker file with --cluster: exit %d (%s)", code, errOut)
	}
	if code, out, errOut := runCmd("replay", cl); code != 1 || !strings.Contains(out, "NEW  cl") {
		t.Errorf("replay of an unrecorded cluster file: exit %d\n%s%s", code, out, errOut)
	}
}
