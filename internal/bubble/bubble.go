// Package bubble helps tests that run in a testing/synctest bubble.
package bubble

import (
	"runtime"
	"strings"
	"testing"
	"testing/synctest"
)

// Subtest runs a subtest in a synctest bubble of its own, so that its waits
// and deadlines are on the bubble's fake clock: they fire only once every
// goroutine is blocked, never because the machine is slow.
func Subtest(f func(t *testing.T)) func(t *testing.T) {
	return func(t *testing.T) { synctest.Test(t, f) }
}

// Goroutines counts the goroutines of the caller's synctest bubble in a
// dump of every goroutine, and returns the dump. Unlike
// runtime.NumGoroutine it leaves out the runtime's goroutines (a finalizer
// running user code counts there) and other tests', which come and go on
// their own; after synctest.Wait the count is exact. It panics outside a
// bubble.
func Goroutines() (int, string) {
	dump := Dump()
	first, _, _ := strings.Cut(dump, "\n") // the caller's goroutine comes first
	i := strings.Index(first, "synctest bubble ")
	if i < 0 {
		panic("bubble.Goroutines called outside a synctest bubble")
	}
	id := strings.TrimSuffix(first[i:], ":") // "synctest bubble 7]"
	n := 0
	for _, l := range strings.Split(dump, "\n") {
		if strings.HasPrefix(l, "goroutine ") && strings.HasSuffix(l, id+":") {
			n++
		}
	}
	return n, dump
}

// Dump returns the stacks of every goroutine (runtime.Stack), the
// caller's first.
func Dump() string {
	buf := make([]byte, 1<<16)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return string(buf[:n])
		}
		buf = make([]byte, 2*len(buf))
	}
}
