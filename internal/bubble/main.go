package bubble

import (
	"os"
	"testing"
)

// Main runs f as the only test of a program, so that a program (not a
// test binary) can run code that needs a *testing.T, such as
// synctest.Test, which replays scenarios over the in-memory wire in a
// bubble. It does not return: the process exits with f's exit code, or 1
// when f failed the test. The program's own flags must be parsed before:
// Main replaces os.Args so that the testing package sees none of them.
func Main(f func(t *testing.T) int) {
	os.Args = []string{os.Args[0], "-test.run=^main$"}
	testing.Main(func(string, string) (bool, error) { return true, nil },
		[]testing.InternalTest{{Name: "main", F: func(t *testing.T) {
			code := f(t)
			if !t.Failed() {
				os.Exit(code) // before testing prints PASS
			}
		}}}, nil, nil)
}
