package main

import (
	"errors"
	"io"
)

// runReplay is a placeholder until the replay command lands.
func runReplay(args []string, stdout, stderr io.Writer) error {
	return errors.New("not implemented yet")
}
