package main

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/membus/membus/services/membus/internal/cli"
)

// version is set at build time (make build: -ldflags "-X main.version=$(git describe)"); else
// the module version of the build info (a tagged `go install`) or "dev".
var version = ""

// commit is set at build time (make build: -ldflags "-X main.commit=…"); else the VCS commit of
// the build info.
var commit = ""

// buildInfo is what `membus version` reports: the version, the VCS commit the binary was built
// from (go build records it unless -buildvcs=false), and the Go version.
type buildInfo struct {
	Version  string `json:"version"`
	Commit   string `json:"commit,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	Go       string `json:"go"`
}

func readBuildInfo() buildInfo {
	b := buildInfo{Version: version, Commit: commit}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		if b.Version == "" {
			b.Version = "dev"
		}
		return b
	}
	b.Go = info.GoVersion
	if b.Version == "" && info.Main.Version != "" && info.Main.Version != "(devel)" {
		b.Version = info.Main.Version
	}
	if b.Version == "" {
		b.Version = "dev"
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			if commit == "" {
				b.Commit = s.Value
			}
		case "vcs.modified":
			b.Modified = commit == "" && s.Value == "true"
		}
	}
	return b
}

// versionLine is the one-line version: "membus v1.2.3 (commit 0123abc, go1.26.8)".
func versionLine() string {
	b := readBuildInfo()
	line := "membus " + b.Version
	var extra []any
	format := ""
	if b.Commit != "" {
		c := b.Commit
		if len(c) > 12 {
			c = c[:12]
		}
		if b.Modified {
			c += "-dirty"
		}
		format, extra = "commit %s, ", append(extra, c)
	}
	if b.Go != "" {
		format, extra = format+"%s", append(extra, b.Go)
	}
	if format != "" {
		line += " (" + fmt.Sprintf(format, extra...) + ")"
	}
	return line
}

func versionCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "version", Short: "print the version, the commit it was built from and the Go version", Args: cli.NoArgs}
	asJSON := cmd.Flags().Bool("json", false, "print a JSON object")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if *asJSON {
			return writeJSON(cmd.OutOrStdout(), readBuildInfo())
		}
		_, err := fmt.Fprintln(cmd.OutOrStdout(), versionLine())
		return err
	}
	return cmd
}
