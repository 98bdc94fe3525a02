package amqptest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/amqpsim/amqpsim/scenarios"
)

// ReportEnv names the environment variable that, set to a directory, has
// every server NewServer starts write a failure report there, as
// WithFailureReport does.
const ReportEnv = "AMQPSIM_REPORT"

// WithFailureReport makes NewServer write, when the test fails, the run as
// a scenario file and its SVG sequence diagram into dir (created if
// needed), named after the test: dir/TestName.txt and TestName.svg, and
// log their paths. The file is the clients' conversation with the broker
// as the trace recorded it (scenarios.FromTrace): every method they
// called, and under it what the broker pushed in reaction; replay it with
// "amqpsim replay FILE", draw it with "amqpsim replay --svg". Without the
// option, $AMQPSIM_REPORT names the directory, if set. The trace must be
// on (not sim.Config.NoTrace).
func WithFailureReport(dir string) Option { return func(c *config) { c.reportDir = dir } }

// reportOnFailure registers, after the server's Close, a cleanup that
// writes the report if t failed: cleanups run last first, so it sees the
// broker before Close closes every connection.
func (s *Server) reportOnFailure(t testing.TB) {
	dir := s.cfg.reportDir
	if dir == "" {
		dir = os.Getenv(ReportEnv)
	}
	if dir == "" {
		return
	}
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		path, err := s.WriteReport(dir, t.Name(), "The run of "+t.Name()+", which failed.")
		if err != nil {
			t.Logf("amqptest: no failure report: %v", err)
			return
		}
		t.Logf("amqptest: the run is in %s (diagram: %s)\n%s", path, strings.TrimSuffix(path, ".txt")+".svg", confirmHint(path, len(s.broker.Nodes()) > 1))
	})
}

// WriteReport writes the run so far as a scenario (scenarios.FromTrace),
// with title as its leading comment, into dir as NAME.txt, and its
// diagram as NAME.svg, and returns the scenario file's path. name is
// cleaned into a file name ("TestX/case 1" becomes "TestX_case_1"). Use it
// where no testing.TB fails, for example in a rapid property over Start's
// servers.
func (s *Server) WriteReport(dir, name, title string) (string, error) {
	base := fileName(name)
	trace := s.broker.Trace()
	sc, res, err := scenarios.FromTrace(trace, scenarios.TraceOptions{Name: base, Title: title,
		Seed: s.broker.Config().Seed, Final: s.broker, Faults: s.traceFaults(trace)})
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, base+".txt")
	if err := os.WriteFile(path, sc.Format(), 0o644); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, base+".svg"), res.SVG(), 0o644); err != nil {
		return "", err
	}
	return path, nil
}

// fileName turns a test's name into a file name.
func fileName(name string) string {
	var b strings.Builder
	for _, r := range name {
		if r == '-' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "run"
	}
	return b.String()
}

// confirmHint is the command that runs a report on RabbitMQ and says
// whether RabbitMQ answers it as the simulator did (amqpsim confirm):
// against $AMQP_URL, or a local broker, or, for a report of several
// nodes, the cluster a command line controls.
func confirmHint(report string, cluster bool) string {
	if strings.ContainsAny(report, " \t'\"") {
		report = strconv.Quote(report)
	}
	cmd := "go run github.com/amqpsim/amqpsim/cmd/amqpsim confirm " + report
	if cluster {
		return "amqptest: to see whether a real cluster answers the run as the simulator did (CMD controls it: docs/cluster.md):\n\t" +
			cmd + " --cluster CMD"
	}
	url := "amqp://guest:guest@localhost:5672/"
	if os.Getenv("AMQP_URL") != "" {
		url = `"$AMQP_URL"`
	}
	return "amqptest: to see whether RabbitMQ answers the run as the simulator did (the failure is then in your code):\n\t" +
		cmd + " --url " + url
}
