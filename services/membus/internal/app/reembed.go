package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/membus/membus/pkg/config"
	"github.com/membus/membus/pkg/embed"
	"github.com/membus/membus/pkg/embed/onnx"
	"github.com/membus/membus/pkg/projection"
	"github.com/membus/membus/pkg/vector"
)

// reembedBatch is how many memories one model call and one SQL transaction take.
const reembedBatch = 256

// ReembedResult is what Reembed did.
type ReembedResult struct {
	From       string // the model the local index was built with before ("" without one)
	Model      string // the model the data is embedded with now
	Reembedded int    // memories embedded again
	Points     int    // points of the rebuilt local index (memories, archived messages and their session contexts); -1: not rebuilt
}

// Reembed moves the data onto the embedding model the configuration names, as a change of
// model needs (vectors of two models never mix, so membus refuses to open data embedded with
// another): MEMBUS_EMBEDDER=auto or onnx, the model in MEMBUS_MODEL_DIR; hash, hash-v2;
// openai, MEMBUS_EMBED_MODEL. Every memory whose stored embedding is of another model, in any
// state, is embedded again from its text and written back to SQL, a batch per transaction (a
// run stopped half way resumes where it stopped: the rows it wrote are of the new model), then
// the local index in the data dir is rebuilt from SQL, its archived messages embedded anew.
// Data already of that model is left as it is. Run it with membus stopped (the caller holds the
// data dir's lock); with a shared SQL database (MEMBUS_MYSQL_DSN) every replica must be stopped,
// and each replica's own local index is rebuilt by running it there as well (its memories are
// then of the new model already). A Qdrant collection is not rebuilt: it is refused.
func Reembed(ctx context.Context, cfg config.Config, logger *slog.Logger, progress func(done, total int)) (ReembedResult, error) {
	var res ReembedResult
	if cfg.QdrantURL != "" {
		return res, errors.New("MEMBUS_QDRANT_URL is set: membus reembed rebuilds the local index only; re-embed into a new Qdrant " +
			"collection by running it without MEMBUS_QDRANT_URL on a copy of the data, or start the new model on a new MEMBUS_QDRANT_COLLECTION")
	}
	e := &Env{Config: cfg, Logger: logger}
	defer e.Close()
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return res, fmt.Errorf("MEMBUS_DATA_DIR %s: %w", cfg.DataDir, err)
	}
	if err := e.openStore(ctx); err != nil {
		return res, err
	}
	emb, err := e.reembedTarget(ctx)
	if err != nil {
		return res, err
	}
	res.Model = emb.Model()
	dir := filepath.Join(cfg.DataDir, "vectors")
	if res.From, err = e.storedModel(ctx, dir); err != nil {
		return res, err
	}
	total, err := e.Store.CountOtherEmbeddings(ctx, res.Model)
	if err != nil {
		return res, fmt.Errorf("count memories to re-embed: %w", err)
	}
	if total == 0 && res.From == res.Model {
		res.Points = -1
		return res, nil
	}
	logger.Info("re-embedding memories", "model", res.Model, "memories", total)
	for after := ""; ; {
		page, err := e.Store.OtherEmbeddings(ctx, res.Model, after, reembedBatch)
		if err != nil {
			return res, fmt.Errorf("read memories to re-embed: %w", err)
		}
		if len(page) == 0 {
			break
		}
		texts := make([]string, len(page))
		for i, m := range page {
			texts[i] = m.Text
		}
		vecs, err := emb.Embed(ctx, texts)
		if err != nil {
			return res, fmt.Errorf("embed memories with %s: %w", res.Model, err)
		}
		if err := e.Store.SetEmbeddings(ctx, res.Model, page, vecs); err != nil {
			return res, fmt.Errorf("write re-embedded memories: %w", err)
		}
		res.Reembedded += len(page)
		after = page[len(page)-1].ID
		if progress != nil {
			progress(res.Reembedded, total)
		}
	}
	// The index is SQL's projection: built again from it, with the archived messages (which
	// keep no embedding in SQL) embedded anew, by the reconcile every start runs.
	if err := os.RemoveAll(dir); err != nil {
		return res, fmt.Errorf("remove the old local index %s: %w", dir, err)
	}
	v, err := vector.OpenLocal(dir, emb.Model(), emb.Dim(), vector.WithExactMax(cfg.VectorExactMax))
	if err != nil {
		return res, fmt.Errorf("vector index in %s (MEMBUS_DATA_DIR): %w", dir, err)
	}
	defer func() { _ = v.Close() }() // on an error return; the success path closes it below and reports
	if err := projection.Reconcile(ctx, projection.Deps{Store: e.Store, Embedder: emb, Vectors: v}, v, logger); err != nil {
		return res, fmt.Errorf("rebuild the local index: %w", err)
	}
	if res.Points, _, err = v.Digest(ctx, ""); err != nil {
		return res, err
	}
	return res, v.Close()
}

// reembedTarget opens the embedder Reembed moves the data onto: MEMBUS_EMBEDDER's, where auto
// is the model in MEMBUS_MODEL_DIR (there must be one: moving onto a model is what it is for).
func (e *Env) reembedTarget(ctx context.Context) (embed.Embedder, error) {
	cfg := e.Config
	switch cfg.Embedder {
	case "auto", "onnx":
		if !onnx.Present(cfg.ModelPath()) {
			return nil, fmt.Errorf("MEMBUS_EMBEDDER=%s: membus reembed moves the data onto the model in MEMBUS_MODEL_DIR, and %s holds none: "+
				"run `make model` (or MODEL=NAME) first, or use MEMBUS_EMBEDDER=hash or openai", cfg.Embedder, cfg.ModelPath())
		}
		return e.openONNX()
	case "hash":
		return embed.NewHash(), nil
	case "openai":
		if cfg.EmbedModel == "" {
			return nil, errors.New("MEMBUS_EMBED_MODEL is required with MEMBUS_EMBEDDER=openai")
		}
		return e.openOpenAI(ctx, cfg.EmbedModel)
	default:
		return nil, fmt.Errorf("MEMBUS_EMBEDDER=%s: not available in this build; use auto, hash, onnx or openai", cfg.Embedder)
	}
}
