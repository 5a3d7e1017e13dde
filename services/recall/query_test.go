package recall

import (
	"context"
	"math"
	"slices"
	"sync"
	"testing"

	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/embed"
	"github.com/membus/membus/pkg/vector"
)

func TestNamesBlind(t *testing.T) {
	for _, tc := range []struct{ query, want string }{
		{"What books has Melanie read?", "What books has read?"},
		{"What did Caroline and Melanie's kids paint?", "What did and kids paint?"},
		{"When did Caroline go to the LGBTQ support group?", "When did go to the LGBTQ support group?"},
		{"Did I tell you about Paris in May?", "Did I tell you about in"},
		{"what does alice like", "what does alice like"},
		{"Melanie", "Melanie"},
		{"  Where   is  Jon's studio ", "Where is studio"},
		{"Wo wohnt Jürgen jetzt?", "Wo wohnt jetzt?"},
		{"", ""},
	} {
		if got := namesBlind(tc.query); got != tc.want {
			t.Errorf("namesBlind(%q) = %q, want %q", tc.query, got, tc.want)
		}
	}
}

func TestBlendQuery(t *testing.T) {
	q := []float32{1, 0, 0}
	b := []float32{0, 1, 0}
	for _, tc := range []struct {
		w    float64
		want []float32
	}{
		{0, []float32{1, 0, 0}},
		{1, []float32{float32(1 / math.Sqrt2), float32(1 / math.Sqrt2), 0}},
		{0.5, []float32{float32(1 / math.Sqrt(1.25)), float32(0.5 / math.Sqrt(1.25)), 0}},
	} {
		got := blendQuery(q, b, tc.w)
		for i := range got {
			if math.Abs(float64(got[i]-tc.want[i])) > 1e-6 {
				t.Errorf("w %v: blend %v, want %v", tc.w, got, tc.want)
				break
			}
		}
	}
	// Opposite vectors at w = 1 cancel: the query's own vector is kept, never a NaN.
	if got := blendQuery(q, []float32{-1, 0, 0}, 1); !slices.Equal(got, q) {
		t.Errorf("cancelled blend %v, want the query's own %v", got, q)
	}
}

// recordingEmbedder records the query batches it embeds.
type recordingEmbedder struct {
	embed.Embedder
	mu      sync.Mutex
	batches [][]string
}

func (r *recordingEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	r.mu.Lock()
	r.batches = append(r.batches, slices.Clone(texts))
	r.mu.Unlock()
	return r.Embedder.Embed(ctx, texts)
}

// recordingVectors records the vectors it is searched with.
type recordingVectors struct {
	vector.Store
	mu   sync.Mutex
	vecs [][]float32
}

func (r *recordingVectors) Search(ctx context.Context, f vector.Filter, v []float32, q string, k int) ([]vector.Hit, error) {
	r.mu.Lock()
	r.vecs = append(r.vecs, v)
	r.mu.Unlock()
	return r.Store.Search(ctx, f, v, q, k)
}

// TestRecallSearchesWithTheNamesBlindBlend: a query that names someone is embedded in one
// batch with its names-blind form, and every scope is searched with the blend of the two; a
// query without a name, or under dense-only fusion, is searched with its own vector.
func TestRecallSearchesWithTheNamesBlindBlend(t *testing.T) {
	e := newEnv(t, false)
	e.seed("acme", "alice", fact{text: "Alice read Dune last spring."})
	own := func(text string) []float32 {
		v, err := e.emb.Embed(e.ctx, []string{text})
		if err != nil {
			t.Fatal(err)
		}
		return v[0]
	}
	for _, tc := range []struct {
		name, query, fusion string
		batch               []string
		vec                 []float32
	}{
		{"names someone", "What books has Alice read?", contract.FusionWeighted,
			[]string{"What books has Alice read?", "What books has read?"},
			blendQuery(own("What books has Alice read?"), own("What books has read?"), blindQueryWeight)},
		{"names someone, rrf", "What books has Alice read?", contract.FusionRRF,
			[]string{"What books has Alice read?", "What books has read?"},
			blendQuery(own("What books has Alice read?"), own("What books has read?"), blindQueryWeight)},
		{"no name", "what books has she read", contract.FusionWeighted,
			[]string{"what books has she read"}, own("what books has she read")},
		{"dense only", "What books has Alice read?", contract.FusionDense,
			[]string{"What books has Alice read?"}, own("What books has Alice read?")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			emb := &recordingEmbedder{Embedder: e.emb}
			vecs := &recordingVectors{Store: e.vec}
			cfg := Defaults()
			cfg.Fusion = tc.fusion
			svc, err := New(cfg, Deps{NC: e.svc.d.NC, Names: e.names, Store: e.st, Embedder: emb, Vectors: vecs, Metrics: e.svc.d.Metrics})
			if err != nil {
				t.Fatal(err)
			}
			resp, err := svc.Recall(e.ctx, "acme", contract.RecallRequest{UserID: "alice", Query: tc.query})
			if err != nil || resp.Degraded || len(resp.Items) == 0 {
				t.Fatalf("resp %+v, err %v: want Alice's memory", resp, err)
			}
			if len(emb.batches) != 1 || !slices.Equal(emb.batches[0], tc.batch) {
				t.Errorf("embedded %q, want one batch %q", emb.batches, tc.batch)
			}
			if len(vecs.vecs) == 0 {
				t.Fatal("no search")
			}
			for _, v := range vecs.vecs {
				if !slices.Equal(v, tc.vec) {
					t.Errorf("searched with %v…, want %v…", v[:4], tc.vec[:4])
					break
				}
			}
		})
	}
}

// TestDenseAfterLift: every candidate gains denseAfterLift × its dense part, in its boost, so
// of two candidates the lift left level the one closer to the query ranks first.
func TestDenseAfterLift(t *testing.T) {
	cands := []candidate{
		{id: "lifted", parts: contract.ScoreParts{Dense: 0.2, Fused: 0.3, Boost: 0.4}, score: 0.7},
		{id: "close", parts: contract.ScoreParts{Dense: 0.6, Fused: 0.7}, score: 0.7},
	}
	addDenseAfterLift(cands)
	for _, c := range cands {
		if want := c.parts.Fused + c.parts.Boost; math.Abs(c.score-want) > 1e-12 {
			t.Errorf("%s: score %v, want fused + boost %v", c.id, c.score, want)
		}
	}
	if !(cands[1].score > cands[0].score) {
		t.Errorf("close %v, lifted %v: want the one closer to the query first", cands[1].score, cands[0].score)
	}
	if want := 0.7 + denseAfterLift*0.6; math.Abs(cands[1].score-want) > 1e-12 {
		t.Errorf("close: score %v, want %v", cands[1].score, want)
	}
}
