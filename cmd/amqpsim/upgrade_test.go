package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"
)

// transientScenario declares a transient non-exclusive queue, which 4.3
// refuses, and recorded 3.10.8's answers (declare-ok, a delivery).
const transientScenario = `source rabbitmq 3.10.8 2026-12-01
conn c1
channel c1.ch1
declare-queue ch1 q
  declare-ok ready=0 consumers=0
consume ch1 q tag=A
publish ch1 q m1
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
	dir := writeScenario(t, "transient.txt", transientScenario)
	if code, out, errOut := runCmd("replay", dir); code != 0 {
		t.Fatalf("replay on its own release: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut := runCmd("replay", "--rabbitmq", "4.3", dir)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s%s", code, out, errOut)
	}
	for _, want := range []string{
		"DIFF transient",
		"line 4: declare-queue ch1 q: 4.3 closes the connection with 541 INTERNAL_ERROR - Feature `transient_nonexcl_queues` is deprecated.",
		"[transient_nonexcl_queues denied]",
		"line 6: consume ch1 q tag=A: on 4.3 the channel or connection is already closed [transient_nonexcl_queues denied] (follows from an earlier difference)",
		"1  transient_nonexcl_queues denied  (1 file: transient)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if code, out, _ := runCmd("replay", "--rabbitmq", "4.3", "--permit", "transient_nonexcl_queues", dir); code != 0 || !strings.Contains(out, "same transient") {
		t.Errorf("with the feature permitted: exit %d\n%s", code, out)
	}
	bad := writeScenario(t, "bad.txt", strings.Replace(transientScenario, "ready=0", "ready=7", 1))
	if code, out, _ := runCmd("replay", "--rabbitmq", "3.10", bad); code != 1 || !strings.Contains(out, "FAIL bad") ||
		!strings.Contains(out, "line 4: declare-queue ch1 q: the simulator of 3.10 does not answer as recorded") {
		t.Errorf("a file the simulator does not reproduce: exit %d\n%s", code, out)
	}
	if code, _, errOut := runCmd("replay", "--rabbitmq", "3.11", dir); code != 2 || !strings.Contains(errOut, "no profile for RabbitMQ") {
		t.Errorf("--rabbitmq 3.11: exit %d: %s", code, errOut)
	}
}

func TestUpgradeCheck(t *testing.T) {
	dir := writeScenario(t, "transient.txt", transientScenario)
	// A difference exits 1, so that a CI job can gate on the check; no
	// difference (4.2 below) exits 0.
	code, out, errOut := runCmd("upgrade-check", dir, "--from", "3.10", "--to", "4.3")
	if code != 1 || !strings.Contains(errOut, "1 of 1 scenarios answer differently on 4.3") {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{
		"transient.txt:4: declare-queue ch1 q: 4.3 closes the connection with 541",
		"upgrade check 3.10 -> 4.3: 1 of 1 scenarios answer differently, 3 steps (2 follow from an earlier difference)",
		"declare it durable or exclusive, or permit the feature (from 4.3)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "transient.txt:6:") {
		t.Errorf("a follow-on difference is listed without --all:\n%s", out)
	}
	code, out, _ = runCmd("upgrade-check", "--to", "4.2", "--summary", dir)
	if code != 0 || !strings.Contains(out, "0 of 1 scenarios answer differently") {
		t.Errorf("4.2: exit %d\n%s", code, out)
	}
	if code, _, errOut := runCmd("upgrade-check", dir); code != 2 || !strings.Contains(errOut, "--to VERSION is required") {
		t.Errorf("without --to: exit %d %s", code, errOut)
	}
}

// On the built-in library, recorded on 3.10.8, 3.12 changes only the
// quorum basic.get header (quorum-get.txt) and the ignored
// x-consumer-timeout (consumer-timeout-argument-ignored.txt), and 4.3
// refuses the transient queues most scenarios declare.
func TestUpgradeCheckLibrary(t *testing.T) {
	code, out, errOut := runCmd("upgrade-check", "--to", "3.12", "--summary")
	if code != 1 || !strings.Contains(out, ": 2 of ") || !strings.Contains(out, "quorum basic.get without x-delivery-count 0  (1 file: quorum-get)") ||
		!strings.Contains(out, "per-queue consumer timeout  (1 file: consumer-timeout-argument-ignored)") {
		t.Errorf("3.12: exit %d\n%s%s", code, out, errOut)
	}
	_, out, _ = runCmd("upgrade-check", "--to", "4.3", "--summary")
	if !strings.Contains(out, "transient_nonexcl_queues denied") {
		t.Errorf("4.3:\n%s", out)
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
	if v := c.Properties["version"]; v != "4.3.5" {
		t.Errorf("server version %v, want 4.3.5", v)
	}
	ch, _ := c.Channel()
	if _, err := ch.QueueDeclare("transient", false, false, false, false, nil); err == nil || !strings.Contains(err.Error(), "541") {
		t.Errorf("transient declare on 4.3: %v", err)
	}
	if err := serve(t.Context(), []string{"--rabbitmq", "5.0"}, io.Discard, io.Discard); err == nil {
		t.Error("serve --rabbitmq 5.0 started")
	}
}
