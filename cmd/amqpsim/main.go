// Command amqpsim runs the AMQP 0-9-1 broker simulator from the command line.
//
// Usage:
//
//	amqpsim serve  [flags]               serve the simulator over TCP
//	amqpsim replay [flags] [FILE|DIR...] replay scenarios on the simulator
//	amqpsim upgrade-check --to V [FILE|DIR...] where another release answers differently
//	amqpsim record [flags] FILE|DIR...   record scenarios against a broker
//	amqpsim confirm REPORT --url URL     does RabbitMQ answer a failure report as the simulator did?
//	amqpsim tune   [flags]               choose a prefetch by simulation
//	amqpsim tune calibrate --url URL     measure a broker's costs for tune
//
// Run "amqpsim COMMAND -h" for a command's flags.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

// command is one subcommand: it parses its own flags from args and writes
// its output to stdout.
type command struct {
	name    string
	summary string
	run     func(args []string, stdout, stderr io.Writer) error
}

var commands = []command{
	{"serve", "serve the simulator over TCP", runServe},
	{"replay", "replay scenarios on the simulator", runReplay},
	{"upgrade-check", "report where another RabbitMQ release answers scenarios differently", runUpgradeCheck},
	{"record", "record scenarios against a broker", runRecord},
	{"confirm", "run a failure report on RabbitMQ: is the failure in your code or in the simulator?", runConfirm},
	{"fuzz", "record random scenarios on brokers and replay them on the simulator", runFuzz},
	{"tune", "choose a prefetch by simulation", runTune},
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes the command line and returns the process exit code: 0 on
// success, 1 on failure, 2 on a usage error.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	for _, c := range commands {
		if c.name == args[0] {
			err := c.run(args[1:], stdout, stderr)
			switch {
			case err == nil:
				return 0
			case errors.Is(err, flag.ErrHelp):
				return 0
			case errors.As(err, new(usageError)):
				fmt.Fprintf(stderr, "amqpsim %s: %v\n", c.name, err)
				return 2
			default:
				fmt.Fprintf(stderr, "amqpsim %s: %v\n", c.name, err)
				return 1
			}
		}
	}
	fmt.Fprintf(stderr, "amqpsim: unknown command %q\n", args[0])
	usage(stderr)
	return 2
}

// usageError is a mistake on the command line (exit code 2).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: amqpsim COMMAND [flags] [args]")
	fmt.Fprintln(w, "\ncommands:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-13s %s\n", c.name, c.summary)
	}
}
