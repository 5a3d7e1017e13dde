package main

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/membus/membus/pkg/config"
	"github.com/membus/membus/services/membus/internal/app"
	"github.com/membus/membus/services/membus/internal/cli"
	"github.com/membus/membus/services/membus/internal/datadir"
)

func reembedCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "reembed",
		Short: "move the data onto another embedding model (membus stopped): every memory and archived message embedded again",
		Long: `Move the data onto the embedding model these settings name, after a change of model: membus
refuses data embedded with another model (vectors of two models never mix), and MEMBUS_EMBEDDER=auto
keeps a data dir's model. The target is the model in MEMBUS_MODEL_DIR (MEMBUS_EMBEDDER auto or
onnx; ` + "`make model MODEL=NAME`" + ` fetches one), the hash embedder (hash) or MEMBUS_EMBED_MODEL
(openai). Every memory of another model is embedded again from its text and written back to SQL,
then the local index is rebuilt with the archived messages embedded anew. A run stopped half way
resumes where it stopped; data already of that model is left as it is. Run it with membus
stopped; on a shared SQL database (MEMBUS_MYSQL_DSN) stop every replica, and run it on each
replica's data dir to rebuild that replica's index. With MEMBUS_QDRANT_URL it is refused.`,
		Example: `  make model MODEL=e5-small-v2-int8 && membus reembed && membus up
  membus reembed --embedder hash --data-dir ./old-data`,
		Args: cli.NoArgs,
	}
	runConfigured(cmd, reembed)
	return cmd
}

// reembed runs app.Reembed on the data dir it locks, and returns the exit code.
func reembed(cfg config.Config, stdout, stderr io.Writer) int {
	lock, err := datadir.Acquire(cfg.DataDir)
	if err != nil {
		fmt.Fprintf(stderr, "membus reembed: %v\n", err)
		return 1
	}
	defer lock.Close()
	ctx, stop := app.SignalContext()
	defer stop()
	start := time.Now()
	last := start
	res, err := app.Reembed(ctx, cfg, cfg.Logger(stderr, ""), func(done, total int) {
		if now := time.Now(); now.Sub(last) >= 5*time.Second || done == total {
			last = now
			fmt.Fprintf(stderr, "membus reembed: %d of %d memories\n", done, total)
		}
	})
	if err != nil {
		fmt.Fprintf(stderr, "membus reembed: %v\n", err)
		return 1
	}
	if res.Points < 0 {
		fmt.Fprintf(stdout, "membus reembed: the data is already embedded with %s; nothing to do\n", res.Model)
		return 0
	}
	from := res.From
	if from == "" {
		from = "no index"
	}
	fmt.Fprintf(stdout, "membus reembed: %d memories embedded again with %s; local index rebuilt (%s before): %d points, in %s\n",
		res.Reembedded, res.Model, from, res.Points, time.Since(start).Round(time.Millisecond))
	return 0
}
