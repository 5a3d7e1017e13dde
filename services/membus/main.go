// Command membus is the one binary of membus: `membus up` runs everything embedded, `membus
// <service>` runs one service against external NATS/MySQL/Redis, and the rest are operator
// tools (keys, dlq, export, import, tail, config) and measurements (bench, eval).
//
// The command line is built on spf13/cobra, the library of kubectl, docker and gh: it gives
// every command its own --help (exit 0), subcommand suggestions, `membus completion
// bash|zsh|fish|powershell`, and flags that may follow positional arguments.
package main

import (
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/membus/membus/services/membus/internal/app"
	"github.com/membus/membus/services/membus/internal/benches"
	"github.com/membus/membus/services/membus/internal/cli"
	"github.com/membus/membus/services/membus/internal/eval"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	return cli.Run(newRoot(), args, stdout, stderr)
}

// newRoot builds the command tree; every call returns a fresh tree (flags hold state).
func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "membus",
		Short: "membus — long-term memory and context engine for OpenClaw agents",
		Long: `membus — long-term memory and context engine for OpenClaw agents.

Every command that reads the configuration takes the configuration flags (listed under their
own heading in its --help), the MEMBUS_* environment variables and an optional YAML file
(--config); flags win over the environment, which wins over the file.`,
		Version: versionLine(),
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.AddGroup(&cobra.Group{ID: "run", Title: "Run membus:"}, &cobra.Group{ID: "ops", Title: "Operate it:"},
		&cobra.Group{ID: "measure", Title: "Measure it:"})
	up := upCommand()
	up.GroupID = "run"
	root.AddCommand(up)
	for _, name := range app.Services {
		c := serviceCommand(name)
		c.GroupID = "run"
		root.AddCommand(c)
	}
	for _, c := range []*cobra.Command{keysCommand(), dlqCommand(), exportCommand(), importCommand(), reembedCommand(), tailCommand(), topCommand(), configCommand(), versionCommand()} {
		c.GroupID = "ops"
		root.AddCommand(c)
	}
	for _, c := range []*cobra.Command{benches.Command(), eval.Command()} {
		c.GroupID = "measure"
		root.AddCommand(c)
	}
	root.SetHelpCommandGroupID("ops")
	root.SetCompletionCommandGroupID("ops")
	setUsage(root)
	return root
}
