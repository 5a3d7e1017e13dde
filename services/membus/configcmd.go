package main

import (
	"fmt"
	"io"

	"github.com/membus/membus/services/membus/internal/app"
)

// configCmd prints the effective configuration with secrets redacted.
func configCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "print" {
		fmt.Fprintln(stderr, "usage: membus config print [flags]")
		return 2
	}
	cfg, err := app.LoadConfig("membus config print", args[1:], stderr)
	if err != nil {
		fmt.Fprintf(stderr, "membus config: %v\n", err)
		return 2
	}
	if err := cfg.Redacted().WriteYAML(stdout); err != nil {
		fmt.Fprintf(stderr, "membus config: %v\n", err)
		return 1
	}
	return 0
}
