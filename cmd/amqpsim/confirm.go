package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/amqpsim/amqpsim/scenarios"
)

// errVerdict is confirm's exit status when RabbitMQ does not simply agree:
// the verdict, printed, says why.
var errVerdict = errors.New("RabbitMQ does not answer as the simulator did (see above)")

// runConfirm runs a failure report against a real broker, or the real
// cluster for a cluster report, a few times, and says whether RabbitMQ
// answers as the simulator did (scenarios.ConfirmReport). It exits 0 when
// RabbitMQ agrees, 1 otherwise.
func runConfirm(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("confirm", flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("url", os.Getenv("AMQP_URL"), "the broker's AMQP URL (default $AMQP_URL)")
	ctl := fs.String("rabbitmqctl", "", "the command line that runs the broker's rabbitmqctl, for the steps AMQP cannot take\n(a fault close-connection, alarms, policies; default $RABBITMQCTL, else rabbitmqctl)")
	cluster := fs.String("cluster", "", "for a cluster report: the command line that controls the real cluster, such as \"scripts/rabbitmq cluster\"")
	runs := fs.Int("runs", 3, "how many times to run the report: RabbitMQ races in places")
	window := fs.Duration("window", scenarios.DefaultWindow, "how long the broker must stay silent after a step before its answers are read")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: amqpsim confirm REPORT.txt --url URL [--rabbitmqctl CMD] [--runs 3]")
		fmt.Fprintln(stderr, "       amqpsim confirm REPORT.txt --cluster CMD [--runs 3]")
		fmt.Fprintln(stderr, "\nRuns a failure report (amqptest.WithFailureReport, CheckUnderFaults) as written")
		fmt.Fprintln(stderr, "against RabbitMQ and says whether RabbitMQ answers every step as the simulator did")
		fmt.Fprintln(stderr, "(the failure is in your code), differently at a step (a simulator divergence), or")
		fmt.Fprintln(stderr, "differently from run to run (RabbitMQ races). A fault a real broker cannot take on")
		fmt.Fprintln(stderr, "command stops the runs there. Exit status 0 when RabbitMQ answers the same.")
		fs.PrintDefaults()
	}
	// The report comes first on the command line, as printed with a failure.
	var files []string
	for len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		files, args = append(files, args[0]), args[1:]
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err.Error()}
	}
	files = append(files, fs.Args()...)
	if len(files) != 1 {
		return usageError{"name one report FILE"}
	}
	s, err := scenarios.ParseFile(files[0])
	if err != nil {
		return err
	}
	o := scenarios.ConfirmOptions{Runs: *runs, RecordOptions: scenarios.RecordOptions{URL: *url, Rabbitmqctl: *ctl, Window: *window}}
	switch {
	case s.Cluster != nil && *cluster == "":
		return usageError{fmt.Sprintf("%s runs on a cluster of %d nodes: confirm it with --cluster CMD", s.Path, s.Cluster.Nodes)}
	case s.Cluster != nil:
		o.RecordOptions = scenarios.RecordOptions{Cluster: *cluster, Window: *window}
	case *url == "":
		return usageError{"--url is required (or set AMQP_URL)"}
	}
	o.Ran = func(run int, err error) {
		status := "done"
		if err != nil {
			status = err.Error()
		}
		fmt.Fprintf(stderr, "run %d of %d: %s\n", run, *runs, status)
	}
	v, err := scenarios.ConfirmReport(s, o)
	if err != nil {
		return err
	}
	fmt.Fprint(stdout, v)
	if v.Outcome != scenarios.Agrees {
		return errVerdict
	}
	return nil
}
