package main

import (
	"errors"
	"io"
)

// runServe is a placeholder until the serve command lands.
func runServe(args []string, stdout, stderr io.Writer) error {
	return errors.New("not implemented yet")
}
