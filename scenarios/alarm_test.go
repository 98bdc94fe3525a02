package scenarios

import (
	"slices"
	"testing"
)

// TestSettingArgs: the node's settings, as rabbitmqctl eval prints them,
// become the arguments that set them back.
func TestSettingArgs(t *testing.T) {
	for term, want := range map[string][]string{
		"0.4\n":                   {"0.4"},
		"50000000\n":              {"50000000"},
		"{absolute,1073741824}\n": {"absolute", "1073741824"},
		"{mem_relative, 1.5}\n":   {"mem_relative", "1.5"},
	} {
		if got := settingArgs(term); !slices.Equal(got, want) {
			t.Errorf("settingArgs(%q) = %q, want %q", term, got, want)
		}
	}
}
