package main

import (
	"io"

	"example.com/apigateway-operator/reloader"
)

// runReloader is the reloader subcommand: the gateway pods run this very
// binary, copied from the operator's image by an init container, as their
// first process (package reloader).
func runReloader(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	return reloader.Main(args, stdout, stderr)
}
