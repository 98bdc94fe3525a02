//go:build !unix

package amqptest

import "time"

// processStart stands for the process's start where no CPU time is read.
var processStart = time.Now()

// cpuTime is the time since the process started: where the process's CPU
// time is not read, the spin watchdog counts real time, as if the
// process had the CPU all along.
func cpuTime() time.Duration { return time.Since(processStart) }
