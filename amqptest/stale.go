package amqptest

import (
	"os"
	"path/filepath"
	"strings"
	"unicode"
)

// Rapid keeps each failure of a property as a fail file under
// testdata/rapid/TEST/, and replays every one of them first on each later
// run of the test. Once the failure is fixed the file only costs the
// replay (and CheckUnderFaults re-runs the first schedule it tries), and
// it is easily forgotten: CheckUnderFaults removes the fail files that no
// longer fail, when the property holds, and says so.

// failFiles returns the fail files rapid would replay for the test named
// name (rapid v1.3.0 persist.go: failFilePattern, kindaSafeFilename).
func failFiles(name string) []string {
	var b strings.Builder
	for _, r := range name {
		if unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_' {
			b.WriteRune(r)
		} else {
			b.WriteRune('_')
		}
	}
	safe := b.String()
	files, _ := filepath.Glob(filepath.Join("testdata", "rapid", safe, safe+"-*.fail"))
	return files
}

// removeStale removes fail files the property passed, and returns the
// line that says so, or "".
func removeStale(files []string) string {
	var removed []string
	for _, f := range files {
		if os.Remove(f) == nil {
			removed = append(removed, f)
		}
	}
	if len(removed) == 0 {
		return ""
	}
	_ = os.Remove(filepath.Dir(removed[0])) // only if empty
	return "amqptest: removed rapid's fail files of failures that no longer happen (rapid replays them first on every run): " +
		strings.Join(removed, ", ")
}
