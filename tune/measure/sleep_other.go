//go:build !linux

package measure

import "time"

func lowerTimerSlack() bool { return false }

func kernelSleep(d time.Duration) { time.Sleep(d) }
