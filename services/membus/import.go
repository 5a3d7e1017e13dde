package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/services/membus/internal/cli"
)

// maxImportLine bounds one line of an import file (a memory's text is at most 8,000
// characters; its sources and fields add a few kilobytes).
const maxImportLine = 1 << 20

// importCommand restores a JSON Lines export. It reaches the running membus over NATS like
// export, and sends the records to extract's memories.import RPC: extract is the one writer of
// memories, so the rows land in SQL with their memory_upserted events (outbox) and in the
// vector index, under the user's merge lock — recall sees them at once, and every index stays
// consistent. Writing SQL from this process could not: the index of `membus up` lives in its
// own process. Re-extracting the texts through a commit would not restore them as exported.
func importCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "import [FILE]",
		Short: "restore memories from a JSON Lines export into a user (idempotent)",
		Long: `Restore the memories of a JSON Lines export (membus export) into one user — the user it came
from, or another user or account. Importing twice, or into a user who holds the memories
already, changes nothing the second time: a memory is matched by id, then by its text. The whole
file is checked before anything is written; a bad line is named by its number. FILE - or no
FILE reads stdin. Works while membus runs.`,
		Example: `  membus import --account acme --user alice alice.jsonl
  membus export --account acme --user alice | membus import --account globex --user alice`,
	}
	cmd.Args = func(_ *cobra.Command, args []string) error {
		if len(args) > 1 {
			return cli.Usagef("want at most one FILE, got %d", len(args))
		}
		return nil
	}
	account := cmd.Flags().String("account", "", "account (tenant) id to import into (required)")
	user := cmd.Flags().String("user", "", "user id to import into (required)")
	load := withConfig(cmd, busFlags...)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if *account == "" || *user == "" {
			return cli.Usagef("--account and --user are required")
		}
		if err := bus.ValidAccount(*account); err != nil {
			return cli.Usagef("--account: %v", err)
		}
		in, name := io.Reader(cmd.InOrStdin()), "stdin"
		if len(args) == 1 && args[0] != "-" {
			f, err := os.Open(args[0])
			if err != nil {
				return err
			}
			defer f.Close()
			in, name = f, args[0]
		}
		recs, err := readRecords(in)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		return withConn(load, "membus-import", func(ctx context.Context, nc *nats.Conn, names bus.Names) error {
			res, err := importRecords(ctx, nc, names, *account, *user, recs)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "imported %d records into %s/%s: %d created, %d merged, %d unchanged, %d erased\n",
				len(recs), *account, *user, res.Created, res.Merged, res.Unchanged, res.Erased)
			return err
		})
	}
	return cmd
}

// numbered is a record and the line it was read from.
type numbered struct {
	line int
	rec  contract.MemoryRecord
}

// readRecords reads a JSON Lines export: one MemoryRecord per line, blank lines skipped. Every
// line is decoded and checked before the first is sent, so a bad file imports nothing; the
// error names the line.
func readRecords(r io.Reader) ([]numbered, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), maxImportLine)
	var out []numbered
	n := 0
	for sc.Scan() {
		n++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var rec contract.MemoryRecord
		dec := json.NewDecoder(bytes.NewReader(line))
		if err := dec.Decode(&rec); err != nil {
			return nil, fmt.Errorf("line %d: not a JSON memory record: %w", n, err)
		}
		if dec.More() {
			return nil, fmt.Errorf("line %d: more than one JSON value (one memory per line)", n)
		}
		if err := rec.Validate(); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		out = append(out, numbered{line: n, rec: rec})
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("line %d: longer than %d bytes", n+1, maxImportLine)
		}
		return nil, err
	}
	return out, nil
}

// importRecords sends recs to memories.import in batches of contract.MaxImportBatch and adds up
// the outcomes. A failed batch names its lines; the batches before it stay imported, and
// running the import again finishes the job (it is idempotent).
func importRecords(ctx context.Context, nc *nats.Conn, names bus.Names, account, user string, recs []numbered) (contract.MemoriesImportResponse, error) {
	total := contract.MemoriesImportResponse{V: contract.Version, IDs: []string{}}
	for i := 0; i < len(recs); i += contract.MaxImportBatch {
		batch := recs[i:min(i+contract.MaxImportBatch, len(recs))]
		req := contract.MemoriesImportRequest{V: contract.Version, UserID: user, Memories: make([]contract.MemoryRecord, 0, len(batch))}
		for _, r := range batch {
			req.Memories = append(req.Memories, r.rec)
		}
		var resp contract.MemoriesImportResponse
		cctx, cancel := context.WithTimeout(ctx, rpcCallTimeout)
		err := bus.Call(cctx, nc, names.RPC(account, "memories.import"), req, &resp)
		cancel()
		if err != nil {
			return total, fmt.Errorf("import lines %d–%d into %s/%s: %w", batch[0].line, batch[len(batch)-1].line, account, user, err)
		}
		total.Created += resp.Created
		total.Merged += resp.Merged
		total.Unchanged += resp.Unchanged
		total.Erased += resp.Erased
		total.IDs = append(total.IDs, resp.IDs...)
	}
	return total, nil
}
