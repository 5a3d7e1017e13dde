// Package benches holds the `membus bench` commands, one file each. They start membus through
// the shared harness and print docs/design.md §10 JSON Lines (--json) or a table.
package benches

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/membus/membus/pkg/bench"
)

// Command is `membus bench`: each bench starts a fresh membus in-process, reports a floor
// measured in the same run and the ratio to it, because absolute times on a shared machine are
// noisy.
func Command() *cobra.Command {
	cmd := &cobra.Command{Use: "bench", Short: "measure throughput and latency against a floor measured in the same run"}
	cmd.AddCommand(benchIngestCmd(), benchE2ECmd(), benchHTTPCmd(), benchRecallCmd(), benchEmbedCmd())
	return cmd
}

// writeResults prints a bench's results as docs/design.md §10 JSON Lines or a table and returns the exit
// code.
func writeResults(stdout, stderr io.Writer, name string, asJSON bool, results []bench.Result) int {
	write := bench.WriteTable
	if asJSON {
		write = bench.WriteJSON
	}
	if err := write(stdout, results...); err != nil {
		fmt.Fprintf(stderr, "membus bench %s: %v\n", name, err)
		return 1
	}
	return 0
}
