package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/config"
	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/services/membus/internal/app"
	"github.com/membus/membus/services/membus/internal/cli"
)

// Export formats.
const (
	formatJSONL    = "jsonl"
	formatMarkdown = "markdown"
)

// exportPageSize is the page export asks for (memories.export's largest).
const exportPageSize = 1000

// rpcCallTimeout bounds each RPC of export and import; the whole command runs until done or
// Ctrl-C, however many pages it takes.
const rpcCallTimeout = 2 * time.Minute

// exportCommand writes a user's memories. It reaches the running membus over NATS, as dlq,
// tail and top do (app.Dial: --nats-url/--nats-token, else the embedded server of `membus up`
// and the token in --data-dir), and pages with the memories.export RPC: the same cursor as
// GET /v1/memories, through any number of memories. Not HTTP with an API key: an operator
// exports for any user of any account, which only the deployment's own credential may; and not
// SQL: the import has to go through the running services anyway (they own the vector index),
// and one way in for both commands keeps their flags the same.
func exportCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "export",
		Short: "write a user's memories as JSON Lines (for membus import) or Markdown (to read and edit)",
		Long: `Write every active memory of one user — all pages — as JSON Lines (one memory per line with
every field needed to restore it; what membus import reads) or as Markdown (one section per
category, each memory a bullet, its source messages as membus://<account>/sessions/<session>/messages/<message> links).
Digests are left out: the summarizer derives them from the memories. Works while membus runs.`,
		Example: `  membus export --account acme --user alice > alice.jsonl
  membus export --account acme --user alice --format markdown --out alice.md`,
		Args: cli.NoArgs,
	}
	account := cmd.Flags().String("account", "", "account (tenant) id (required)")
	user := cmd.Flags().String("user", "", "user id (required)")
	format := cmd.Flags().String("format", formatJSONL, "jsonl | markdown")
	out := cmd.Flags().String("out", "-", "write to this file (- is stdout); written whole or not at all")
	load := withConfig(cmd, busFlags...)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if *account == "" || *user == "" {
			return cli.Usagef("--account and --user are required")
		}
		if err := bus.ValidAccount(*account); err != nil {
			return cli.Usagef("--account: %v", err)
		}
		if *format != formatJSONL && *format != formatMarkdown {
			return cli.Usagef("--format must be %s or %s, not %q", formatJSONL, formatMarkdown, *format)
		}
		return withConn(load, "membus-export", func(ctx context.Context, nc *nats.Conn, names bus.Names) error {
			n, err := writeOut(*out, cmd.OutOrStdout(), func(w io.Writer) (int, error) {
				if *format == formatMarkdown {
					var recs []contract.MemoryRecord
					if _, err := exportMemories(ctx, nc, names, *account, *user, func(r contract.MemoryRecord) error {
						recs = append(recs, r)
						return nil
					}); err != nil {
						return 0, err
					}
					return len(recs), writeMarkdown(w, *account, *user, recs, time.Now())
				}
				enc := json.NewEncoder(w)
				enc.SetEscapeHTML(false)
				return exportMemories(ctx, nc, names, *account, *user, func(r contract.MemoryRecord) error { return enc.Encode(r) })
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "exported %d memories of %s/%s\n", n, *account, *user)
			return nil
		})
	}
	return cmd
}

// withConn runs f connected to the running deployment's NATS (app.Dial), with a context that
// Ctrl-C or SIGTERM ends; each call f makes sets its own timeout.
func withConn(load func() (config.Config, error), name string, f func(ctx context.Context, nc *nats.Conn, names bus.Names) error) error {
	cfg, err := load()
	if err != nil {
		return cli.Usagef("%v", err)
	}
	ctx, stop := app.SignalContext()
	defer stop()
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	nc, _, names, err := app.Dial(dctx, cfg, name)
	if err != nil {
		return err
	}
	defer nc.Close()
	return f(ctx, nc, names)
}

// writeOut runs write on stdout ("-") or on path. A file is written beside path and renamed
// into place once write succeeds, so a failed export never leaves a partial file that looks
// whole.
func writeOut(path string, stdout io.Writer, write func(io.Writer) (int, error)) (int, error) {
	if path == "-" || path == "" {
		return write(stdout)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return 0, err
	}
	defer func() { _ = os.Remove(tmp.Name()) }() // once renamed there is nothing left to remove
	n, err := write(tmp)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return 0, err
	}
	return n, nil
}

// exportMemories pages through the user's memories with memories.export and hands each
// record to emit, newest first; it returns how many there were.
func exportMemories(ctx context.Context, nc *nats.Conn, names bus.Names, account, user string, emit func(contract.MemoryRecord) error) (int, error) {
	n := 0
	req := contract.MemoriesListRequest{V: contract.Version, UserID: user, Limit: exportPageSize}
	for page := 1; ; page++ {
		var resp contract.MemoriesExportResponse
		cctx, cancel := context.WithTimeout(ctx, rpcCallTimeout)
		err := bus.Call(cctx, nc, names.RPC(account, "memories.export"), req, &resp)
		cancel()
		if err != nil {
			return n, fmt.Errorf("export page %d of %s/%s: %w", page, account, user, err)
		}
		for _, r := range resp.Items {
			if err := emit(r); err != nil {
				return n, err
			}
			n++
		}
		if resp.NextCursor == "" {
			return n, nil
		}
		req.Cursor = resp.NextCursor
	}
}
