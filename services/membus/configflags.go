package main

import (
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/membus/membus/pkg/config"
	"github.com/membus/membus/services/membus/internal/cli"
)

// configAnnotation marks the flags of the shared configuration, so --help lists them once,
// under their own heading, apart from the command's own flags.
const configAnnotation = "membus_config"

// Configuration flags of the tools that only reach a running membus: its store (keys) or its
// NATS (dlq, tail). The other keys still apply through MEMBUS_* and the --config file.
var (
	storeFlags = []string{"config", "data-dir", "mysql-dsn", "log-level", "log-format"}
	busFlags   = []string{"config", "data-dir", "nats-url", "nats-token", "nats-listen", "subject-prefix", "tls-ca"}
)

// withConfig gives cmd the configuration flags (all of them, or only those named) and returns
// the loader of the effective configuration: flags set on the command line, else MEMBUS_*
// variables, else the --config file, else the defaults (config.FromFlags).
func withConfig(cmd *cobra.Command, only ...string) func() (config.Config, error) {
	flagged := config.Defaults()
	fs := pflag.NewFlagSet("config", pflag.ContinueOnError)
	flagged.RegisterFlags(fs)
	fs.VisitAll(func(f *pflag.Flag) {
		if len(only) > 0 && !slices.Contains(only, f.Name) {
			return
		}
		f.Annotations = map[string][]string{configAnnotation: {"true"}}
		if f.Name == "instance-id" {
			f.DefValue = "host-pid" // not this process's pid, which --help would show
		}
		cmd.Flags().AddFlag(f)
	})
	return func() (config.Config, error) {
		changed := func(name string) bool {
			f := cmd.Flags().Lookup(name)
			return f != nil && f.Changed
		}
		return config.FromFlags(flagged, changed, os.Getenv)
	}
}

// runConfigured makes cmd read every configuration flag and run fn with the configuration and
// cmd's output, exiting with fn's code (a bad configuration is a usage error).
func runConfigured(cmd *cobra.Command, fn func(cfg config.Config, stdout, stderr io.Writer) int) {
	load := withConfig(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		cfg, err := load()
		if err != nil {
			return cli.Usagef("%v", err)
		}
		return cli.Exit(fn(cfg, cmd.OutOrStdout(), cmd.ErrOrStderr()))
	}
}

func isConfigFlag(f *pflag.Flag) bool { _, ok := f.Annotations[configAnnotation]; return ok }

// flagUsages lists the local flags of cmd that are (config) or are not configuration flags.
func flagUsages(cmd *cobra.Command, configFlags bool) string {
	fs := pflag.NewFlagSet(cmd.Name(), pflag.ContinueOnError)
	cmd.LocalFlags().VisitAll(func(f *pflag.Flag) {
		if !f.Hidden && isConfigFlag(f) == configFlags {
			fs.AddFlag(f)
		}
	})
	return strings.TrimRight(fs.FlagUsages(), "\n")
}

// usageTemplate is cobra's default with the flags split in two headings: the command's own,
// then the configuration shared by every command.
const usageTemplate = `Usage:{{if .Runnable}}
  {{.UseLine}}{{end}}{{if .HasAvailableSubCommands}}
  {{.CommandPath}} [command]{{end}}{{if .HasExample}}

Examples:
{{.Example}}{{end}}{{if .HasAvailableSubCommands}}{{$cmds := .Commands}}{{if eq (len .Groups) 0}}

Available Commands:{{range $cmds}}{{if (or .IsAvailableCommand (eq .Name "help"))}}
  {{rpad .Name .NamePadding }} {{.Short}}{{end}}{{end}}{{else}}{{range $group := .Groups}}

{{.Title}}{{range $cmds}}{{if (and (eq .GroupID $group.ID) (or .IsAvailableCommand (eq .Name "help")))}}
  {{rpad .Name .NamePadding }} {{.Short}}{{end}}{{end}}{{end}}{{end}}{{end}}{{with ownFlags .}}

Flags:
{{.}}{{end}}{{with configFlags .}}

Configuration flags (each also the variable MEMBUS_<KEY>, or <key> in the YAML file of --config):
{{.}}{{end}}{{if .HasAvailableSubCommands}}

Use "{{.CommandPath}} [command] --help" for more information about a command.{{end}}
`

func setUsage(root *cobra.Command) {
	cobra.AddTemplateFunc("ownFlags", func(c *cobra.Command) string { return flagUsages(c, false) })
	cobra.AddTemplateFunc("configFlags", func(c *cobra.Command) string { return flagUsages(c, true) })
	root.SetUsageTemplate(usageTemplate)
}
