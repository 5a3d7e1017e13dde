package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/membus/membus/pkg/embed"
	"github.com/membus/membus/pkg/embed/onnx"
	"github.com/membus/membus/pkg/vector"
	"github.com/membus/membus/pkg/vector/qdrant"
)

// storedModel is the model stored with the index ("" when there is none): the Qdrant
// collection's (read only under MEMBUS_EMBEDDER=auto), else the local index's in dir.
func (e *Env) storedModel(ctx context.Context, dir string) (string, error) {
	cfg := e.Config
	if cfg.QdrantURL != "" {
		if cfg.Embedder != "auto" {
			return "", nil
		}
		s, err := qdrant.Open(ctx, qdrant.Config{URL: cfg.QdrantURL, Collection: cfg.QdrantCollection})
		switch {
		case errors.Is(err, qdrant.ErrNoCollection):
			return "", nil
		case err != nil:
			return "", fmt.Errorf("MEMBUS_QDRANT_URL %s: %w", cfg.Redacted().QdrantURL, err)
		}
		defer func() { _ = s.Close() }() // only its model was read
		return s.Model(), nil
	}
	m, _, err := vector.LocalModel(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("vector index in %s (MEMBUS_DATA_DIR): %w", dir, err)
	}
	return m, nil
}

// dataEmbedder opens the embedder for data embedded with follow ("" for new data):
// MEMBUS_EMBEDDER's, where auto keeps the data's model (on new data: the model in
// MEMBUS_MODEL_DIR when there is one, else hash). A local model other than the data's is
// refused before it is loaded, saying what keeps the data's model and what moves the data
// onto the other (`membus reembed`).
func (e *Env) dataEmbedder(ctx context.Context, follow string) (embed.Embedder, error) {
	cfg := e.Config
	modelDir := cfg.ModelPath()
	switch {
	case cfg.Embedder == "hash" && follow == embed.HashV1Model:
		// Data embedded with an older hash version keeps it: hash vectors of two versions never mix.
		e.Logger.Info("the data was embedded with "+embed.HashV1Model+", so the hash embedder keeps that version; "+
			embed.HashModel+" recalls better: `membus reembed` (membus stopped) moves the data onto it", "model", embed.HashV1Model)
		return embed.NewHashV1(), nil
	case cfg.Embedder == "hash":
		return embed.NewHash(), nil
	case cfg.Embedder == "onnx":
		if err := e.checkDirModel("MEMBUS_EMBEDDER=onnx", follow); err != nil {
			return nil, err
		}
		o, err := e.openONNX()
		if err != nil {
			return nil, fmt.Errorf("MEMBUS_EMBEDDER=onnx: %w", err)
		}
		return o, nil
	case cfg.Embedder == "openai":
		if cfg.EmbedModel == "" {
			return nil, errors.New("MEMBUS_EMBED_MODEL is required with MEMBUS_EMBEDDER=openai")
		}
		return e.openOpenAI(ctx, cfg.EmbedModel)
	case cfg.Embedder == "auto" && follow == "" && onnx.Present(modelDir):
		o, err := e.openONNX()
		if err != nil {
			return nil, fmt.Errorf("MEMBUS_EMBEDDER=auto: %w", err)
		}
		return o, nil
	case cfg.Embedder == "auto" && follow == "":
		e.Logger.Info("no local embedding model: using the hash embedder (word matching only); run `make model` "+
			"(scripts/model.sh) before the first start for semantic recall with a local model", "model_dir", modelDir)
		return embed.NewHash(), nil
	case cfg.Embedder == "auto" && (follow == embed.HashModel || follow == embed.HashV1Model):
		if onnx.Present(modelDir) {
			e.Logger.Info("the data was embedded with the hash embedder, so MEMBUS_EMBEDDER=auto keeps it although a local model is present; "+
				"`membus reembed` with MEMBUS_EMBEDDER=onnx (membus stopped) moves the data onto the model", "model_dir", modelDir)
		}
		if follow == embed.HashV1Model {
			return embed.NewHashV1(), nil
		}
		return embed.NewHash(), nil
	case cfg.Embedder == "auto" && strings.HasPrefix(follow, "onnx:"):
		if err := e.checkDirModel("MEMBUS_EMBEDDER=auto", follow); err != nil {
			return nil, err
		}
		o, err := e.openONNX()
		if err != nil {
			return nil, fmt.Errorf("MEMBUS_EMBEDDER=auto follows the data's %s: %w", follow, err)
		}
		return o, nil
	case cfg.Embedder == "auto" && strings.HasPrefix(follow, "openai:"):
		model := strings.TrimPrefix(follow, "openai:")
		if cfg.EmbedModel != "" && cfg.EmbedModel != model {
			return nil, fmt.Errorf("MEMBUS_EMBED_MODEL=%s, but the data was embedded with %s (MEMBUS_EMBEDDER=auto follows the index)", cfg.EmbedModel, follow)
		}
		o, err := e.openOpenAI(ctx, model)
		if err != nil {
			return nil, fmt.Errorf("MEMBUS_EMBEDDER=auto follows the data's %s: %w", follow, err)
		}
		return o, nil
	case cfg.Embedder == "auto":
		return nil, fmt.Errorf("MEMBUS_EMBEDDER=auto: the data was embedded with %s, which this build cannot produce", follow)
	default:
		return nil, fmt.Errorf("MEMBUS_EMBEDDER=%s: not available in this build; use auto, hash, onnx or openai", cfg.Embedder)
	}
}

// checkDirModel refuses, before the model is loaded, a local model in MEMBUS_MODEL_DIR other
// than the one the data was embedded with (follow; "" for new data, which takes any).
// Under auto (how = "MEMBUS_EMBEDDER=auto") the data keeps its model, so the refusal says how
// to fetch it; either way it says how to move the data onto the directory's model.
func (e *Env) checkDirModel(how, follow string) error {
	modelDir := e.Config.ModelPath()
	have, err := onnx.DirModel(modelDir)
	if err != nil {
		return fmt.Errorf("local embedding model in %s (MEMBUS_MODEL_DIR): %w", modelDir, err)
	}
	if follow == "" || have == follow || have == "" && how != "MEMBUS_EMBEDDER=auto" {
		return nil // new data, the data's model, or no model at all (openONNX says to fetch one)
	}
	fetch := ""
	if id, ok := strings.CutPrefix(follow, "onnx:"); ok {
		fetch = fmt.Sprintf("`MEMBUS_MODEL_DIR=%s make model MODEL=%s`", modelDir, id)
	}
	if have == "" {
		return fmt.Errorf("%s keeps the data's embedding model, %s, but MEMBUS_MODEL_DIR (%s) holds no model: run %s to fetch it: %w",
			how, follow, modelDir, fetch, vector.ErrModelMismatch)
	}
	keep := "use MEMBUS_EMBEDDER=auto (it keeps the data's model)"
	if fetch != "" {
		keep = "run " + fetch + " (or point MEMBUS_MODEL_DIR at a directory that holds it)"
		if how != "MEMBUS_EMBEDDER=auto" {
			keep += " and use MEMBUS_EMBEDDER=auto"
		}
	}
	return fmt.Errorf("the data was embedded with %s, but MEMBUS_MODEL_DIR (%s) holds %s (%s; vectors of two models never mix). "+
		"To keep %s, %s. To move the data onto %s, stop membus and run `membus reembed` with these settings: "+
		"it embeds every memory and archived message again with the model in MEMBUS_MODEL_DIR: %w",
		follow, modelDir, have, how, follow, keep, have, vector.ErrModelMismatch)
}

// openONNX loads the local model in MEMBUS_MODEL_DIR; Close releases it.
func (e *Env) openONNX() (embed.Embedder, error) {
	modelDir := e.Config.ModelPath()
	o, err := onnx.New(modelDir)
	if errors.Is(err, onnx.ErrNoModel) {
		return nil, fmt.Errorf("no local embedding model in %s (MEMBUS_MODEL_DIR): run `make model` (scripts/model.sh) to fetch it: %w", modelDir, err)
	}
	if err != nil {
		return nil, fmt.Errorf("local embedding model in %s (MEMBUS_MODEL_DIR): %w", modelDir, err)
	}
	e.onClose("onnx model", o.Close)
	e.Logger.Info("local embedding model loaded", "model", o.Model(), "dir", modelDir)
	return o, nil
}

// openOpenAI connects to the OpenAI-compatible embedding endpoint and learns model's dimension.
func (e *Env) openOpenAI(ctx context.Context, model string) (embed.Embedder, error) {
	cfg := e.Config
	if cfg.EmbedBaseURL == "" {
		return nil, fmt.Errorf("MEMBUS_EMBED_BASE_URL is required for the openai embedder (model %s)", model)
	}
	o, err := embed.NewOpenAI(cfg.EmbedBaseURL, model, cfg.EmbedAPIKey)
	if err != nil {
		return nil, fmt.Errorf("MEMBUS_EMBED_BASE_URL/MEMBUS_EMBED_MODEL: %w", err)
	}
	dctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if _, err := o.Discover(dctx); err != nil {
		return nil, fmt.Errorf("MEMBUS_EMBED_BASE_URL %s (MEMBUS_EMBED_MODEL %s): %w", cfg.Redacted().EmbedBaseURL, model, err)
	}
	return o, nil
}
