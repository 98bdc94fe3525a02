package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"
)

// versionScenario declares a classic queue of storage version 1, which
// 4.3 refuses, and recorded 3.10.8's answers (declare-ok, a delivery).
const versionScenario = `source rabbitmq 3.10.8 2026-12-01
conn c1
channel c1.ch1
declare-queue ch1 q x-queue-version=1
  declare-ok ready=0 consumers=0
consume ch1 q tag=A
publish ch1 q m1
  A <- m1 #1
`

// globalQosScenario sets a channel-wide limit of one, which 4.3 takes as
// a per-consumer prefetch unless global_qos is permitted.
const globalQosScenario = `source rabbitmq 3.10.8 2026-12-01
conn c1
channel c1.ch1
declare-queue ch1 q
  declare-ok ready=0 consumers=0
qos ch1 1 global
consume ch1 q tag=A
consume ch1 q tag=B
publish ch1 q m1 m2
  A <- m1 #1
`

func writeScenario(t *testing.T, name, text string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestReplayOnAnotherRelease(t *testing.T) {
	dir := writeScenario(t, "version.txt", versionScenario)
	if code, out, errOut := runCmd("replay", dir); code != 0 {
		t.Fatalf("replay on its own release: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut := runCmd("replay", "--rabbitmq", "4.3", dir)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s%s", code, out, errOut)
	}
	for _, want := range []string{
		"DIFF version",
		"line 4: declare-queue ch1 q x-queue-version=1: 4.3 closes the channel with 406 PRECONDITION_FAILED - invalid arg 'x-queue-version' for queue 'q' in vhost '/': \"unsupported queue version '1'\"",
		"[x-queue-version 2 only]",
		"line 6: consume ch1 q tag=A: on 4.3 the channel or connection is already closed [x-queue-version 2 only] (follows from an earlier difference)",
		"1  x-queue-version 2 only  (1 file: version)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	qos := writeScenario(t, "qos.txt", globalQosScenario)
	if code, out, _ := runCmd("replay", "--rabbitmq", "4.3", qos); code != 1 || !strings.Contains(out, "DIFF qos") {
		t.Errorf("global qos on 4.3: exit %d\n%s", code, out)
	}
	if code, out, _ := runCmd("replay", "--rabbitmq", "4.3", "--permit", "global_qos", qos); code != 0 || !strings.Contains(out, "same qos") {
		t.Errorf("with the feature permitted: exit %d\n%s", code, out)
	}
	bad := writeScenario(t, "bad.txt", strings.Replace(versionScenario, "ready=0", "ready=7", 1))
	if code, out, _ := runCmd("replay", "--rabbitmq", "3.10", bad); code != 1 || !strings.Contains(out, "FAIL bad") ||
		!strings.Contains(out, "line 4: declare-queue ch1 q x-queue-version=1: the simulator of 3.10 does not answer as recorded") {
		t.Errorf("a file the simulator does not reproduce: exit %d\n%s", code, out)
	}
	if code, _, errOut := runCmd("replay", "--rabbitmq", "3.11", dir); code != 2 || !strings.Contains(errOut, "no profile for RabbitMQ") {
		t.Errorf("--rabbitmq 3.11: exit %d: %s", code, errOut)
	}
}

func TestUpgradeCheck(t *testing.T) {
	dir := writeScenario(t, "version.txt", versionScenario)
	// A difference exits 1, so that a CI job can gate on the check; no
	// difference (4.2 below) exits 0.
	code, out, errOut := runCmd("upgrade-check", dir, "--from", "3.10", "--to", "4.3")
	if code != 1 || !strings.Contains(errOut, "1 of 1 scenarios answer differently on 4.3") {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{
		"version.txt:4: declare-queue ch1 q x-queue-version=1: 4.3 closes the channel with 406",
		"upgrade check 3.10 -> 4.3: 1 of 1 scenarios answer differently, 3 steps (2 follow from an earlier difference)",
		"x-queue-version 1 is refused (from 4.3)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "version.txt:6:") {
		t.Errorf("a follow-on difference is listed without --all:\n%s", out)
	}
	code, out, _ = runCmd("upgrade-check", "--to", "4.2", "--summary", dir)
	if code != 0 || !strings.Contains(out, "0 of 1 scenarios answer differently") {
		t.Errorf("4.2: exit %d\n%s", code, out)
	}
	// A scenario the simulator does not replay as recorded on its own
	// release fails the check, though the release checked answers it as
	// that one does.
	bad := writeScenario(t, "bad.txt", strings.Replace(versionScenario, "ready=0", "ready=7", 1))
	code, out, errOut = runCmd("upgrade-check", "--to", "4.2", "--summary", bad)
	if code != 1 || !strings.Contains(out, "1 scenarios do not replay exactly on 3.10, so their differences are suspect: bad") ||
		!strings.Contains(errOut, "1 of 1 scenarios do not replay as recorded on their own release") {
		t.Errorf("a file its own release does not replay: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut := runCmd("upgrade-check", dir); code != 2 || !strings.Contains(errOut, "--to VERSION is required") {
		t.Errorf("without --to: exit %d %s", code, errOut)
	}
}

// On the built-in library, recorded on 3.10.8, 4.0.5 and 4.3.6, the
// check from 3.10 to 4.3 is read off the recordings, and to 3.12, which
// is not recorded, predicted: it changes only the quorum basic.get header
// (quorum-get.txt), the ignored x-consumer-timeout, which 3.12's channel
// tick then honours (consumer-timeout-argument-ignored.txt,
// quorum-consumer-timeout-releases.txt; the other quorum-consumer-timeout
// files end before a tick), the memory-limit policy keys classic
// queues no longer take (policy-unsupported-key.txt), and the dead letters
// streams take from 3.12 (dlx-to-stream.txt, stream-dead-letter-headers.txt).
func TestUpgradeCheckLibrary(t *testing.T) {
	code, out, errOut := runCmd("upgrade-check", "--to", "3.12", "--summary")
	if code != 1 || !strings.Contains(out, ": 6 of ") || !strings.Contains(out, "quorum basic.get without x-delivery-count 0  (1 file: quorum-get)") ||
		!strings.Contains(out, "per-queue consumer timeout  (2 files: consumer-timeout-argument-ignored, quorum-consumer-timeout-releases)") ||
		!strings.Contains(out, "classic queues refuse memory-limit policies  (1 file: policy-unsupported-key)") ||
		!strings.Contains(out, "dead letters reach streams  (2 files: dlx-to-stream, stream-dead-letter-headers)") {
		t.Errorf("3.12: exit %d\n%s%s", code, out, errOut)
	}
	_, out, _ = runCmd("upgrade-check", "--to", "4.3", "--summary")
	for _, want := range []string{"upgrade check 3.10 -> 4.3:", "global_qos denied  (", "classic delivery-count  ("} {
		if !strings.Contains(out, want) {
			t.Errorf("4.3: output lacks %q:\n%s", want, out)
		}
	}
}

// serve --rabbitmq reports the release in connection.start.
func TestServeRabbitMQVersion(t *testing.T) {
	url, _ := startServe(t, "--addr", "127.0.0.1:0", "--rabbitmq", "4.3")
	c, err := amqp.Dial(url + "?heartbeat=0")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if v := c.Properties["version"]; v != "4.3.6" {
		t.Errorf("server version %v, want 4.3.6", v)
	}
	ch, _ := c.Channel()
	if _, err := ch.QueueDeclare("v1", false, false, false, false, amqp.Table{"x-queue-version": 1}); err == nil || !strings.Contains(err.Error(), "unsupported queue version '1'") {
		t.Errorf("x-queue-version 1 on 4.3: %v", err)
	}
	if err := serve(t.Context(), []string{"--rabbitmq", "5.0"}, io.Discard, io.Discard); err == nil {
		t.Error("serve --rabbitmq 5.0 started")
	}
}
