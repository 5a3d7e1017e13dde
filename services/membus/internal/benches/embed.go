package benches

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/membus/membus/pkg/bench"
	"github.com/membus/membus/pkg/embed"
	"github.com/membus/membus/pkg/embed/onnx"
	"github.com/membus/membus/services/membus/internal/app"
	"github.com/membus/membus/services/membus/internal/cli"
	"github.com/membus/membus/services/membus/internal/harness"
)

// embedParams are the knobs of one `membus bench embed` run.
type embedParams struct {
	modelDir  string
	batches   []int
	sentences int // measured sentences per configuration
	threads   int // ONNX Runtime intra-op threads (0: its default)
	progress  io.Writer
	notes     io.Writer
}

func benchEmbedCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "embed", Short: "embedder throughput (hash, and ONNX when the model is present)", Args: cli.NoArgs}
	fs := cmd.Flags()
	defDir := os.Getenv("MEMBUS_MODEL_DIR")
	if defDir == "" {
		defDir = filepath.Join(os.Getenv("MEMBUS_DATA_DIR"), "models")
		if os.Getenv("MEMBUS_DATA_DIR") == "" {
			defDir = filepath.Join("data", "models")
		}
	}
	modelDir := fs.String("model-dir", defDir, "ONNX model directory (MEMBUS_MODEL_DIR; `make model` fills it); the onnx rows are skipped when it is empty")
	batches := fs.String("batches", "1,32", "texts per Embed call, comma-separated")
	sentences := fs.Int("sentences", 640, "measured sentences per embedder and batch size")
	threads := fs.Int("threads", 0, "ONNX Runtime intra-op threads (0: one per core)")
	asJSON := fs.Bool("json", false, "print docs/design.md §10 JSON Lines on stdout")
	progress := fs.Bool("progress", false, "draw a progress bar on stderr even when it is not a terminal")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
		return cli.Exit(func() int {
			p := embedParams{modelDir: *modelDir, sentences: *sentences, threads: *threads, notes: stderr}
			for _, s := range strings.Split(*batches, ",") {
				n, err := strconv.Atoi(strings.TrimSpace(s))
				if err != nil || n <= 0 {
					fmt.Fprintf(stderr, "membus bench embed: --batches must be positive integers, got %q\n", *batches)
					return 2
				}
				p.batches = append(p.batches, n)
			}
			if p.sentences <= 0 {
				fmt.Fprintln(stderr, "membus bench embed: --sentences must be positive")
				return 2
			}
			p.progress = harness.Progress(*progress, stderr)
			ctx, stop := app.SignalContext()
			defer stop()
			results, err := benchEmbed(ctx, p)
			if err != nil {
				fmt.Fprintf(stderr, "membus bench embed: %v\n", err)
				return 1
			}
			return writeResults(stdout, stderr, "embed", *asJSON, results)
		}())
	}
	return cmd
}

// embedSentences returns n memory-like sentences of 7 to 15 words (as bench recall's
// memories), the same every run.
func embedSentences(n int) []string {
	r := rand.New(rand.NewPCG(uint64(n), 3))
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s %s.", strings.Title(recallWords[r.IntN(10)]), recallSentence(r, 6+r.IntN(9))) //nolint:staticcheck // ASCII words
	}
	return out
}

// benchEmbed measures sentences/s (msgs_per_sec; one op is one Embed call of `size`
// sentences, uncached) of the hash embedder and, when the model is present, the ONNX one,
// at each batch size. The hash embedder at the same batch size is every row's floor;
// rss_mb is read after the embedder is loaded and has run.
func benchEmbed(ctx context.Context, p embedParams) ([]bench.Result, error) {
	var results []bench.Result
	floors := make(map[int]bench.Result)
	measure := func(emb embed.Embedder) error {
		for _, size := range p.batches {
			r, err := benchEmbedOne(ctx, emb, size, p)
			if err != nil {
				return fmt.Errorf("%s batch %d: %w", emb.Model(), size, err)
			}
			if f, ok := floors[size]; ok {
				r.Floor = &f
			} else {
				floors[size] = r
			}
			results = append(results, r)
		}
		return nil
	}
	// hash first, so its rss_mb is read before ONNX Runtime and the model are loaded
	if err := measure(embed.NewHash()); err != nil {
		return results, err
	}
	if !onnx.Present(p.modelDir) {
		fmt.Fprintf(p.notes, "membus bench embed: no ONNX model in %s: only the hash embedder is measured (run `make model`)\n", p.modelDir)
		return results, nil
	}
	var opts []onnx.Option
	if p.threads > 0 {
		opts = append(opts, onnx.WithThreads(p.threads))
	}
	o, err := onnx.New(p.modelDir, opts...)
	if err != nil {
		return results, err
	}
	defer func() { _ = o.Close() }() // the measurement is done; a failed close changes none of it
	fmt.Fprintf(p.notes, "membus bench embed: %s loaded, rss %.1f MB; %.1f tokens per sentence on average\n", o.Model(), bench.RSSMB(), o.MeanTokens(embedSentences(256)))
	if err := measure(o); err != nil {
		return results, err
	}
	return results, nil
}

func benchEmbedOne(ctx context.Context, emb embed.Embedder, size int, p embedParams) (bench.Result, error) {
	ops := max(1, p.sentences/size)
	warm := max(1, min(ops/10, 8))
	texts := embedSentences((ops + warm) * size)
	op := func(ctx context.Context, i int) (int, error) {
		batch := texts[(i%(ops+warm))*size : (i%(ops+warm)+1)*size]
		vecs, err := emb.Embed(ctx, batch)
		if err != nil {
			return 0, err
		}
		if len(vecs) != len(batch) {
			return 0, fmt.Errorf("%d vectors for %d texts", len(vecs), len(batch))
		}
		return len(batch), nil
	}
	res, err := bench.Run(ctx, "embed", bench.Options{WarmupCount: warm, Count: ops, Concurrency: 1, Progress: p.progress}, op)
	if err != nil {
		return res, err
	}
	res.Backend, res.Embedder, res.Size, res.RSSMB = "embedded", emb.Model(), size, bench.RSSMB()
	return res, nil
}
