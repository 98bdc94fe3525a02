package measure

import (
	"syscall"
	"time"
)

// lowerTimerSlack sets the thread's timer slack to 1 ns
// (prctl(PR_SET_TIMERSLACK)).
func lowerTimerSlack() bool {
	const prSetTimerSlack = 29
	_, _, errno := syscall.Syscall(syscall.SYS_PRCTL, prSetTimerSlack, 1, 0)
	return errno == 0
}

// kernelSleep blocks the thread in nanosleep(2) for d.
func kernelSleep(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	for syscall.Nanosleep(&ts, &ts) == syscall.EINTR {
	}
}
