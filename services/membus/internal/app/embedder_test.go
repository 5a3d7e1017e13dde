package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/membus/membus/pkg/config"
	"github.com/membus/membus/pkg/embed"
	"github.com/membus/membus/pkg/embed/onnx"
	"github.com/membus/membus/pkg/store"
	"github.com/membus/membus/pkg/testenv"
	"github.com/membus/membus/pkg/vector"
)

const (
	miniLM    = "onnx:all-MiniLM-L6-v2-int8" // the default model before e5-small-v2-int8
	defaultM  = "onnx:" + onnx.DefaultModel
	repoRoot  = "../../../.."
	testMsgs  = 3 // messages of seedData's archive
	testCtxs  = 1 // speakers of seedData's archive: its session-context points
	testMems  = 2 // memories of seedData
	testUser  = "u1"
	testAcct  = "acme"
	testSess  = "s1"
	archiveID = "00000000-0000-0000-0000-000000000001"
)

// realModelDir returns a directory holding the real model id (e.g. "e5-small-v2-int8"): the
// one env names, else the repository's data/models-<id> (where .ci/run puts the models other
// than the default), else data/models when it holds that model (`make model`). Without it the
// test skips outside CI and fails in CI.
func realModelDir(t *testing.T, env, id string) string {
	t.Helper()
	dirs := []string{os.Getenv(env), filepath.Join(repoRoot, "data", "models-"+id), filepath.Join(repoRoot, "data", "models")}
	for _, d := range dirs {
		if m, _ := onnx.DirModel(d); d != "" && m == "onnx:"+id {
			return d
		}
	}
	why := fmt.Sprintf("no %s model in %s (or %s=DIR): `MEMBUS_MODEL_DIR=DIR make model MODEL=%s` runs this case", id, strings.Join(dirs[1:], " or "), env, id)
	if testenv.InCI() {
		t.Fatal(why)
	}
	t.Skip(why)
	return ""
}

// fakeModelDir is a model directory as scripts/model.sh lays it out, holding model id, whose
// files are placeholders: onnx.DirModel reads it, loading it would fail.
func fakeModelDir(t *testing.T, id string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range map[string]string{"model.onnx": "x", "vocab.txt": "x", "libonnxruntime.so": "x", "model_id": id + "\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// seedData writes into dataDir what membus leaves after a commit with embedder model: a
// session of testMsgs messages archived (state indexed), testMems memories whose stored
// embeddings are of model (vec's), and, with index, the local index built with model.
func seedData(t *testing.T, dataDir, model string, vec func(text string) []float32, index bool) []store.Memory {
	t.Helper()
	ctx := context.Background()
	st, err := store.OpenSQLite(ctx, filepath.Join(dataDir, "membus.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	texts := []string{"I adopted a puppy named Max.", "My sister moves to Seattle next week.", "We went hiking on Sunday."}
	var msgs []store.Message
	for i, text := range texts[:testMsgs] {
		msgs = append(msgs, store.Message{MessageID: fmt.Sprintf("m%d", i), Position: i, Role: "user", Content: text, Parts: json.RawMessage(`[]`),
			Tokens: len(text), CreatedAt: t0})
	}
	if _, err := st.ApplyTurns(ctx, nil, []store.Turn{{AccountID: testAcct, UserID: testUser, SessionID: testSess, EventID: "e1", StreamSeq: 1, Messages: msgs}}); err != nil {
		t.Fatal(err)
	}
	epoch, err := st.AcquireEpoch(ctx, testAcct, testSess)
	if err != nil {
		t.Fatal(err)
	}
	a := store.Archive{ID: archiveID, AccountID: testAcct, SessionID: testSess, UserID: testUser, FromSeq: 1, ToSeq: testMsgs, Kind: "compact", RequestID: "r1"}
	if err := st.CreateArchive(ctx, epoch, a, nil); err != nil {
		t.Fatal(err)
	}
	var mems []store.Memory
	for i, text := range []string{"The user adopted a puppy named Max.", "The user's sister moves to Seattle."}[:testMems] {
		mems = append(mems, store.Memory{ID: fmt.Sprintf("10000000-0000-0000-0000-%012d", i), AccountID: testAcct, UserID: testUser, Scope: "user",
			Category: "fact", Value: text, Abstract: text, Text: text, Sources: []store.Source{{SessionID: testSess, MessageID: fmt.Sprintf("m%d", i)}},
			ValidFrom: t0, ContentHash: fmt.Sprintf("h%d", i), Embedding: vec(text), EmbedModel: model})
	}
	if err := st.SaveMemories(ctx, epoch, a, mems, nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := st.AdvanceArchive(ctx, epoch, a, store.StateExtracted, store.StateIndexed, nil); err != nil {
		t.Fatal(err)
	}
	if index {
		v, err := vector.OpenLocal(filepath.Join(dataDir, "vectors"), model, 384)
		if err != nil {
			t.Fatal(err)
		}
		if err := v.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return mems
}

// fixedVec is a stand-in embedding of 384 dimensions (the data's claim of its model is what
// the cases test, not the vector).
func fixedVec(string) []float32 {
	v := make([]float32, 384)
	v[0] = 1
	return v
}

func testConfig(dataDir, embedder, modelDir string) config.Config {
	cfg := config.Defaults()
	cfg.DataDir, cfg.Embedder, cfg.ModelDir = dataDir, embedder, modelDir
	return cfg
}

// openVectorsIn runs openVectors on a data dir as a start does, and returns the embedder's model.
func openVectorsIn(t *testing.T, cfg config.Config) (string, error) {
	t.Helper()
	e := &Env{Config: cfg, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	t.Cleanup(e.Close)
	if err := e.openStore(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := e.openVectors(context.Background()); err != nil {
		return "", err
	}
	return e.Embedder.Model(), nil
}

// TestOpenVectorsKeepsTheDataModel is the upgrade path of a change of default model: a data
// dir embedded with all-MiniLM-L6-v2 (the default before e5-small-v2) keeps it under
// MEMBUS_EMBEDDER=auto while its files are in MEMBUS_MODEL_DIR; a new data dir takes the model
// `make model` fetches now; any other model is refused before it is loaded, with the command
// that keeps the data's model and the one that moves the data onto the other.
func TestOpenVectorsKeepsTheDataModel(t *testing.T) {
	tests := []struct {
		name     string
		data     string // the model the data was embedded with; "" for a new data dir
		index    bool   // the local index exists (else only SQL's memories name the model)
		embedder string
		modelDir func(t *testing.T) string
		want     string   // the embedder's model
		errHas   []string // else the refusal says all of these
	}{
		{"new data dir gets the default model", "", false, "auto",
			func(t *testing.T) string { return realModelDir(t, "MEMBUS_MODEL_DIR", onnx.DefaultModel) }, defaultM, nil},
		{"old data dir keeps all-MiniLM-L6-v2 while its files are there", miniLM, true, "auto",
			func(t *testing.T) string {
				return realModelDir(t, "MEMBUS_TEST_MINILM_MODEL_DIR", "all-MiniLM-L6-v2-int8")
			}, miniLM, nil},
		{"old data dir, the model dir holds the new default: keep it or reembed", miniLM, true, "auto",
			func(t *testing.T) string { return fakeModelDir(t, onnx.DefaultModel) }, "",
			[]string{"embedded with " + miniLM, "holds " + defaultM, "make model MODEL=all-MiniLM-L6-v2-int8", "membus reembed"}},
		{"old data known from SQL only (no index yet)", miniLM, false, "auto",
			func(t *testing.T) string { return fakeModelDir(t, onnx.DefaultModel) }, "",
			[]string{"embedded with " + miniLM, "make model MODEL=all-MiniLM-L6-v2-int8", "membus reembed"}},
		{"old data dir, no model at all: fetch the data's", miniLM, true, "auto",
			func(t *testing.T) string { return t.TempDir() }, "",
			[]string{"holds no model", "make model MODEL=all-MiniLM-L6-v2-int8"}},
		{"MEMBUS_EMBEDDER=onnx on old data: reembed, or auto to keep it", miniLM, true, "onnx",
			func(t *testing.T) string { return fakeModelDir(t, onnx.DefaultModel) }, "",
			[]string{"MEMBUS_EMBEDDER=onnx", "membus reembed", "MEMBUS_EMBEDDER=auto"}},
		{"hash data keeps hash under auto although a model is present", embed.HashModel, true, "auto",
			func(t *testing.T) string { return fakeModelDir(t, onnx.DefaultModel) }, embed.HashModel, nil},
		{"MEMBUS_EMBEDDER=onnx on hash data: reembed", embed.HashModel, true, "onnx",
			func(t *testing.T) string { return fakeModelDir(t, onnx.DefaultModel) }, "",
			[]string{"embedded with " + embed.HashModel, "membus reembed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			modelDir := tt.modelDir(t)
			dataDir := t.TempDir()
			if tt.data != "" {
				seedData(t, dataDir, tt.data, fixedVec, tt.index)
			}
			got, err := openVectorsIn(t, testConfig(dataDir, tt.embedder, modelDir))
			if tt.errHas == nil {
				if err != nil || got != tt.want {
					t.Fatalf("openVectors = %s, %v; want %s", got, err, tt.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("openVectors = %s, want a refusal", got)
			}
			t.Log(err)
			if !errors.Is(err, vector.ErrModelMismatch) {
				t.Errorf("err = %v, want ErrModelMismatch", err)
			}
			for _, s := range tt.errHas {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("err = %v\nwant it to say %q", err, s)
				}
			}
		})
	}
}

// TestReembed moves data onto another model: every memory's stored embedding is the new
// model's vector of its text, the local index is rebuilt with the new model (memories and
// archived messages), and the next start opens it with MEMBUS_EMBEDDER=auto.
func TestReembed(t *testing.T) {
	hashV1 := func(text string) []float32 {
		v, err := embed.NewHashV1().Embed(context.Background(), []string{text})
		if err != nil {
			t.Fatal(err)
		}
		return v[0]
	}
	tests := []struct {
		name     string
		data     string
		vec      func(string) []float32
		index    bool
		embedder string
		modelDir func(t *testing.T) string
		want     string
		again    int    // memories embedded again; -1: a refusal
		errHas   string // with again -1
	}{
		{"hash-v1 data onto hash-v2", embed.HashV1Model, hashV1, true, "hash", func(t *testing.T) string { return t.TempDir() }, embed.HashModel, testMems, ""},
		{"all-MiniLM-L6-v2 data onto the default model", miniLM, fixedVec, true, "auto",
			func(t *testing.T) string { return realModelDir(t, "MEMBUS_MODEL_DIR", onnx.DefaultModel) }, defaultM, testMems, ""},
		{"memories known from SQL only (no index)", miniLM, fixedVec, false, "hash", func(t *testing.T) string { return t.TempDir() }, embed.HashModel, testMems, ""},
		{"auto without a model to move onto is refused", miniLM, fixedVec, true, "auto", func(t *testing.T) string { return t.TempDir() }, "", -1, "holds none"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			dataDir := t.TempDir()
			mems := seedData(t, dataDir, tt.data, tt.vec, tt.index)
			cfg := testConfig(dataDir, tt.embedder, tt.modelDir(t))
			logger := slog.New(slog.NewTextHandler(io.Discard, nil))
			var progress []int
			res, err := Reembed(ctx, cfg, logger, func(done, _ int) { progress = append(progress, done) })
			if tt.again < 0 {
				if err == nil || !strings.Contains(err.Error(), tt.errHas) {
					t.Fatalf("Reembed = %+v, %v; want an error saying %q", res, err, tt.errHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Model != tt.want || res.Reembedded != tt.again || res.Points != testMems+testMsgs+testCtxs || len(progress) == 0 || progress[len(progress)-1] != tt.again {
				t.Fatalf("Reembed = %+v (progress %v); want %s, %d memories, %d points", res, progress, tt.want, tt.again, testMems+testMsgs+testCtxs)
			}
			if m, _, err := vector.LocalModel(filepath.Join(dataDir, "vectors")); err != nil || m != tt.want {
				t.Fatalf("the local index's model = %s, %v; want %s", m, err, tt.want)
			}
			// The next start follows the data onto the new model, and the stored embeddings are
			// that model's vectors of the memories' texts.
			e := &Env{Config: testConfig(dataDir, "auto", cfg.ModelDir), Logger: logger}
			t.Cleanup(e.Close)
			if err := e.openStore(ctx); err != nil {
				t.Fatal(err)
			}
			if err := e.openVectors(ctx); err != nil || e.Embedder.Model() != tt.want {
				t.Fatalf("after reembed, MEMBUS_EMBEDDER=auto opens %v, %v; want %s", e.Embedder, err, tt.want)
			}
			// One call, in id order, as Reembed's batch: an int8 model's activations are
			// quantised per batch, so a text's vector moves a little with its batch mates.
			texts := make([]string, len(mems))
			for i, m := range mems {
				texts[i] = m.Text
			}
			want, err := e.Embedder.Embed(ctx, texts)
			if err != nil {
				t.Fatal(err)
			}
			for i, m := range mems {
				got, err := e.Store.GetMemory(ctx, testAcct, testUser, m.ID)
				if err != nil {
					t.Fatal(err)
				}
				if c := embed.Cosine(got.Embedding, want[i]); got.EmbedModel != tt.want || c < 0.9999 {
					t.Errorf("memory %s: model %s, cosine to the new model's vector %.4f; want %s, 1", m.ID, got.EmbedModel, c, tt.want)
				}
			}
			// Run again: nothing left to do.
			again, err := Reembed(ctx, cfg, logger, nil)
			if err != nil || again.Reembedded != 0 || again.Points != -1 {
				t.Fatalf("Reembed again = %+v, %v; want nothing done", again, err)
			}
		})
	}
}

func TestReembedRefusesQdrant(t *testing.T) {
	cfg := testConfig(t.TempDir(), "hash", t.TempDir())
	cfg.QdrantURL = "http://127.0.0.1:1"
	if _, err := Reembed(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), nil); err == nil || !strings.Contains(err.Error(), "MEMBUS_QDRANT_URL") {
		t.Fatalf("Reembed with Qdrant = %v, want a refusal naming MEMBUS_QDRANT_URL", err)
	}
}
