package main

import (
	"github.com/spf13/cobra"

	"github.com/membus/membus/services/membus/internal/cli"
)

// configCommand prints the effective configuration with secrets redacted.
func configCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "config", Short: "show the effective configuration"}
	print := &cobra.Command{Use: "print", Short: "print the effective configuration as YAML, secrets redacted, each key's source beside it", Args: cli.NoArgs}
	load := withConfig(print)
	print.RunE = func(cmd *cobra.Command, _ []string) error {
		cfg, err := load()
		if err != nil {
			return cli.Usagef("%v", err)
		}
		return cfg.Redacted().WriteYAML(cmd.OutOrStdout())
	}
	cmd.AddCommand(print)
	return cmd
}
