package eval

import (
	"io"

	"github.com/membus/membus/services/membus/internal/cli"
)

// run runs `membus eval …` in-process, as main does, and returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "eval" {
		args = args[1:]
	}
	return cli.Run(Command(), args, stdout, stderr)
}
