package eval

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/membus/membus/services/membus/internal/app"
)

// `membus eval locomo --data-dir DIR`: ingest once, recall many times, to compare two binaries'
// ranking without paying for the ingest again (an old binary's ingest, with two ingest fetch
// loops, was not repeatable either; the eval runs one since 7e96d88). The first run ingests into DIR (the
// embedded backend's SQLite, JetStream and vector index) and writes a manifest last; a run that
// finds the manifest checks it against its own inputs and only recalls.

// dataManifestName is the manifest's file in the data dir, written once the ingest completed.
const dataManifestName = "locomo-eval-manifest.json"

// errDataDir: the data dir cannot serve this run (a manifest of other inputs, or a dir that is
// not an eval data dir).
var errDataDir = errors.New("--data-dir")

// dataManifest is what a kept data dir was ingested from: a run reuses it only with the same
// data, conversations and embedder.
type dataManifest struct {
	Eval          string    `json:"eval"` // "locomo"
	Data          string    `json:"data"` // the file's path then (informational)
	DataSHA256    string    `json:"data_sha256"`
	Conversations int       `json:"conversations"`
	Turns         int       `json:"turns"`
	Embedder      string    `json:"embedder"` // --embedder
	Model         string    `json:"model"`    // the embedder's model id
	Version       string    `json:"membus_version"`
	Ingested      time.Time `json:"ingested"`
}

// fileSHA256 is the hex sha256 of the file at path.
func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// readDataDir reads the manifest of dir: nil when dir is missing or empty (the run ingests into
// it); an error when dir holds something else than a complete eval data dir.
func readDataDir(dir string) (*dataManifest, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) || err == nil && len(entries) == 0 {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w %s: %w", errDataDir, dir, err)
	}
	b, err := os.ReadFile(filepath.Join(dir, dataManifestName))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w %s is not empty and holds no %s: an ingest that did not complete, or not an eval data dir; remove it or name an empty or missing dir",
			errDataDir, dir, dataManifestName)
	}
	if err != nil {
		return nil, fmt.Errorf("%w %s: %w", errDataDir, dir, err)
	}
	var m dataManifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%w %s: %s: %w", errDataDir, dir, dataManifestName, err)
	}
	return &m, nil
}

// mismatch says how the manifest differs from want in what the recall run depends on (model,
// checked once the embedder is loaded, when want.Model is set), or "" when it does not.
func (m *dataManifest) mismatch(want dataManifest) string {
	var diffs []string
	diff := func(what, had, have string) {
		if had != have {
			diffs = append(diffs, fmt.Sprintf("%s %s, this run %s", what, had, have))
		}
	}
	diff("eval", m.Eval, want.Eval)
	diff("data sha256", m.DataSHA256, want.DataSHA256)
	diff("conversations", fmt.Sprint(m.Conversations), fmt.Sprint(want.Conversations))
	diff("turns", fmt.Sprint(m.Turns), fmt.Sprint(want.Turns))
	diff("embedder", m.Embedder, want.Embedder)
	if want.Model != "" {
		diff("model", m.Model, want.Model)
	}
	return strings.Join(diffs, "; ")
}

// refuse is the error for a data dir whose manifest does not match this run.
func (m *dataManifest) refuse(dir, diffs string) error {
	return fmt.Errorf("%w %s was ingested from other inputs (%s; it holds %s ingested by %s): remove the dir to ingest again, or name another --data-dir",
		errDataDir, dir, diffs, m.Data, m.Version)
}

// writeDataManifest writes m into dir, through a temporary file so a manifest is whole or absent.
func writeDataManifest(dir string, m dataManifest) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, dataManifestName+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, dataManifestName))
}

// storedMessages is how many messages the store holds: the same before and after a run that
// reuses a data dir.
func storedMessages(ctx context.Context, env *app.Env) (int, error) {
	var n int
	err := env.Store.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM messages").Scan(&n)
	return n, err
}
