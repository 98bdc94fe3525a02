package main

import (
	"bytes"
	"os"
	"testing"
)

// TestGeneratedUpToDate fails when wire/methods_gen.go differs from what the
// generator makes of the spec in the module cache: run "go generate ./wire/".
func TestGeneratedUpToDate(t *testing.T) {
	path, err := findSpec()
	if err != nil {
		t.Skip(err)
	}
	want, err := generateFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../methods_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("methods_gen.go is stale; run go generate ./wire/")
	}
}

func TestNames(t *testing.T) {
	for in, want := range map[string]string{"class-id": "ClassID", "reserved-1": "Reserved1", "nowait": "NoWait",
		"no-wait": "NoWait", "virtual-host": "VirtualHost", "global": "Global"} {
		if got := fieldName(in); got != want {
			t.Errorf("fieldName(%q) = %q, want %q", in, got, want)
		}
	}
	if got := typeName("update-secret-ok"); got != "UpdateSecretOk" {
		t.Errorf("typeName = %q", got)
	}
}
