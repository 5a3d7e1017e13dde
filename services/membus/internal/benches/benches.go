package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
)

// benches are the `membus bench <name>` commands, one file each (bench_<name>.go).
var benches = map[string]func(args []string, stdout, stderr io.Writer) int{
	"ingest": benchIngestCmd,
	"e2e":    benchE2ECmd,
	"http":   benchHTTPCmd,
	"recall": benchRecallCmd,
	"embed":  benchEmbedCmd,
}

// benchCmd runs `membus bench <name>`: each bench reports a floor measured in the same run and
// the ratio, because absolute times on a shared machine are noisy.
func benchCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || benches[args[0]] == nil {
		var names []string
		for n := range benches {
			names = append(names, n)
		}
		sort.Strings(names)
		fmt.Fprintf(stderr, "usage: membus bench %s [flags] (membus bench <name> --help lists them)\n", strings.Join(names, "|"))
		return 2
	}
	return benches[args[0]](args[1:], stdout, stderr)
}
