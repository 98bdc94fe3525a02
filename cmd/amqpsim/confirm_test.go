package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// confirmReport is a failure report whose answers are the same on every
// release; plant edits it.
const confirmReport = `# a report, as amqptest writes one
source simulator trace

conn c1
channel c1.ch1
declare-queue ch1 q
  declare-ok ready=0 consumers=0
publish ch1 q m1 m2
qos ch1 1
consume ch1 q tag=A
  A <- m1 #1
ack ch1 m1
  A <- m2 #2
close c1
queue q
  q ready=1 unacked=0 consumers=0
`

// TestConfirmAgainstBroker: amqpsim confirm says RabbitMQ answers a
// report the same (exit 0), differently at a step (exit 1, a divergence),
// or cannot take one of its faults (exit 1, not confirmable past it); it
// needs AMQP_URL.
func TestConfirmAgainstBroker(t *testing.T) {
	url := os.Getenv("AMQP_URL")
	if url == "" {
		t.Skip("needs a RabbitMQ broker: set AMQP_URL=amqp://guest:guest@127.0.0.1:5672/ to run")
	}
	for _, c := range []struct {
		name   string
		report string
		code   int
		says   []string
	}{
		{"agrees", confirmReport, 0, []string{" answers the same: the failure is in your code.", " answered every step as the simulator did"}},
		{"diverges", strings.Replace(confirmReport, "A <- m2 #2", "A <- m2 #2 redelivered", 1), 1,
			[]string{" answers differently at step 7: this is a simulator divergence.", "report.txt:12: ack ch1 m1",
				"A <- m2 #2 redelivered | A <- m2 #2"}},
		{"not confirmable", strings.Replace(confirmReport, "close c1\n", "fault nack-publishes 1\nclose c1\n", 1), 1,
			[]string{"Not confirmable from step 8 on: ", "report.txt:14: fault nack-publishes 1", "RabbitMQ nacks a publish only when a queue refuses it",
				" answered the 7 steps before as the simulator did"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "report.txt")
			if err := os.WriteFile(path, []byte(c.report), 0o644); err != nil {
				t.Fatal(err)
			}
			code, out, errOut := runCmd("confirm", path, "--url", url, "--runs", "2")
			if code != c.code {
				t.Errorf("exit %d, want %d\n%s%s", code, c.code, out, errOut)
			}
			for _, want := range c.says {
				if !strings.Contains(out, want) {
					t.Errorf("the verdict lacks %q:\n%s", want, out)
				}
			}
			if !strings.Contains(errOut, "run 2 of 2: ") {
				t.Errorf("no progress on stderr: %s", errOut)
			}
		})
	}
}

func TestConfirmUsageErrors(t *testing.T) {
	t.Setenv("AMQP_URL", "")
	path := filepath.Join(t.TempDir(), "report.txt")
	os.WriteFile(path, []byte(confirmReport), 0o644)
	cluster := filepath.Join(t.TempDir(), "cluster.txt")
	os.WriteFile(cluster, []byte("cluster 3\nconn c1\n"), 0o644)
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"confirm", path}, "--url is required"},
		{[]string{"confirm"}, "name one report FILE"},
		{[]string{"confirm", path, path, "--url", "amqp://x/"}, "name one report FILE"},
		{[]string{"confirm", cluster, "--url", "amqp://x/"}, "runs on a cluster of 3 nodes: confirm it with --cluster CMD"},
	} {
		code, _, errOut := runCmd(c.args...)
		if code != 2 || !strings.Contains(errOut, c.says) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", c.args, code, errOut, c.says)
		}
	}
}
