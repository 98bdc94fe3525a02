package main

import (
	"errors"
	"io"

	"github.com/amqpsim/amqpsim/tune"
	"github.com/amqpsim/amqpsim/tune/measure"
)

// runTune runs a prefetch sweep on the simulator, or with "calibrate" first
// measures a real broker's costs for it.
func runTune(args []string, stdout, stderr io.Writer) error {
	var err error
	if len(args) > 0 && args[0] == "calibrate" {
		err = measure.CalibrateMain(args[1:], stdout, stderr)
	} else {
		err = tune.Main(args, stdout, stderr)
	}
	if ue := (tune.UsageError{}); errors.As(err, &ue) {
		return usageError{ue.Msg}
	}
	return err
}
