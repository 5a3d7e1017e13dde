// Command membus is the one binary of membus: `membus up` runs everything embedded, `membus
// <service>` runs one service against external NATS/MySQL/Redis, and the rest are operator
// tools (keys, dlq, tail, config).
package main

import (
	"fmt"
	"io"
	"os"
	"strings"
)

const usage = `membus — long-term memory and context engine for OpenClaw agents

Usage:
  membus up [flags]                 run every service in one process (embedded NATS, SQLite)
  membus ingest|extract|recall|summarizer|gateway [flags]
                                    run one service (distributed mode: MEMBUS_NATS_URL, MEMBUS_MYSQL_DSN, …)
  membus keys create --account A [--user U] --role user|admin|operator [--name N]
  membus keys list [--account A]
  membus keys revoke ID
  membus dlq ls [--filter SUBJECT] [--limit N] | show SEQ [--json] | replay SEQ
  membus tail metrics|events
  membus top [--interval D] [--once]  the dashboard's figures in the terminal, refreshing
  membus bench ingest [--count N] [--concurrency C] [--sync always|interval|both] [--json]
  membus bench e2e [--count N] [--sync always|interval|both] [--json]
  membus eval locomo --data FILE [--baseline bm25] [--limit-conversations N] [--embedder hash] [--json]
  membus config print
  membus version

Every command takes the configuration flags (membus config print --help lists them) and the
MEMBUS_* environment variables.
`

// version is set at build time (-ldflags "-X main.version=…").
var version = "dev"

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "up":
		return up(rest, stdout, stderr)
	case "ingest", "extract", "recall", "summarizer", "gateway":
		return service(cmd, rest)
	case "keys":
		return keys(rest, stdout, stderr)
	case "dlq":
		return dlq(rest, stdout, stderr)
	case "tail":
		return tail(rest, stdout, stderr)
	case "top":
		return top(rest, stdout, stderr)
	case "bench":
		return benchCmd(rest, stdout, stderr)
	case "eval":
		return evalCmd(rest, stdout, stderr)
	case "config":
		return configCmd(rest, stdout, stderr)
	case "version", "--version":
		fmt.Fprintln(stdout, "membus", version)
		return 0
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "membus: unknown command %q\n\n%s", cmd, usage)
		return 2
	}
}

// flagsFirst moves leading positional arguments after the flags, so that `membus keys revoke
// ID --data-dir D` and `membus dlq show SEQ --json` (the order the usage shows) parse: the flag
// package stops at the first non-flag argument. "--" keeps the moved arguments positional.
func flagsFirst(args []string) []string {
	i := 0
	for i < len(args) && !strings.HasPrefix(args[i], "-") {
		i++
	}
	if i == 0 || i == len(args) {
		return args
	}
	out := append([]string(nil), args[i:]...)
	out = append(out, "--")
	return append(out, args[:i]...)
}
