package main

import (
	"errors"
	"io"
)

// runRecord is a placeholder until the record command lands.
func runRecord(args []string, stdout, stderr io.Writer) error {
	return errors.New("not implemented yet")
}
