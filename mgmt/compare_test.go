package mgmt_test

import "testing"

func newSimTarget(t *testing.T) *target { t.Fatal("not yet"); return nil }

func compareRecording(t *testing.T, want, got []exchange, ports []string) {}
