package onnx

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// vectorTexts are embedded one at a time (EmbedQuery) and together (Embed, in batches
// of 3 so that batches mix lengths) for TestONNXVectorsUnchanged.
var vectorTexts = []string{
	"What did Caroline do at the LGBTQ support group?",
	"When did Melanie paint a sunrise?",
	"hi",
	"Café naïve résumé — don't!",
	"A considerably longer sentence about the weather in the mountains during the late autumn months of the year, when the first snow falls on the passes and the huts close.",
	"Jon lost his job as a banker and decided to open a dance studio.",
	"",
}

// vectorTolerance is how far a component may lie from the recorded one. ONNX Runtime picks its
// int8 kernels for the CPU it runs on, and they round differently: on an AMD EPYC with AVX2
// only, e5-small-v2's vector of the long text, one text per call, differs from the recorded
// one by up to 1.02e-4 (all-MiniLM-L6-v2's vectors by 7e-8), so the earlier 1e-4 failed there
// on every run.
const vectorTolerance = 1e-3

type recordedVectors struct {
	Model string      `json:"model"`
	Query [][]float32 `json:"query"` // EmbedQuery, one text per call
	Batch [][]float32 `json:"batch"` // Embed, all texts in one call
}

// TestONNXVectorsUnchanged: the vectors match those recorded in testdata (within
// vectorTolerance per component) for the model under test, one text per call and batched: a
// change to the run path (threads, tensors, pooling) must not change what the model returns.
// MEMBUS_RECORD_VECTORS=1 records them anew. The default model (e5-small-v2, an asymmetric
// one: its query side has a prompt) and all-MiniLM-L6-v2 (the default before it) are both
// checked.
func TestONNXVectorsUnchanged(t *testing.T) {
	for _, m := range []struct {
		name string
		open func(t *testing.T) *Embedder
	}{
		{"default", func(t *testing.T) *Embedder { return openModel(t, WithBatch(3)) }},
		{"all-MiniLM-L6-v2-int8", func(t *testing.T) *Embedder { return openMiniLM(t, WithBatch(3)) }},
	} {
		t.Run(m.name, func(t *testing.T) { checkRecordedVectors(t, m.open(t)) })
	}
}

func checkRecordedVectors(t *testing.T, e *Embedder) {
	ctx := context.Background()
	var got recordedVectors
	got.Model = e.Model()
	for _, s := range vectorTexts {
		v, err := e.EmbedQuery(ctx, []string{s})
		if err != nil {
			t.Fatal(err)
		}
		got.Query = append(got.Query, v[0])
	}
	b, err := e.Embed(ctx, vectorTexts)
	if err != nil {
		t.Fatal(err)
	}
	got.Batch = b
	path := filepath.Join("testdata", e.id+".vectors.json")
	if os.Getenv("MEMBUS_RECORD_VECTORS") != "" {
		out, err := json.Marshal(got)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, out, 0o600); err != nil {
			t.Fatal(err)
		}
		return
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var want recordedVectors
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		got, want [][]float32
	}{{"one text per call", got.Query, want.Query}, {"batched", got.Batch, want.Batch}} {
		if len(c.got) != len(c.want) {
			t.Fatalf("%s: %d vectors, recorded %d", c.name, len(c.got), len(c.want))
		}
		for i := range c.got {
			if len(c.got[i]) != len(c.want[i]) {
				t.Fatalf("%s %q: dim %d, recorded %d", c.name, vectorTexts[i], len(c.got[i]), len(c.want[i]))
			}
			for k := range c.got[i] {
				if d := math.Abs(float64(c.got[i][k] - c.want[i][k])); d > vectorTolerance {
					t.Errorf("%s %q dim %d = %.6f, recorded %.6f", c.name, vectorTexts[i], k, c.got[i][k], c.want[i][k])
					break
				}
			}
		}
	}
}
