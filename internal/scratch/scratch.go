// Package scratch holds what the hot paths share for their reused scratch
// slices.
package scratch

// Zero clears s element by element: on the short scratch slices of the
// hot paths this is cheaper than clear, which calls into the runtime (and
// through a bulk write barrier while the GC runs). The indexed loop keeps
// the compiler from turning it back into clear.
func Zero[T any](s []T) {
	var z T
	for i := 0; i < len(s); i++ {
		s[i] = z
	}
}
